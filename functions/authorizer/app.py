"""Portal authorizer function: an HTTP API Lambda authorizer in front of the portal's API.

Wiring only; the decision is `jobhooks.portal.authorizer.authorize` (docs/portal.md, "Security
model"). It runs before every portal request, so it imports nothing it does not use (no
pydantic, no Event Handler), and builds its clients on the first request. The event is never
logged: it carries the session cookie or the link token.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.utilities.typing import LambdaContext
from jobhooks.access.context import get_portal_context
from jobhooks.access.settings import PortalSettings
from jobhooks.portal.authorizer import authorize

logger = Logger()
copy_config_to_registered_loggers(source_logger=logger, include={"jobhooks"})
# At import, so a bad JOBHOOKS_* variable fails the cold start with its name in the message.
PortalSettings.from_env().require_configured()


@logger.inject_lambda_context(log_event=False, clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Read per request (a few dictionary lookups; the context is cached per configuration), so
    # `jobhooks dev` and tests that provision the stack anew get clients and keys of their own.
    return authorize(event, get_portal_context(PortalSettings.from_env()).sessions)
