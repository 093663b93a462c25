"""Errors of the portal and of tenant-bound access.

Each class carries a stable `code`, the HTTP `status` the API answers with and the request
`field` at fault (class attributes, as every `JobhooksError` does), and a message that says what
to do. None ever carries a token, a cookie or any part of one: a message names what was wrong
with a link, never the link.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import ClassVar

from jobhooks.exceptions import ConfigurationError, JobhooksError


class PortalError(JobhooksError):
    code = "portal_error"


# -- tokens (links and sessions) -----------------------------------------------------------------


class TokenError(PortalError):
    """A link or session token that must not open anything; `reason` is safe to log."""

    status = HTTPStatus.UNAUTHORIZED
    reason: ClassVar[str] = "invalid"


class InvalidTokenError(TokenError):
    code = "invalid_link"
    reason = "invalid"

    def __init__(self) -> None:
        super().__init__(
            "this portal link is not valid (it was changed, cut short, or made for another "
            "deployment); ask your operator for a new link"
        )


class TokenExpiredError(TokenError):
    code = "link_expired"
    reason = "expired"

    def __init__(self) -> None:
        super().__init__(
            "this portal link or session has expired; ask your operator for a new link"
        )


class TokenRevokedError(TokenError):
    code = "link_revoked"
    reason = "revoked"

    def __init__(self) -> None:
        super().__init__(
            "this portal link or session was revoked by an operator; ask them for a new link"
        )


class LinkAlreadyUsedError(PortalError):
    code = "link_used"
    status = HTTPStatus.GONE

    def __init__(self) -> None:
        super().__init__(
            "this portal link was already opened: a link opens the portal once; ask your "
            "operator for a new one"
        )


class SessionRequiredError(PortalError):
    """A portal API request without a verified session (the authorizer did not run)."""

    code = "session_required"
    status = HTTPStatus.UNAUTHORIZED

    def __init__(self) -> None:
        super().__init__("this portal request carries no valid session; open a new portal link")


class PortalHeaderRequiredError(PortalError):
    """A portal write without the header only the portal's own page sends (CSRF defence)."""

    code = "portal_header_required"
    status = HTTPStatus.FORBIDDEN

    def __init__(self, header: str) -> None:
        super().__init__(f"portal changes must be sent by the portal page (header {header})")


# -- callers -------------------------------------------------------------------------------------


class IamIdentityRequiredError(PortalError):
    """A /v1 request that reached the function without an IAM caller (defence in depth)."""

    code = "iam_identity_required"
    status = HTTPStatus.FORBIDDEN

    def __init__(self) -> None:
        super().__init__(
            "the management API answers IAM callers only: sign the request with AWS Signature "
            "Version 4 (the jobhooks CLI does)"
        )


class NotAuthorizedError(PortalError):
    """An IAM caller that matches no grant and no operator pattern: access fails closed."""

    code = "not_authorized"
    status = HTTPStatus.FORBIDDEN

    def __init__(self) -> None:
        super().__init__(
            "this IAM identity is neither an operator of this deployment nor bound to a tenant "
            "by a grant; ask an operator for a grant (`jobhooks grants add`), or to add it to the "
            "stack's OperatorPrincipals"
        )


class OperatorOnlyError(PortalError):
    code = "operator_only"
    status = HTTPStatus.FORBIDDEN

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what} is for operators only; this caller is bound to tenants by a grant "
            "(`jobhooks grants list` shows which)"
        )


class TenantRequiredError(PortalError):
    code = "tenant_required"
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    field = "tenant_id"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)


class TenantNotFoundError(PortalError):
    """Another tenant's data asked for by a tenant-bound caller: answered as not found."""

    code = "not_found"
    status = HTTPStatus.NOT_FOUND

    def __init__(self) -> None:
        super().__init__("no such resource for the tenants this caller may act for")


# -- grants --------------------------------------------------------------------------------------


class InvalidGrantError(PortalError):
    code = "invalid_grant"
    status = HTTPStatus.UNPROCESSABLE_ENTITY


class InvalidPrincipalPatternError(InvalidGrantError):
    code = "invalid_principal_pattern"
    field = "principal_pattern"


class InvalidGrantTenantsError(InvalidGrantError):
    code = "invalid_grant_tenants"
    field = "tenants"


class GrantBindsCallerError(PortalError):
    """An operator adding a grant that would bind themselves: they could not remove it."""

    code = "grant_binds_caller"
    status = HTTPStatus.CONFLICT
    field = "principal_pattern"

    def __init__(self) -> None:
        super().__init__(
            "this pattern matches your own identity: once added you would be tenant-bound and "
            "could no longer manage grants; add it as another operator, or narrow the pattern"
        )


class GrantNotFoundError(PortalError):
    code = "grant_not_found"
    status = HTTPStatus.NOT_FOUND

    def __init__(self, grant_id: str) -> None:
        super().__init__(f"no grant {grant_id!r}; `jobhooks grants list` shows the grants")
        self.grant_id = grant_id


class TooManyGrantsError(PortalError):
    code = "too_many_grants"
    status = HTTPStatus.CONFLICT

    def __init__(self, limit: int) -> None:
        super().__init__(f"at most {limit} grants are kept; remove unused ones first")


# -- configuration -------------------------------------------------------------------------------


class PortalNotConfiguredError(PortalError):
    code = "portal_not_configured"
    status = HTTPStatus.SERVICE_UNAVAILABLE

    def __init__(self, missing: str) -> None:
        super().__init__(
            f"the portal is not configured on this API ({missing} is not set); deploy the "
            "stack's template.yaml, which sets it"
        )


class PortalKeyError(PortalError):
    code = "portal_key_unavailable"
    status = HTTPStatus.SERVICE_UNAVAILABLE

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"the portal's token key cannot be used ({reason}); check the PortalTokenKey "
            "secret of the stack (docs/portal.md)"
        )


class InvalidSessionIdError(PortalError):
    code = "invalid_session_id"
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    field = "session_id"

    def __init__(self) -> None:
        super().__init__(
            "a session id is ses_ and 32 hex digits, as the API access log's portalSession shows"
        )


class PortalSettingsError(ConfigurationError):
    """A JOBHOOKS_PORTAL_* variable is invalid (the message names it)."""
