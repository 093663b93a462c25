"""Job-health alert rules: add, list (with the recent alerts), show, remove.

The evaluation itself runs on a schedule (`jobhooks.alerts.evaluator`, the alerts function);
these operations only manage the rules a tenant has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobhooks.management.context import ManagementContext
from jobhooks.management.models import (
    AlertRuleList,
    AlertRuleView,
    AlertView,
    CreateAlertRuleRequest,
    DegradedJobView,
)
from jobhooks.storage.times import format_time

if TYPE_CHECKING:
    from jobhooks.alerts.model import AlertRule


def create_alert_rule(context: ManagementContext, request: CreateAlertRuleRequest) -> AlertRuleView:
    rule = context.alert_rules.create(
        request.tenant_id,
        request.job_name,
        failure_rate=request.failure_rate,
        p95_ms=request.p95_ms,
        min_outcomes=request.min_outcomes,
        window_seconds=request.window_seconds,
    )
    return alert_rule_view(rule)


def list_alert_rules(context: ManagementContext, tenant_id: str) -> AlertRuleList:
    rules = context.alert_rules.list_by_tenant(tenant_id)
    alerts = [
        AlertView(
            rule_id=rule.rule_id,
            type=record.type,
            job_name=record.job_name,
            at=format_time(record.at),
            outcomes=record.outcomes,
            failures=record.failures,
            failure_rate=record.failure_rate,
            p95_duration_ms=record.p95_duration_ms,
            deliveries=record.deliveries,
        )
        for rule in rules
        for record in rule.recent
    ]
    alerts.sort(key=lambda alert: alert.at, reverse=True)
    return AlertRuleList(rules=[alert_rule_view(rule) for rule in rules], recent_alerts=alerts)


def get_alert_rule(
    context: ManagementContext, rule_id: str, *, tenant_id: str | None = None
) -> AlertRuleView:
    return alert_rule_view(context.alert_rules.get(rule_id, tenant_id=tenant_id))


def delete_alert_rule(
    context: ManagementContext, rule_id: str, *, tenant_id: str | None = None
) -> None:
    context.alert_rules.delete(rule_id, tenant_id=tenant_id)


def alert_rule_view(rule: AlertRule) -> AlertRuleView:
    return AlertRuleView(
        rule_id=rule.rule_id,
        tenant_id=rule.tenant_id,
        job_name=rule.job_name,
        failure_rate=rule.failure_rate,
        p95_ms=rule.p95_ms,
        min_outcomes=rule.min_outcomes,
        window_seconds=rule.window_seconds,
        created_at=format_time(rule.created_at),
        degraded=[
            DegradedJobView(
                job_name=job_name,
                degraded_since=format_time(state.degraded_since),
                outcomes=state.outcomes,
                failures=state.failures,
                failure_rate=state.failure_rate,
                p95_duration_ms=state.p95_duration_ms,
            )
            for job_name, state in sorted(rule.states.items())
        ],
    )
