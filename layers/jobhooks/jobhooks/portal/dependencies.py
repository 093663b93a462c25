"""What the portal's routes are given per request, through the Event Handler's `Depends`.

- `management_context` (`jobhooks.management.context`): the stores and clients of this
  configuration, which the operations the /v1 routes call work on too; read per request and
  cached per configuration;
- `portal_context`: the access store (send counts) and the portal sessions;
- `portal_session`: the verified session of a portal API request, from the authorizer's
  context; its writes must carry the portal's own header (`X-Jobhooks-Portal`), which a page of
  another site cannot send without a CORS preflight this API never grants; `link_pass` is the
  verified one-time link of the session exchange;
- `send_budget`: the tenant's replays and test sends this minute (`SendBudget.take`), the same
  budget its /v1 callers draw on;
- `analytics_engine`: the job-health chart's query engine (Athena on AWS, DuckDB on `jobhooks
  dev`), None without an analytics table; `pseudonymizer`: the table's id pseudonyms.

Tests replace the contexts with the resolver's `dependency_overrides`, keyed by these
functions; nothing is patched.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Final

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.request import Request

from jobhooks.access.callers import PortalPass, portal_pass
from jobhooks.access.exceptions import PortalHeaderRequiredError
from jobhooks.management.context import ManagementContext, management_context
from jobhooks.management.send_budget import SendBudget
from jobhooks.portal.models import PORTAL_HEADER

_SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})


def portal_context() -> Any:
    """The portal's context (`jobhooks.access.context.PortalContext`): the access store and the
    sessions. Imported on first use: the page and its assets never need it."""
    from jobhooks.access.context import get_portal_context
    from jobhooks.access.settings import PortalSettings

    return get_portal_context(PortalSettings.from_env())


Context = Annotated[ManagementContext, Depends(management_context)]
Portal = Annotated[Any, Depends(portal_context)]


def portal_session(request: Request) -> PortalPass:
    verdict = portal_pass(request.resolved_event.raw_event, "session")
    if request.method.upper() not in _SAFE_METHODS and not _has_portal_header(request):
        raise PortalHeaderRequiredError(PORTAL_HEADER)
    return verdict


Session = Annotated[PortalPass, Depends(portal_session)]


def link_pass(request: Request) -> PortalPass:
    return portal_pass(request.resolved_event.raw_event, "link")


Link = Annotated[PortalPass, Depends(link_pass)]


def send_budget(context: Context, portal: Portal) -> SendBudget:
    return SendBudget(portal.store, context.settings.tenant_sends_per_minute)


Sends = Annotated[SendBudget, Depends(send_budget)]


def analytics_engine() -> Any:
    """The analytics engine of this configuration (a `QueryEngine`), or None when this
    deployment keeps no analytics table: the portal then says so instead of failing."""
    from jobhooks.analytics.engine import query_engine_for
    from jobhooks.analytics.settings import AnalyticsQuerySettings

    settings = AnalyticsQuerySettings.from_env()
    if not (settings.analytics_workgroup or settings.analytics_dir):
        return None
    return query_engine_for(settings)


def pseudonymizer() -> Any:
    from jobhooks.analytics.settings import AnalyticsSinkSettings

    return _pseudonymizer(AnalyticsSinkSettings.from_env())


@functools.lru_cache(maxsize=2)
def _pseudonymizer(settings: Any) -> Any:
    # One per configuration: the secret-backed one caches its key.
    return settings.pseudonymizer()


AnalyticsEngine = Annotated[Any, Depends(analytics_engine)]
Pseudonyms = Annotated[Any, Depends(pseudonymizer)]


def _has_portal_header(request: Request) -> bool:
    wanted = PORTAL_HEADER.lower()
    return any(name.lower() == wanted and value for name, value in request.headers.items())
