"""Who is calling, and what they may touch: the tenant-scope policy of the management API and
the portal.

Three kinds of callers reach them, each identified only by what API Gateway put in the request
context after verifying it, never by anything the request says about itself:

- a **tenant-bound** IAM caller: one that matches a grant (`jobhooks.access.grants`). It acts
  for the grant's tenants only; anything of another tenant is "not found" (its existence is
  never revealed), and operator routes (quarantine, dead-letter queues, grants, portal links)
  answer 403;
- an **operator**: an IAM caller (`requestContext.authorizer.iam`) that matches no grant but one
  of the deployment's operator patterns (`OperatorPrincipals`). It may act on any tenant. Any
  other IAM caller is refused (403 `not_authorized`): access fails closed;
- a **portal session**: a browser holding a session cookie that the portal authorizer verified
  (`requestContext.authorizer.lambda`). It acts for the one tenant of its session.

`gate_iam_request` is the management API function's first check, before any routing: a request
without an IAM identity is refused there; the portal function's gate (`jobhooks.portal.gate`)
refuses a portal API request without the authorizer's verdict (defence in depth: API Gateway
already refuses both).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from jobhooks.access.exceptions import (
    IamIdentityRequiredError,
    NotAuthorizedError,
    OperatorOnlyError,
    PortalError,
    SessionRequiredError,
    TenantNotFoundError,
    TenantRequiredError,
)
from jobhooks.access.grants import is_operator, tenants_of

if TYPE_CHECKING:
    from jobhooks.access.access_store import StoredGrant

PORTAL_SESSION_PATH: Final = "/portal/session"
# The session cookie: `__Host-` binds it to this host, path /, Secure (docs/portal.md).
SESSION_COOKIE: Final = "__Host-jobhooks-portal"
# The keys of the portal authorizer's context (functions/authorizer, `jobhooks.portal.authorizer`).
CONTEXT_KIND: Final = "kind"
CONTEXT_TENANT: Final = "tenant_id"
CONTEXT_TOKEN_ID: Final = "token_id"  # noqa: S105 - a key name, not a token
CONTEXT_EXPIRES_AT: Final = "expires_at"
CONTEXT_EPOCH: Final = "epoch"


class CallerKind(StrEnum):
    OPERATOR = "operator"
    TENANT_BOUND = "tenant_bound"
    PORTAL = "portal"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a request comes from: an operator, a tenant-bound IAM caller or a portal session."""

    kind: CallerKind
    principal: str
    """The IAM ARN, or `portal:<session id>`."""
    tenants: frozenset[str] = frozenset()
    """The tenants a bound caller may act for (empty for an operator: any)."""

    @property
    def is_operator(self) -> bool:
        return self.kind is CallerKind.OPERATOR

    def require_operator(self, what: str) -> None:
        if not self.is_operator:
            raise OperatorOnlyError(what)

    def may_act_for(self, tenant_id: str | None) -> bool:
        return self.is_operator or (tenant_id is not None and tenant_id in self.tenants)

    def scope(self, requested: str | None) -> str | None:
        """The tenant filter of a request: operators get what they asked for (None: any tenant);
        a bound caller gets the tenant it named if it is one of its own (else "not found"), or
        its one tenant; None only for a caller bound to several that named none (the caller
        then checks each object with `may_act_for`)."""
        if self.is_operator:
            return requested
        if requested is not None:
            if requested not in self.tenants:
                raise TenantNotFoundError()
            return requested
        return next(iter(self.tenants)) if len(self.tenants) == 1 else None

    def tenant_for(self, requested: str | None) -> str:
        """The one tenant a create or a tenant listing acts on."""
        scoped = self.scope(requested)
        if scoped is not None:
            return scoped
        if self.is_operator:
            raise TenantRequiredError("tenant_id: give the tenant to act on")
        raise TenantRequiredError(
            "tenant_id: this caller may act for several tenants; name one of them"
        )


@dataclass(frozen=True, slots=True)
class PortalPass:
    """What the portal authorizer verified, from the request context (never from the request)."""

    kind: str  # "session" or "link"
    tenant_id: str
    token_id: str
    expires_at: int
    epoch: int


def iam_principal(event: Mapping[str, Any]) -> str | None:
    """The IAM caller's ARN API Gateway verified, if the request was IAM-authorized."""
    iam = _authorizer(event).get("iam")
    if not isinstance(iam, Mapping):
        return None
    arn = iam.get("userArn")
    return arn if isinstance(arn, str) and arn else None


def portal_pass(event: Mapping[str, Any], kind: str) -> PortalPass:
    """The portal authorizer's verdict of `kind`; `SessionRequiredError` without one."""
    context = _authorizer(event).get("lambda")
    if not isinstance(context, Mapping) or context.get(CONTEXT_KIND) != kind:
        raise SessionRequiredError()
    try:
        verdict = PortalPass(
            kind=kind,
            tenant_id=str(context[CONTEXT_TENANT]),
            token_id=str(context[CONTEXT_TOKEN_ID]),
            expires_at=int(context[CONTEXT_EXPIRES_AT]),
            epoch=int(context[CONTEXT_EPOCH]),
        )
    except (KeyError, TypeError, ValueError):
        raise SessionRequiredError() from None
    if not verdict.tenant_id or not verdict.token_id:
        raise SessionRequiredError()
    return verdict


def iam_caller(
    principal: str, grants: Sequence[StoredGrant], operator_patterns: Sequence[str]
) -> Caller:
    """Who `principal` is: bound by the grants it matches, else an operator if an operator
    pattern names it; `NotAuthorizedError` for anyone else."""
    bound_tenants = tenants_of(principal, grants)
    if bound_tenants:
        return Caller(CallerKind.TENANT_BOUND, principal, bound_tenants)
    if is_operator(principal, operator_patterns):
        return Caller(CallerKind.OPERATOR, principal)
    raise NotAuthorizedError()


def gate_iam_request(event: Mapping[str, Any]) -> PortalError | None:
    """The refusal of a management API request that reached the function without an IAM
    caller (API Gateway checks first; this holds if a route is ever misconfigured). Every
    route of that function, unknown ones included, needs one."""
    return IamIdentityRequiredError() if iam_principal(event) is None else None


def _authorizer(event: Mapping[str, Any]) -> Mapping[str, Any]:
    context = event.get("requestContext")
    authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
    return authorizer if isinstance(authorizer, Mapping) else {}
