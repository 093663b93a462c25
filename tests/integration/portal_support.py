"""What the portal tests share: links opened the way the page opens them, sessions, and the
stack's real token key (to make links that are genuine but expired, as time would).

Requests go through `jobhooks_tools.local.gateway`, which routes and authorizes them as
template.yaml's HttpApi does: the portal authorizer function runs on every portal API request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import boto3
from jobhooks.access.callers import SESSION_COOKIE
from jobhooks.access.keys import parse_keys
from jobhooks.access.tokens import TokenClaims, TokenKind, new_token_id, seal
from jobhooks_tools.local.api_server import load_gateway

from tests.integration.api_support import ApiAnswer, InProcessApi

PORTAL_WRITE = ("x-jobhooks-portal", "1")


def gateway_api(**kwargs: Any) -> InProcessApi:
    return InProcessApi(gateway=load_gateway(), **kwargs)


def link_token(url: str) -> str:
    fragment = urlsplit(url).fragment
    assert fragment.startswith("t="), url
    return fragment[2:]


@dataclass
class PortalBrowser:
    """A browser's view of the portal API: the session cookie it holds, the header it sends."""

    api: InProcessApi
    token: str

    def call(self, method: str, path: str, body: Any = None, **kwargs: Any) -> ApiAnswer:
        headers = [("cookie", f"{SESSION_COOKIE}={self.token}")]
        if method != "GET":
            headers.append(PORTAL_WRITE)
        return self.api.call(method, path, body=body, headers=headers, **kwargs)

    def get(self, path: str, **query: Any) -> ApiAnswer:
        return self.call("GET", path, query=query or None)

    def post(self, path: str, body: Any = None) -> ApiAnswer:
        return self.call("POST", path, body)

    def patch(self, path: str, body: Any) -> ApiAnswer:
        return self.call("PATCH", path, body)

    def delete(self, path: str) -> ApiAnswer:
        return self.call("DELETE", path)


def issue_link(api: InProcessApi, tenant: str, **body: Any) -> ApiAnswer:
    answer = api.call("POST", "/v1/portal/links", body={"tenant_id": tenant, **body})
    assert answer.status == 201, answer.text
    return answer


def exchange(api: InProcessApi, token: str) -> ApiAnswer:
    return api.call(
        "POST",
        "/portal/session",
        headers=[("x-jobhooks-portal-link", token), PORTAL_WRITE],
        content_type=None,
    )


def session_token(answer: ApiAnswer) -> str:
    cookie = answer.headers["set-cookie"]
    name, _, rest = cookie.partition("=")
    assert name == SESSION_COOKIE, cookie
    return rest.split(";", 1)[0]


def open_portal(api: InProcessApi, tenant: str) -> PortalBrowser:
    opened = exchange(api, link_token(issue_link(api, tenant).body["url"]))
    assert opened.status == 200, opened.text
    return PortalBrowser(api, session_token(opened))


def stack_keys() -> tuple[bytes, ...]:
    """The token key(s) in the stack's PortalTokenKey secret."""
    import os

    secret = boto3.client("secretsmanager").get_secret_value(
        SecretId=os.environ["JOBHOOKS_PORTAL_KEY_SECRET_ARN"]
    )
    return parse_keys(secret["SecretString"])


def genuine_link(tenant: str, *, expires_in: int, epoch: int = 0) -> str:
    """A link the stack's own key signed (an expired one when `expires_in` <= 0)."""
    claims = TokenClaims(
        kind=TokenKind.LINK,
        tenant_id=tenant,
        token_id=new_token_id(TokenKind.LINK),
        expires_at=int(time.time()) + expires_in,
        epoch=epoch,
    )
    return seal(stack_keys()[0], claims)


def fresh_session_token(tenant: str = "acme") -> str:
    """A session of `tenant` opened the way the page opens one, without the HTTP round trips."""
    from jobhooks.access.callers import PortalPass
    from jobhooks.access.context import get_portal_context
    from jobhooks.access.settings import PortalSettings

    sessions = get_portal_context(PortalSettings.from_env()).sessions
    link = sessions.issue_link(tenant)
    claims = sessions.verify(link.token, TokenKind.LINK)
    verdict = PortalPass("link", tenant, claims.token_id, claims.expires_at, claims.epoch)
    return sessions.open_session(verdict).token


def fresh_link_token(tenant: str = "acme") -> str:
    from jobhooks.access.context import get_portal_context
    from jobhooks.access.settings import PortalSettings

    return get_portal_context(PortalSettings.from_env()).sessions.issue_link(tenant).token


_SHARED_SESSIONS: dict[str, str] = {}


def portal_credentials(operation: dict[str, Any]) -> dict[str, str]:
    """The headers a portal operation of the OpenAPI document needs: a session shared by the
    operations of this stack, a fresh one for signing out (it ends its session), a fresh link
    for the exchange (a link opens one session)."""
    import os

    security = operation.get("security") or []
    if {"portalSession": []} in security:
        if operation.get("operationId") == "close_portal_session":
            token = fresh_session_token()
        else:
            stack = os.environ["JOBHOOKS_PORTAL_KEY_SECRET_ARN"]  # a new stack, a new secret
            token = _SHARED_SESSIONS.get(stack) or _SHARED_SESSIONS.setdefault(
                stack, fresh_session_token()
            )
        return {"Cookie": f"{SESSION_COOKIE}={token}", "X-Jobhooks-Portal": "1"}
    if {"portalLink": []} in security:
        return {"X-Jobhooks-Portal-Link": fresh_link_token(), "X-Jobhooks-Portal": "1"}
    return {}
