"""What the routes are given per request, through the Event Handler's `Depends`.

- `management_context`: the stores and clients of this configuration. The settings are read
  per request (cheaply: the context is cached per configuration), so one API module serves
  `jobhooks dev` and tests that re-provision the stack in the same process;
- `portal_context`: the access store (grants, send counts) and the portal sessions (links);
- `caller`: who is calling (`jobhooks.access.callers`): a tenant-bound IAM caller (it matches a
  grant) or an operator (it matches one of `operator_patterns`, the deployment's
  `JOBHOOKS_OPERATOR_PRINCIPALS`); anyone else is refused; `operator` is the same for routes
  only operators may use;
- `send_budget`: the tenant's replays and test sends this minute (`SendBudget.take`);
- `analytics_engine`: the analytics query engine (Athena on AWS, DuckDB on `jobhooks dev`),
  built with the first analytics request.

Tests replace the contexts and the engine with the resolver's `dependency_overrides`, keyed by
these functions; nothing is patched.
"""

from __future__ import annotations

import functools
import os
from typing import Annotated, Any, Final

from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.request import Request

from jobhooks.access.callers import Caller, iam_caller, iam_principal
from jobhooks.access.exceptions import IamIdentityRequiredError, InvalidPrincipalPatternError
from jobhooks.access.grants import parse_operator_principals
from jobhooks.management.context import ManagementContext, management_context
from jobhooks.management.exceptions import ManagementMisconfiguredError
from jobhooks.management.send_budget import SendBudget

OPERATOR_PRINCIPALS_VARIABLE: Final = "JOBHOOKS_OPERATOR_PRINCIPALS"


def portal_context() -> Any:
    """The portal's context (`jobhooks.access.context.PortalContext`): the access store and the
    sessions. Imported on first use, so the API's cold start does not pay for the token and key
    machinery before a request needs it."""
    from jobhooks.access.context import get_portal_context
    from jobhooks.access.settings import PortalSettings

    return get_portal_context(PortalSettings.from_env())


def operator_patterns() -> tuple[str, ...]:
    """The deployment's operator patterns (template parameter `OperatorPrincipals`); none when
    the variable is unset, so that every caller without a grant is refused."""
    return _operator_patterns(os.environ.get(OPERATOR_PRINCIPALS_VARIABLE, ""))


@functools.lru_cache(maxsize=4)
def _operator_patterns(text: str) -> tuple[str, ...]:
    try:
        return parse_operator_principals(text)
    except InvalidPrincipalPatternError as error:
        raise ManagementMisconfiguredError(
            f"{OPERATOR_PRINCIPALS_VARIABLE}: {error.message}"
        ) from None


Context = Annotated[ManagementContext, Depends(management_context)]
Portal = Annotated[Any, Depends(portal_context)]
OperatorPatterns = Annotated[tuple[str, ...], Depends(operator_patterns)]


def caller(request: Request, portal: Portal, operators: OperatorPatterns) -> Caller:
    principal = iam_principal(request.resolved_event.raw_event)
    if principal is None:
        raise IamIdentityRequiredError()
    return iam_caller(principal, portal.store.list_grants(), operators)


CallerOf = Annotated[Caller, Depends(caller)]


def operator(caller: CallerOf, request: Request) -> Caller:
    caller.require_operator(f"{request.method} {request.route}")
    return caller


Operator = Annotated[Caller, Depends(operator)]


def send_budget(context: Context, portal: Portal) -> SendBudget:
    return SendBudget(portal.store, context.settings.tenant_sends_per_minute)


Sends = Annotated[SendBudget, Depends(send_budget)]


def analytics_engine() -> Any:
    """The engine of this configuration (a `jobhooks.analytics.results.QueryEngine`): Athena on
    AWS, DuckDB on `jobhooks dev`. Built on the first analytics request, once per configuration.
    """
    from jobhooks.analytics.engine import query_engine_for
    from jobhooks.analytics.settings import AnalyticsQuerySettings

    return query_engine_for(AnalyticsQuerySettings.from_env())
