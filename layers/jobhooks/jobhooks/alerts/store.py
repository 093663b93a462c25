"""Alert rules in DynamoDB (`AlertRulesTable`, GSI `by_tenant`; docs/notifications.md).

One item per rule: its settings, and what the evaluator keeps (the degraded jobs, the recent
alerts) as JSON text. The evaluator's writes are conditional on `revision`, so a rule removed
or changed meanwhile is never written back. Every tenant-scoped read goes through the
`by_tenant` index with the tenant as its partition key; the evaluator reads the whole table
(a Scan: rules are few, at most `MAX_RULES_PER_TENANT` per tenant).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, Final

from botocore.exceptions import ClientError

from jobhooks.alerts.exceptions import (
    AlertRuleConflictError,
    AlertRuleNotFoundError,
    TooManyAlertRulesError,
)
from jobhooks.alerts.model import (
    MAX_RULES_PER_TENANT,
    AlertRecord,
    AlertRule,
    JobState,
    new_rule_id,
    validate_min_outcomes,
    validate_pattern,
    validate_thresholds,
    validate_window,
)
from jobhooks.storage.conditions import is_condition_failure
from jobhooks.storage.reads import every_item
from jobhooks.storage.times import format_time, parse_time, to_stored_precision, utc_now
from jobhooks.subscriptions.model import validate_tenant_id

BY_TENANT_INDEX: Final = "by_tenant"


class AlertRuleStore:
    def __init__(
        self, table_name: str, dynamodb: Any, *, clock: Callable[[], datetime] = utc_now
    ) -> None:
        self.table_name = table_name
        self._dynamodb = dynamodb
        self._clock = clock

    def create(
        self,
        tenant_id: str,
        job_name: str,
        *,
        failure_rate: float | None = None,
        p95_ms: int | None = None,
        min_outcomes: int,
        window_seconds: int,
    ) -> AlertRule:
        tenant_id = validate_tenant_id(tenant_id)
        validate_thresholds(failure_rate, p95_ms)
        rule = AlertRule(
            rule_id=new_rule_id(),
            tenant_id=tenant_id,
            job_name=validate_pattern(job_name),
            failure_rate=failure_rate,
            p95_ms=p95_ms,
            min_outcomes=validate_min_outcomes(min_outcomes),
            window_seconds=validate_window(window_seconds),
            created_at=to_stored_precision(self._clock()),
            revision=1,
        )
        if len(self.list_by_tenant(tenant_id)) >= MAX_RULES_PER_TENANT:
            raise TooManyAlertRulesError(tenant_id, MAX_RULES_PER_TENANT)
        self._dynamodb.put_item(
            TableName=self.table_name,
            Item=_to_item(rule),
            ConditionExpression="attribute_not_exists(rule_id)",
        )
        return rule

    def get(self, rule_id: str, *, tenant_id: str | None = None) -> AlertRule:
        item = self._dynamodb.get_item(
            TableName=self.table_name, Key={"rule_id": {"S": rule_id}}, ConsistentRead=True
        ).get("Item")
        if item is None:
            raise AlertRuleNotFoundError(rule_id)
        rule = _from_item(item)
        if tenant_id is not None and rule.tenant_id != tenant_id:
            raise AlertRuleNotFoundError(rule_id)
        return rule

    def list_by_tenant(self, tenant_id: str) -> tuple[AlertRule, ...]:
        """Every rule of the tenant, oldest first."""
        tenant_id = validate_tenant_id(tenant_id)
        request = {
            "TableName": self.table_name,
            "IndexName": BY_TENANT_INDEX,
            "KeyConditionExpression": "tenant_id = :tenant",
            "ExpressionAttributeValues": {":tenant": {"S": tenant_id}},
        }
        rules = [
            rule
            for rule in map(_from_item, every_item(self._dynamodb.query, request))
            if rule.tenant_id == tenant_id
        ]
        return tuple(sorted(rules, key=lambda rule: (rule.created_at, rule.rule_id)))

    def every_rule(self) -> Iterator[AlertRule]:
        """Every rule of every tenant (the evaluator's read)."""
        yield from map(_from_item, every_item(self._dynamodb.scan, {"TableName": self.table_name}))

    def delete(self, rule_id: str, *, tenant_id: str | None = None) -> None:
        condition = "attribute_exists(rule_id)"
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": {"rule_id": {"S": rule_id}},
        }
        if tenant_id is not None:
            condition += " AND tenant_id = :tenant"
            request["ExpressionAttributeValues"] = {":tenant": {"S": tenant_id}}
        request["ConditionExpression"] = condition
        try:
            self._dynamodb.delete_item(**request)
        except ClientError as error:
            if is_condition_failure(error):
                raise AlertRuleNotFoundError(rule_id) from None
            raise

    def save_evaluation(self, rule: AlertRule, *, expected_revision: int) -> AlertRule:
        """Write the rule's states and recent alerts, unless it changed or went meanwhile."""
        saved = rule.model_copy(update={"revision": expected_revision + 1})
        try:
            self._dynamodb.update_item(
                TableName=self.table_name,
                Key={"rule_id": {"S": rule.rule_id}},
                UpdateExpression="SET states = :states, recent = :recent, revision = :next",
                ConditionExpression="revision = :expected",
                ExpressionAttributeValues={
                    ":states": {"S": _states_json(saved)},
                    ":recent": {"S": _recent_json(saved)},
                    ":next": {"N": str(saved.revision)},
                    ":expected": {"N": str(expected_revision)},
                },
            )
        except ClientError as error:
            if is_condition_failure(error):
                raise AlertRuleConflictError(rule.rule_id) from None
            raise
        return saved


