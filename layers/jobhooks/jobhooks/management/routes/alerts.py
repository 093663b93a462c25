"""Routes of /v1/alerts: a tenant's job-health alert rules (docs/notifications.md).

A tenant-bound caller names one of its own tenants (`named_tenant`), and another tenant's rule
is "not found" to it; an operator acts for any tenant.
"""

from __future__ import annotations

from http import HTTPStatus

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from jobhooks.access.callers import Caller
from jobhooks.alerts.exceptions import AlertRuleNotFoundError
from jobhooks.management import alerts
from jobhooks.management.context import ManagementContext
from jobhooks.management.models import AlertRuleList, AlertRuleView
from jobhooks.management.openapi import (
    AlertRuleIdPath,
    CreateAlertRuleBody,
    TenantQuery,
    TenantScopeQuery,
    documented,
)
from jobhooks.management.routes.dependencies import CallerOf, Context
from jobhooks.management.scoping import named_tenant

OK, CREATED, NO_CONTENT = HTTPStatus.OK, HTTPStatus.CREATED, HTTPStatus.NO_CONTENT
NOT_FOUND, CONFLICT = HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT
TAGS = ["alerts"]

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
logger = Logger(child=True)


@router.post(
    "/v1/alerts",
    operation_id="create_alert_rule",
    summary="Add a job-health alert rule for a tenant",
    status_code=CREATED,
    responses=documented(CREATED, AlertRuleView, NOT_FOUND, CONFLICT),
    tags=TAGS,
)
def handle_create_alert_rule(
    body: CreateAlertRuleBody, context: Context, caller: CallerOf
) -> AlertRuleView:
    named_tenant(caller, body.tenant_id)
    created = alerts.create_alert_rule(context, body)
    logger.info(
        "alert rule created", extra={"rule_id": created.rule_id, "tenant_id": created.tenant_id}
    )
    return created


@router.get(
    "/v1/alerts",
    operation_id="list_alert_rules",
    summary="A tenant's alert rules, the jobs they find degraded, and their recent alerts",
    responses=documented(OK, AlertRuleList, NOT_FOUND),
    tags=TAGS,
)
def handle_list_alert_rules(
    tenant_id: TenantQuery, context: Context, caller: CallerOf
) -> AlertRuleList:
    return alerts.list_alert_rules(context, named_tenant(caller, tenant_id))


@router.get(
    "/v1/alerts/<rule_id>",
    operation_id="get_alert_rule",
    summary="Show an alert rule",
    responses=documented(OK, AlertRuleView, NOT_FOUND),
    tags=TAGS,
)
def handle_get_alert_rule(
    rule_id: AlertRuleIdPath,
    context: Context,
    caller: CallerOf,
    tenant_id: TenantScopeQuery = None,
) -> AlertRuleView:
    scope = rule_scope(context, caller, rule_id, tenant_id)
    return alerts.get_alert_rule(context, rule_id, tenant_id=scope)


@router.delete(
    "/v1/alerts/<rule_id>",
    operation_id="delete_alert_rule",
    summary="Remove an alert rule; its jobs are no longer watched",
    status_code=NO_CONTENT,
    responses=documented(NO_CONTENT, None, NOT_FOUND),
    tags=TAGS,
)
def handle_delete_alert_rule(
    rule_id: AlertRuleIdPath,
    context: Context,
    caller: CallerOf,
    tenant_id: TenantScopeQuery = None,
) -> Response[None]:
    scope = rule_scope(context, caller, rule_id, tenant_id)
    alerts.delete_alert_rule(context, rule_id, tenant_id=scope)
    logger.info("alert rule deleted", extra={"rule_id": rule_id})
    return Response(status_code=NO_CONTENT, body=None)


def rule_scope(
    context: ManagementContext, caller: Caller, rule_id: str, requested: str | None
) -> str | None:
    """The tenant a rule operation is held to: an operator's `requested` (or none); for a
    tenant-bound caller the rule's tenant, when it may act for it (else "not found")."""
    if caller.is_operator:
        return requested
    tenant = context.alert_rules.get(rule_id).tenant_id
    if not caller.may_act_for(tenant) or requested not in (None, tenant):
        raise AlertRuleNotFoundError(rule_id)
    return tenant
