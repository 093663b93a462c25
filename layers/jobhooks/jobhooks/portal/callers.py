"""Who is calling, and what they may touch: the tenant-scope policy of the management API.

Three kinds of callers reach the API function, each identified only by what API Gateway put in
the request context after verifying it, never by anything the request says about itself:

- an **operator**: an IAM caller (`requestContext.authorizer.iam`) that matches no grant. It
  may act on any tenant, as every IAM caller could before grants existed;
- a **tenant-bound** IAM caller: one that matches a grant (`jobhooks.portal.grants`). It acts
  for the grant's tenants only; anything of another tenant is "not found" (its existence is
  never revealed), and operator routes (quarantine, dead-letter queues, grants, portal links)
  answer 403;
- a **portal session**: a browser holding a session cookie that the portal authorizer verified
  (`requestContext.authorizer.lambda`). It acts for the one tenant of its session.

`gate_request` is the API function's first check, before any routing: a `/v1` request without
an IAM identity, or a portal API request without the authorizer's verdict, is refused there
(defence in depth: API Gateway already refuses both).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from jobhooks.portal.exceptions import (
    IamIdentityRequiredError,
    OperatorOnlyError,
    PortalError,
    SessionRequiredError,
    TenantNotFoundError,
    TenantRequiredError,
)

PUBLIC_PATHS: Final = frozenset({"/portal", "/portal/"})
PORTAL_ASSETS_PREFIX: Final = "/portal/assets/"
PORTAL_API_PREFIX: Final = "/portal/api/"
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


def iam_caller(principal: str, bound_tenants: frozenset[str]) -> Caller:
    if bound_tenants:
        return Caller(CallerKind.TENANT_BOUND, principal, bound_tenants)
    return Caller(CallerKind.OPERATOR, principal)


def gate_request(event: Mapping[str, Any]) -> PortalError | None:
    """The refusal of a request that reached the function without the identity its route
    needs (API Gateway checks first; this holds if a route is ever misconfigured).

    Only the portal's page and assets are public; the portal API needs the authorizer's
    verdict; every other path, unknown ones included, needs an IAM caller.
    """
    http = (event.get("requestContext") or {}).get("http") or {}
    path = str(http.get("path") or event.get("rawPath") or "")
    if path in PUBLIC_PATHS or path.startswith(PORTAL_ASSETS_PREFIX):
        return None
    if path.startswith(PORTAL_API_PREFIX) or path == PORTAL_SESSION_PATH:
        try:
            portal_pass(event, "session" if path != PORTAL_SESSION_PATH else "link")
        except SessionRequiredError as error:
            return error
        return None
    if iam_principal(event) is None:
        return IamIdentityRequiredError()
    return None


def _authorizer(event: Mapping[str, Any]) -> Mapping[str, Any]:
    context = event.get("requestContext")
    authorizer = context.get("authorizer") if isinstance(context, Mapping) else None
    return authorizer if isinstance(authorizer, Mapping) else {}
