"""The operator routes of the tenant portal: one-time links that open it for a tenant, and
revoking them (`jobhooks portal link`, `jobhooks portal revoke`). The portal itself, its page
and its API, is a function of its own (`functions/portal/app.py`, `jobhooks.portal.routes`).
"""

from __future__ import annotations

from datetime import timedelta
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler.request import Request
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from jobhooks.management.openapi import documented
from jobhooks.management.operator_models import (
    PortalLink,
    PortalLinkRequest,
    Revocation,
    RevocationRequest,
)
from jobhooks.management.routes.dependencies import Operator, Portal
from jobhooks.storage.times import format_time

OK, CREATED, FORBIDDEN = HTTPStatus.OK, HTTPStatus.CREATED, HTTPStatus.FORBIDDEN
PORTAL_TAG = ["portal"]

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


@router.post(
    "/v1/portal/links",
    operation_id="create_portal_link",
    summary="A one-time link that opens the portal for one tenant (operators only)",
    status_code=CREATED,
    responses=documented(CREATED, PortalLink, FORBIDDEN),
    tags=PORTAL_TAG,
)
def handle_create_portal_link(
    body: PortalLinkRequest, portal: Portal, operator: Operator, request: Request
) -> PortalLink:
    issued = portal.sessions.issue_link(body.tenant_id, timedelta(seconds=body.ttl_seconds))
    base = portal.settings.portal_url or _request_base_url(request.resolved_event.raw_event)
    return PortalLink(
        # The token rides in the fragment: never sent to a server, never in a Referer or log.
        url=f"{base}/portal#t={issued.token}",
        expires_at=format_time(issued.expires_at),
        tenant_id=issued.tenant_id,
        link_id=issued.token_id,
    )


@router.post(
    "/v1/portal/revocations",
    operation_id="revoke_portal_access",
    summary="End every portal link and session of a tenant, or one session (operators only)",
    responses=documented(OK, Revocation, FORBIDDEN),
    tags=PORTAL_TAG,
)
def handle_revoke_portal_access(
    body: RevocationRequest, portal: Portal, operator: Operator
) -> Revocation:
    if body.tenant_id is not None:
        epoch = portal.sessions.revoke_tenant(body.tenant_id)
        return Revocation(tenant_id=body.tenant_id, epoch=epoch)
    assert body.session_id is not None
    portal.sessions.revoke_session(body.session_id)
    return Revocation(session_id=body.session_id)


# -- helpers ----------------------------------------------------------------------------------


def _request_base_url(event: dict[str, Any]) -> str:
    """Where the operator reached this API: the links point at the same place."""
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    scheme = headers.get("x-forwarded-proto", "https").split(",")[0].strip()
    host = headers.get("host") or str((event.get("requestContext") or {}).get("domainName", ""))
    return f"{scheme if scheme in ('http', 'https') else 'https'}://{host}"
