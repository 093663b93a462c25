"""The portal's page and assets (package data in `assets/`), and the headers every portal
answer carries.

The portal is one static page and a few ES modules, committed as they are served (no build
step, nothing fetched from elsewhere at run time). They hold no data: `GET /portal` and
`GET /portal/assets/*` are public, and everything the page shows comes from the session-guarded
portal API.

Headers (`portal_headers`): a strict Content-Security-Policy (scripts, styles and connections
to this origin only; no inline script or style; no framing; no form posts elsewhere),
`Referrer-Policy: no-referrer`, `X-Content-Type-Options: nosniff`, and `Cache-Control:
no-store` on the page and on every API answer (a created secret must not sit in a cache).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    # API Gateway serves HTTPS only; browsers ignore this header on plain http (jobhooks dev).
    "Strict-Transport-Security": "max-age=31536000",
}
NO_STORE: Final = "no-store"
# Assets change only with a deployment; a short cache still saves a round trip per page.
ASSET_CACHE: Final = "public, max-age=300"
PAGE: Final = "index.html"
_CONTENT_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
_ASSET_NAME: Final = re.compile(r"[a-z0-9][a-z0-9-]*\.(css|js|svg)")


@dataclass(frozen=True, slots=True)
class Asset:
    """The portal's page or one of its assets, as served: name, media type and text."""

    name: str
    content_type: str
    body: str


def page() -> Asset:
    return _assets()[PAGE]


def asset(name: str) -> Asset | None:
    """A servable asset by file name; None for anything else (the page itself included)."""
    if not _ASSET_NAME.fullmatch(name):
        return None
    return _assets().get(name)


@functools.cache
def _assets() -> Mapping[str, Asset]:
    folder = resources.files("jobhooks.portal").joinpath("assets")
    found: dict[str, Asset] = {}
    for entry in folder.iterdir():
        suffix = "." + entry.name.rpartition(".")[2]
        if entry.is_file() and suffix in _CONTENT_TYPES:
            found[entry.name] = Asset(entry.name, _CONTENT_TYPES[suffix], entry.read_text("utf-8"))
    return found


def is_portal_path(path: str) -> bool:
    return path == "/portal" or path.startswith("/portal/")


def portal_headers(path: str, answer: Mapping[str, Any]) -> dict[str, Any]:
    """`answer` (a payload 2.0 response) with the portal's security and cache headers."""
    headers = {str(name): value for name, value in (answer.get("headers") or {}).items()}
    present = {name.lower() for name in headers}
    for name, value in SECURITY_HEADERS.items():
        if name.lower() not in present:
            headers[name] = value
    if "cache-control" not in present:
        headers["Cache-Control"] = (
            ASSET_CACHE
            if path.startswith("/portal/assets/") and answer.get("statusCode") == 200
            else NO_STORE
        )
    return {**answer, "headers": headers}
