"""What every route is given: the management context of this configuration.

The settings are read per request (cheaply: the context is cached per configuration), so one
API module serves `jobhooks dev` and tests that re-provision the stack in the same process.
Tests hand the API a context of their own through the resolver's `dependency_overrides`, keyed
by `management_context`; nothing is patched.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.depends import Depends

from jobhooks.management.context import ManagementContext, get_management_context
from jobhooks.management.exceptions import ManagementMisconfiguredError
from jobhooks.management.settings import ManagementSettings
from jobhooks.settings import ConfigurationError


def management_context() -> ManagementContext:
    """The stores and clients of this configuration."""
    try:
        settings = ManagementSettings.from_env()
    except ConfigurationError as error:
        raise ManagementMisconfiguredError(error.message) from None
    return get_management_context(settings)


Context = Annotated[ManagementContext, Depends(management_context)]
