"""The portal function's first check, before any routing: the identity each of its paths needs.

Only the page and its assets are public; the link-for-session exchange needs the authorizer's
verdict on a one-time link, and every other path (the portal's API, unknown ones included) its
verdict on a session. API Gateway's routes already demand as much (template.yaml's
PortalFunction); this holds if a route is ever misconfigured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from jobhooks.access.callers import PORTAL_SESSION_PATH, portal_pass
from jobhooks.access.exceptions import PortalError, SessionRequiredError

PUBLIC_PATHS: Final = frozenset({"/portal", "/portal/"})
PORTAL_ASSETS_PREFIX: Final = "/portal/assets/"


def gate_portal_request(event: Mapping[str, Any]) -> PortalError | None:
    """The refusal of a request without the identity its path needs; None when it may pass."""
    http = (event.get("requestContext") or {}).get("http") or {}
    path = str(http.get("path") or event.get("rawPath") or "")
    if path in PUBLIC_PATHS or path.startswith(PORTAL_ASSETS_PREFIX):
        return None
    try:
        portal_pass(event, "link" if path == PORTAL_SESSION_PATH else "session")
    except SessionRequiredError as error:
        return error
    return None
