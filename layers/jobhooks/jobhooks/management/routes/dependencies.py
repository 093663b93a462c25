"""What the routes are given per request, through the Event Handler's `Depends`.

- `management_context`: the stores and clients of this configuration. The settings are read
  per request (cheaply: the context is cached per configuration), so one API module serves
  `jobhooks dev` and tests that re-provision the stack in the same process;
- `portal_context`: the access store and the portal sessions;
- `caller`: who is calling (`jobhooks.portal.callers`): an operator or a tenant-bound IAM
  caller, told apart by the grants; `operator` is the same for routes only operators may use;
- `portal_session`: the verified session of a portal API request, from the authorizer's
  context; its writes must carry the portal's own header (`X-Jobhooks-Portal`), which a page of
  another site cannot send without a CORS preflight this API never grants.
- `analytics_engine`: the analytics query engine (Athena on AWS, DuckDB on `jobhooks dev`),
  built with the first analytics request; `portal_analytics_engine` is the same for the
  portal's chart (None without an analytics table), `pseudonymizer` the table's id pseudonyms.

Tests replace the contexts and the engine with the resolver's `dependency_overrides`, keyed by
these functions; nothing is patched.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Final

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.request import Request

from jobhooks.management.context import ManagementContext, get_management_context
from jobhooks.management.exceptions import ManagementMisconfiguredError
from jobhooks.management.settings import ManagementSettings
from jobhooks.portal.callers import (
    Caller,
    PortalPass,
    iam_caller,
    iam_principal,
    portal_pass,
)
from jobhooks.portal.exceptions import IamIdentityRequiredError, PortalHeaderRequiredError
from jobhooks.portal.grants import tenants_of
from jobhooks.portal.models import PORTAL_HEADER
from jobhooks.settings import ConfigurationError

_SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


def management_context() -> ManagementContext:
    """The stores and clients of this configuration."""
    try:
        settings = ManagementSettings.from_env()
    except ConfigurationError as error:
        raise ManagementMisconfiguredError(error.message) from None
    return get_management_context(settings)


def portal_context() -> Any:
    """The portal's context (`jobhooks.portal.context.PortalContext`): the access store and the
    sessions. Imported on first use, so the API's cold start does not pay for the token and key
    machinery before a request needs it."""
    from jobhooks.portal.context import get_portal_context
    from jobhooks.portal.settings import PortalSettings

    return get_portal_context(PortalSettings.from_env())


Context = Annotated[ManagementContext, Depends(management_context)]
Portal = Annotated[Any, Depends(portal_context)]


def caller(request: Request, portal: Portal) -> Caller:
    principal = iam_principal(request.resolved_event.raw_event)
    if principal is None:
        raise IamIdentityRequiredError()
    return iam_caller(principal, tenants_of(principal, portal.store.list_grants()))


CallerOf = Annotated[Caller, Depends(caller)]


def operator(caller: CallerOf, request: Request) -> Caller:
    caller.require_operator(f"{request.method} {request.route}")
    return caller


Operator = Annotated[Caller, Depends(operator)]


def portal_session(request: Request) -> PortalPass:
    verdict = portal_pass(request.resolved_event.raw_event, "session")
    if request.method.upper() not in _SAFE_METHODS and not _has_portal_header(request):
        raise PortalHeaderRequiredError(PORTAL_HEADER)
    return verdict


Session = Annotated[PortalPass, Depends(portal_session)]


def link_pass(request: Request) -> PortalPass:
    return portal_pass(request.resolved_event.raw_event, "link")


Link = Annotated[PortalPass, Depends(link_pass)]


def analytics_engine() -> Any:
    """The engine of this configuration (a `jobhooks.analytics.results.QueryEngine`): Athena on
    AWS, DuckDB on `jobhooks dev`. Built on the first analytics request, once per configuration.
    """
    from jobhooks.analytics.settings import AnalyticsQuerySettings

    return _engine_for(AnalyticsQuerySettings.from_env())


@functools.lru_cache(maxsize=4)
def _engine_for(settings: Any) -> Any:
    from jobhooks.analytics.engine import build_query_engine

    return build_query_engine(settings)


def portal_analytics_engine() -> Any:
    """The analytics engine (`analytics_engine`), or None when this deployment keeps no
    analytics table: the portal then says so instead of failing."""
    from jobhooks.analytics.settings import AnalyticsQuerySettings

    settings = AnalyticsQuerySettings.from_env()
    if not (settings.analytics_workgroup or settings.analytics_dir):
        return None
    return analytics_engine()


def pseudonymizer() -> Any:
    from jobhooks.analytics.settings import AnalyticsSinkSettings

    return _pseudonymizer(AnalyticsSinkSettings.from_env())


@functools.lru_cache(maxsize=2)
def _pseudonymizer(settings: Any) -> Any:
    # One per configuration: the secret-backed one caches its key.
    return settings.pseudonymizer()


AnalyticsEngine = Annotated[Any, Depends(portal_analytics_engine)]
Pseudonyms = Annotated[Any, Depends(pseudonymizer)]


def _has_portal_header(request: Request) -> bool:
    wanted = PORTAL_HEADER.lower()
    return any(name.lower() == wanted and value for name, value in request.headers.items())