def _to_item(rule: AlertRule) -> dict[str, Any]:
    item: dict[str, Any] = {
        "rule_id": {"S": rule.rule_id},
        "tenant_id": {"S": rule.tenant_id},
        "job_name": {"S": rule.job_name},
        "min_outcomes": {"N": str(rule.min_outcomes)},
        "window_seconds": {"N": str(rule.window_seconds)},
        "created_at": {"S": format_time(rule.created_at)},
        "states": {"S": _states_json(rule)},
        "recent": {"S": _recent_json(rule)},
        "revision": {"N": str(rule.revision)},
    }
    if rule.failure_rate is not None:
        item["failure_rate"] = {"N": repr(rule.failure_rate)}
    if rule.p95_ms is not None:
        item["p95_ms"] = {"N": str(rule.p95_ms)}
    return item


def _from_item(item: dict[str, Any]) -> AlertRule:
    states = json.loads(item.get("states", {}).get("S") or "{}")
    recent = json.loads(item.get("recent", {}).get("S") or "[]")
    return AlertRule(
        rule_id=item["rule_id"]["S"],
        tenant_id=item["tenant_id"]["S"],
        job_name=item["job_name"]["S"],
        failure_rate=float(item["failure_rate"]["N"]) if "failure_rate" in item else None,
        p95_ms=int(item["p95_ms"]["N"]) if "p95_ms" in item else None,
        min_outcomes=int(item["min_outcomes"]["N"]),
        window_seconds=int(item["window_seconds"]["N"]),
        created_at=parse_time(item["created_at"]["S"]),
        states={name: JobState.model_validate(state) for name, state in states.items()},
        recent=tuple(AlertRecord.model_validate(record) for record in recent),
        revision=int(item["revision"]["N"]),
    )


def _states_json(rule: AlertRule) -> str:
    return json.dumps(
        {name: state.model_dump(mode="json") for name, state in rule.states.items()},
        separators=(",", ":"),
    )


def _recent_json(rule: AlertRule) -> str:
    return json.dumps(
        [record.model_dump(mode="json") for record in rule.recent], separators=(",", ":")
    )
