"""First-attempt pages in FirstAttemptsTable (moto): one write per (subscription, batch), read
back by key and newest first, and delivery ids that name their event and subscription."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from jobhooks.delivery.first_attempts import (
    FirstAttempt,
    FirstAttemptLog,
    FirstAttemptPage,
    batch_time,
    new_batch_id,
)
from jobhooks.delivery.model import DeliveryStatus
from jobhooks.delivery_task import delivery_id_for, parse_delivery_id
from jobhooks.management.models import DELIVERY_ID_PATTERN
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.local.template import LocalResources

NOW = datetime(2026, 12, 1, 12, 0, 0, 123000, tzinfo=UTC)


def success(n: int, at: datetime = NOW) -> FirstAttempt:
    return FirstAttempt(
        event_id=f"fetcher.job.completed.0197a3f2-7c1e-7d33-9a51-{n:012d}",
        event_type="job.completed",
        at=at,
        status_code=200,
        latency_ms=40 + n,
    )


def page(batch: str, *successes: FirstAttempt, subscription_id: str = "sub_a") -> FirstAttemptPage:
    return FirstAttemptPage(subscription_id, "acme", batch, successes)


@pytest.fixture
def log(stack: LocalResources) -> FirstAttemptLog:
    return FirstAttemptLog(
        stack.table_name("FirstAttemptsTable"), boto3.client("dynamodb"), clock=lambda: NOW
    )


def test_batch_ids_sort_as_their_times() -> None:
    earlier, later = new_batch_id(NOW), new_batch_id(NOW + timedelta(milliseconds=1))
    assert earlier < later
    assert batch_time(earlier) == NOW
    assert batch_time("0123abcd.0") is None  # a batch id from before ids carried a time


def test_delivery_ids_name_their_event_and_tag_their_subscription() -> None:
    event_id = "fetcher.job.failed.0197a3f2-7c1e-7d33-9a51-000000000001"
    delivery_id = delivery_id_for(event_id, "sub_Ab-_9")
    assert delivery_id.startswith("dlv_")
    named = parse_delivery_id(delivery_id)
    assert named is not None
    assert named.event_id == event_id
    assert named.is_for("sub_Ab-_9")
    assert not named.is_for("sub_other")
    assert delivery_id_for(event_id, "sub_Ab-_9") == delivery_id  # derived: a re-fan-out agrees
    assert delivery_id_for(event_id, "sub_other") != delivery_id
    assert parse_delivery_id("dlv_" + "0" * 32) is None  # an older, hashed id
    assert parse_delivery_id(delivery_id + "=") is None
    assert parse_delivery_id(delivery_id.replace(".", "=.")) is None


def test_ten_successes_are_one_item_under_one_write_unit(
    log: FirstAttemptLog, stack: LocalResources
) -> None:
    batch = new_batch_id(NOW)
    log.write([page(batch, *(success(n) for n in range(10)))])

    item = boto3.client("dynamodb").get_item(
        TableName=stack.table_name("FirstAttemptsTable"),
        Key={"subscription_id": {"S": "sub_a"}, "batch_id": {"S": batch}},
    )["Item"]
    size = sum(len(k) + len(next(iter(v.values()))) for k, v in item.items())
    assert size < 1024, f"a page of ten successes is {size} B: more than one write unit"

    stored = log.get("sub_a", batch)
    assert stored is not None
    assert [s.event_id for s in stored.page.successes] == [success(n).event_id for n in range(10)]
    record = stored.record(stored.page.successes[3])
    assert record.delivery_id == delivery_id_for(success(3).event_id, "sub_a")
    assert record.webhook_id == webhook_id_for(success(3).event_id)
    assert record.status is DeliveryStatus.SUCCEEDED
    assert record.attempt_count == 1
    assert record.attempts[0].n == 1
    assert record.attempts[0].status_code == 200
    assert record.attempts[0].latency_ms == 43
    assert record.created_at == NOW
    assert record.expires_at == NOW.replace(microsecond=0) + timedelta(days=30)


def test_pages_list_newest_first_per_subscription(log: FirstAttemptLog) -> None:
    batches = [new_batch_id(NOW + timedelta(seconds=s)) for s in range(5)]
    log.write([page(b, success(i)) for i, b in enumerate(batches)])
    log.write([page(batches[0], success(99), subscription_id="sub_b")])

    newest = log.newest("sub_a", limit=3)
    assert [p.page.batch_id for p in newest] == batches[::-1][:3]
    rest = log.newest("sub_a", before_batch=newest[-1].page.batch_id, limit=10)
    assert [p.page.batch_id for p in rest] == batches[1::-1]
    assert [p.page.batch_id for p in log.newest("sub_b")] == [batches[0]]


def test_expired_pages_are_not_read(stack: LocalResources) -> None:
    batch = new_batch_id(NOW)
    FirstAttemptLog(
        stack.table_name("FirstAttemptsTable"), boto3.client("dynamodb"), clock=lambda: NOW
    ).write([page(batch, success(1))])
    later = FirstAttemptLog(
        stack.table_name("FirstAttemptsTable"),
        boto3.client("dynamodb"),
        clock=lambda: NOW + timedelta(days=31),
    )
    assert later.get("sub_a", batch) is None
    assert later.newest("sub_a") == []


def test_more_pages_than_one_call_takes_are_all_written(log: FirstAttemptLog) -> None:
    batch = new_batch_id(NOW)
    log.write([page(batch, success(i), subscription_id=f"sub_{i}") for i in range(30)])
    assert all(log.get(f"sub_{i}", batch) is not None for i in range(30))


@pytest.mark.parametrize(
    "event_id",
    [
        "fetcher.job.completed.0197a3f2-7c1e-7d33-9a51-3c5e0f1b2a4d",
        "fetcher.job.failed.0197a3f2-7c1e-7d33-9a51-3c5e0f1b2a4d",
        "fetcher.job.completed.0197A3F2-7C1E-7D33-9A51-3C5E0F1B2A4D",  # not the canonical text
        "fetcher.job.retried.0197a3f2-7c1e-7d33-9a51-3c5e0f1b2a4d",
        "fetcher.job.completed.job-42",
        "x",
        "é" * 256,
    ],
)
def test_every_event_id_comes_back_from_its_delivery_id(event_id: str) -> None:
    delivery_id = delivery_id_for(event_id, "sub_a")
    named = parse_delivery_id(delivery_id)
    assert named is not None
    assert named.event_id == event_id
    assert named.is_for("sub_a")
    assert re.fullmatch(DELIVERY_ID_PATTERN, delivery_id)


def test_a_fetcher_event_makes_a_delivery_id_as_short_as_the_hashed_ones() -> None:
    # The CLI's tables show ids whole, in 80 columns: a Fetcher ce-id's UUID is carried as its
    # 16 bytes, the subscription as a tag.
    event_id = "fetcher.job.completed.0197a3f2-7c1e-7d33-9a51-3c5e0f1b2a4d"
    delivery_id = delivery_id_for(event_id, "sub_" + "A" * 22)
    assert len(delivery_id) == len("dlv_" + "0" * 32) == 36
    assert delivery_id_for("fetcher.job.failed" + event_id[21:], "sub_a") != delivery_id_for(
        event_id, "sub_a"
    )
