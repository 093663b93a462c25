"""Grants: which IAM callers are bound to which tenants (operators only; docs/api.md,
"Who may call"). A grant takes effect at the bound caller's next request: the API reads the
grants on every IAM request, strongly consistent.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from jobhooks.access.access_store import StoredGrant
from jobhooks.access.exceptions import GrantBindsCallerError
from jobhooks.access.grants import (
    GRANT_ID_PATTERN,
    grant_matches,
    new_grant_id,
    validate_principal_pattern,
    validate_tenants,
)
from jobhooks.management.openapi import documented
from jobhooks.management.operator_models import GrantList, GrantRequest, GrantView
from jobhooks.management.routes.dependencies import Operator, Portal
from jobhooks.storage.times import format_time

OK, CREATED, NO_CONTENT = HTTPStatus.OK, HTTPStatus.CREATED, HTTPStatus.NO_CONTENT
FORBIDDEN, NOT_FOUND, CONFLICT = HTTPStatus.FORBIDDEN, HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT
TAGS = ["grants"]

GrantIdPath = Annotated[str, Path(pattern=GRANT_ID_PATTERN, description="a grant id (grt_...)")]

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


@router.get(
    "/v1/grants",
    operation_id="list_grants",
    summary="Every grant: which IAM principals are bound to which tenants",
    responses=documented(OK, GrantList, FORBIDDEN),
    tags=TAGS,
)
def handle_list_grants(portal: Portal, operator: Operator) -> GrantList:
    grants = sorted(portal.store.list_grants(), key=lambda grant: grant.created_at)
    return GrantList(grants=[grant_view(grant) for grant in grants])


@router.post(
    "/v1/grants",
    operation_id="add_grant",
    summary="Bind the IAM principals matching a pattern to tenants",
    status_code=CREATED,
    responses=documented(CREATED, GrantView, FORBIDDEN, CONFLICT),
    tags=TAGS,
)
def handle_add_grant(body: GrantRequest, portal: Portal, operator: Operator) -> GrantView:
    pattern = validate_principal_pattern(body.principal_pattern)
    if grant_matches(pattern, operator.principal):
        raise GrantBindsCallerError()
    grant = StoredGrant(
        grant_id=new_grant_id(),
        principal_pattern=pattern,
        tenants=validate_tenants(body.tenants),
        description=body.description,
        created_at=format_time(portal.sessions.clock()),
        created_by=operator.principal,
    )
    portal.store.add_grant(grant)
    return grant_view(grant)


@router.delete(
    "/v1/grants/<grant_id>",
    operation_id="remove_grant",
    summary="Remove a grant: its principals lose its tenants (never made operators by it)",
    status_code=NO_CONTENT,
    responses=documented(NO_CONTENT, None, FORBIDDEN, NOT_FOUND),
    tags=TAGS,
)
def handle_remove_grant(
    grant_id: GrantIdPath, portal: Portal, operator: Operator
) -> Response[None]:
    portal.store.remove_grant(grant_id)
    return Response(status_code=NO_CONTENT, body=None)


def grant_view(grant: StoredGrant) -> GrantView:
    return GrantView(
        grant_id=grant.grant_id,
        principal_pattern=grant.principal_pattern,
        tenants=list(grant.tenants),
        description=grant.description,
        created_at=grant.created_at,
        created_by=grant.created_by,
    )
