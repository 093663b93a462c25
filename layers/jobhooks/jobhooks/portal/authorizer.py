"""The portal authorizer's decision: an HTTP API Lambda authorizer (REQUEST, payload 2.0,
simple responses, no caching), run by API Gateway before the API function sees a portal request.

- `POST /portal/session` must carry a genuine, unexpired, unrevoked **link** token in the
  `X-Jobhooks-Portal-Link` header (the page sends it from the URL's fragment);
- every `/portal/api/*` request must carry a genuine, unexpired, unrevoked **session** token in
  the `__Host-jobhooks-portal` cookie.

Allowed requests reach the API function with the verified claims in
`requestContext.authorizer.lambda` (`kind`, `tenant_id`, `token_id`, `expires_at`, `epoch`): the
one place portal handlers take the tenant from. Anything else is denied (API Gateway answers
403 without calling the function). A failure to decide (DynamoDB or Secrets Manager
unreachable) raises: API Gateway answers 500, and the caller may retry, rather than being told
its link is bad. Tokens are never logged: a denial logs its reason code only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from jobhooks.access.callers import (
    CONTEXT_EPOCH,
    CONTEXT_EXPIRES_AT,
    CONTEXT_KIND,
    CONTEXT_TENANT,
    CONTEXT_TOKEN_ID,
    PORTAL_SESSION_PATH,
    SESSION_COOKIE,
)
from jobhooks.access.exceptions import TokenError
from jobhooks.access.sessions import PortalSessions
from jobhooks.access.tokens import TokenKind

LINK_HEADER: Final = "x-jobhooks-portal-link"

logger = logging.getLogger(__name__)


def authorize(event: Mapping[str, Any], sessions: PortalSessions) -> dict[str, Any]:
    """The simple response for one request: `{"isAuthorized": bool, "context": {...}}`."""
    http = (event.get("requestContext") or {}).get("http") or {}
    is_exchange = http.get("path") == PORTAL_SESSION_PATH
    kind = TokenKind.LINK if is_exchange else TokenKind.SESSION
    token = _link_header(event) if is_exchange else _session_cookie(event)
    if token is None:
        return _deny(kind, "missing")
    try:
        claims = sessions.verify(token, kind)
    except TokenError as refused:
        return _deny(kind, refused.reason)
    return {
        "isAuthorized": True,
        "context": {
            CONTEXT_KIND: claims.kind.value,
            CONTEXT_TENANT: claims.tenant_id,
            CONTEXT_TOKEN_ID: claims.token_id,
            CONTEXT_EXPIRES_AT: claims.expires_at,
            CONTEXT_EPOCH: claims.epoch,
        },
    }


def _deny(kind: TokenKind, reason: str) -> dict[str, Any]:
    logger.info("portal request denied", extra={"token_kind": kind.value, "reason": reason})
    return {"isAuthorized": False}


def _link_header(event: Mapping[str, Any]) -> str | None:
    headers = event.get("headers") or {}
    values = [value for name, value in headers.items() if str(name).lower() == LINK_HEADER]
    # API Gateway joins a repeated header with commas, which no token contains.
    if len(values) != 1 or not isinstance(values[0], str) or "," in values[0]:
        return None
    return values[0].strip() or None


def _session_cookie(event: Mapping[str, Any]) -> str | None:
    found = [
        value
        for name, _, value in (str(cookie).partition("=") for cookie in event.get("cookies") or [])
        if name.strip() == SESSION_COOKIE
    ]
    # Two cookies of this name are never set by the portal: refuse rather than pick one.
    return found[0].strip() if len(found) == 1 and found[0].strip() else None
