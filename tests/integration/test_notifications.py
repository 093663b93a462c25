"""Notifications and the job-health evaluator against moto's server (`stack`: template.yaml's
tables, queues and the operators' SNS topic) and DuckDB over rows written as ingest writes them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from jobhooks.alerts.evaluator import AlertEvaluator
from jobhooks.alerts.store import AlertRuleStore
from jobhooks.delivery_task import DeliveryTask
from jobhooks.notifications.exceptions import NotificationNotSentError
from jobhooks.notifications.notifier import Notifier
from jobhooks.notifications.settings import NotificationSettings
from jobhooks.notifications.wiring import build_notifier
from jobhooks.subscriptions.store import SubscriptionStore
from jobhooks_tools.local.analytics.duckdb_engine import DuckDBEngine
from jobhooks_tools.local.analytics.files import LocalFileSink
from jobhooks_tools.local.template import LocalResources

from tests.integration.analytics_fixture import row

NOW = datetime(2026, 9, 1, 12, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def subscriptions(stack: LocalResources) -> SubscriptionStore:
    return SubscriptionStore(
        stack.table_name("SubscriptionsTable"),
        boto3.client("dynamodb"),
        boto3.client("kms"),
        kms_key_id=stack.refs["SubscriptionSecretsKey"],
    )


@pytest.fixture
def operators_inbox(stack: LocalResources) -> str:
    """A queue subscribed to the operators' topic: what an operator's subscription receives."""
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="operators-inbox")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    boto3.client("sns").subscribe(
        TopicArn=stack.refs["OperationsTopic"],
        Protocol="sqs",
        Endpoint=arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    return str(url)


def drain(queue_url: str) -> list[dict[str, Any]]:
    sqs = boto3.client("sqs")
    bodies: list[dict[str, Any]] = []
    while True:
        messages = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
        ).get("Messages", [])
        if not messages:
            return bodies
        for message in messages:
            bodies.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def tasks(stack: LocalResources) -> list[DeliveryTask]:
    return [DeliveryTask.model_validate(body) for body in drain(stack.queue_url("DeliveryQueue"))]


def add(store: SubscriptionStore, tenant: str, *types: str, **fields: Any) -> str:
    issued = store.create(tenant, "https://hooks.example.com/x", list(types), **fields)
    return issued.subscription.subscription_id


def test_a_notification_goes_to_the_tenants_subscriptions_that_list_it_and_to_operators(
    stack: LocalResources, subscriptions: SubscriptionStore, operators_inbox: str
) -> None:
    wants = add(subscriptions, "acme", "endpoint.disabled", "job.failed")
    about = add(subscriptions, "acme", "endpoint.disabled")
    add(subscriptions, "acme", "job.completed", "job.failed")  # does not list the type
    add(subscriptions, "globex", "endpoint.disabled")  # another tenant
    notifier = build_notifier(NotificationSettings.from_env())

    sent = notifier.notify(
        "acme", "endpoint.disabled", {"subscription_id": about, "reason": "gone"}, about, key="k1"
    )

    (task,) = tasks(stack)
    assert sent.subscription_ids == (wants,)
    assert (task.subscription_id, task.tenant_id, task.event_type) == (
        wants,
        "acme",
        "endpoint.disabled",
    )
    body = json.loads(task.payload)
    assert body["type"] == "endpoint.disabled"
    assert body["data"] == {"subscription_id": about, "reason": "gone"}
    assert body["timestamp"].endswith("Z")
    (message,) = drain(operators_inbox)
    assert (message["tenant_id"], message["type"]) == ("acme", "endpoint.disabled")
    assert message["about_subscription"] == about
    assert message["deliveries"] == 1

    again = notifier.notify(
        "acme", "endpoint.disabled", {"subscription_id": about, "reason": "gone"}, about, key="k1"
    )
    assert [t.delivery_id for t in tasks(stack)] == [task.delivery_id]  # same change, same id
    assert again.notification_id == sent.notification_id


def test_job_health_notifications_respect_the_subscriptions_job_filters(
    stack: LocalResources, subscriptions: SubscriptionStore
) -> None:
    billing = add(subscriptions, "acme", "job_health.degraded", job_names=["billing-*"])
    add(subscriptions, "acme", "job_health.degraded", job_names=["reports"])
    notifier = build_notifier(NotificationSettings.from_env())

    notifier.notify("acme", "job_health.degraded", {"job_name": "billing-refunds"})

    assert [task.subscription_id for task in tasks(stack)] == [billing]


def test_a_job_type_is_not_a_notification_type(
    stack: LocalResources, subscriptions: SubscriptionStore
) -> None:
    notifier = build_notifier(NotificationSettings.from_env())
    with pytest.raises(ValueError, match="not a notification type"):
        notifier.notify("acme", "job.failed", {})


def test_a_refused_enqueue_is_reported_for_a_retry(
    stack: LocalResources, subscriptions: SubscriptionStore
) -> None:
    add(subscriptions, "acme", "delivery.exhausted")

    class RefusingQueue:
        def enqueue(self, event_id: str, tasks: Any) -> int:
            raise RuntimeError("SQS is down")

    clock = Clock()
    notifier = Notifier(subscriptions=subscriptions, deliveries=RefusingQueue(), clock=clock)
    with pytest.raises(NotificationNotSentError) as caught:
        notifier.notify("acme", "delivery.exhausted", {"delivery_id": "dlv_x"}, key="k")
    assert caught.value.code == "notification_not_sent"
    assert caught.value.at == NOW

    # Sent again later with its key and time: the same delivery ids and the same body.
    clock.now = NOW + timedelta(minutes=3)
    working = build_notifier(NotificationSettings.from_env(), clock=clock)
    working.notify("acme", "delivery.exhausted", {"delivery_id": "dlv_x"}, key="k", at=NOW)
    working.notify("acme", "delivery.exhausted", {"delivery_id": "dlv_x"}, key="k", at=NOW)
    first, second = tasks(stack)
    assert (first.delivery_id, first.payload) == (second.delivery_id, second.payload)
    assert json.loads(first.payload)["timestamp"] == "2026-09-01T12:00:00.000Z"


# -- the evaluator -------------------------------------------------------------------------


def outcomes(
    data_dir: Path, at: datetime, job: str, *, failures: int, successes: int, prefix: str
) -> None:
    rows = [
        row(f"{prefix}f{n}", at.isoformat(), job=job, status="failure", category="datasource_error")
        for n in range(failures)
    ] + [
        row(f"{prefix}s{n}", at.isoformat(), job=job, duration=200 + n, unmeasured=())
        for n in range(successes)
    ]
    LocalFileSink(data_dir, clock=lambda: at).put_rows(rows)


def test_failures_of_a_job_degrade_it_once_then_it_recovers(
    stack: LocalResources, subscriptions: SubscriptionStore, tmp_path: Path
) -> None:
    wants = add(subscriptions, "acme", "job_health.degraded", "job_health.recovered")
    other_tenant = add(subscriptions, "globex", "job_health.degraded")
    clock = Clock()
    rules = AlertRuleStore(
        stack.table_name("AlertRulesTable"), boto3.client("dynamodb"), clock=clock
    )
    rule = rules.create("acme", "billing-*", failure_rate=0.5, min_outcomes=4, window_seconds=600)
    rules.create("globex", "billing-*", failure_rate=0.5, min_outcomes=4, window_seconds=600)
    evaluator = AlertEvaluator(
        rules=rules,
        engine=DuckDBEngine(tmp_path),
        notifier=build_notifier(NotificationSettings.from_env(), clock=clock),
        clock=clock,
    )
    outcomes(
        tmp_path,
        NOW - timedelta(minutes=5),
        "billing-invoices",
        failures=4,
        successes=1,
        prefix="a",
    )
    outcomes(tmp_path, NOW - timedelta(minutes=5), "payments", failures=5, successes=0, prefix="b")

    summary = evaluator.evaluate()

    (task,) = tasks(stack)
    assert (summary.degraded, summary.recovered) == (1, 0)
    assert task.subscription_id == wants and task.subscription_id != other_tenant
    body = json.loads(task.payload)
    assert body["type"] == "job_health.degraded"
    assert body["data"]["rule_id"] == rule.rule_id
    assert body["data"]["job_name"] == "billing-invoices"
    assert (body["data"]["outcomes"], body["data"]["failures"]) == (5, 4)
    assert body["data"]["failure_rate"] == 0.8
    assert body["data"]["p95_duration_ms"] == 200  # the one measured duration
    assert body["data"]["measured_durations"] == 1

    clock.now += timedelta(minutes=5)
    assert evaluator.evaluate().degraded == 0
    assert tasks(stack) == []  # still degraded: once per state change
    listed = rules.get(rule.rule_id)
    assert list(listed.states) == ["billing-invoices"]

    clock.now += timedelta(minutes=10)  # the failures left the window
    outcomes(
        tmp_path,
        clock.now - timedelta(minutes=1),
        "billing-invoices",
        failures=0,
        successes=5,
        prefix="c",
    )
    assert evaluator.evaluate().recovered == 1
    (recovered,) = tasks(stack)
    assert json.loads(recovered.payload)["type"] == "job_health.recovered"
    assert rules.get(rule.rule_id).states == {}
    assert [r.type for r in rules.get(rule.rule_id).recent] == [
        "job_health.recovered",
        "job_health.degraded",
    ]
