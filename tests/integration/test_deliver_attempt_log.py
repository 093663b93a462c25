"""The attempt log in DeliveriesTable (moto): what one write stores, and how the management side
reads deliveries that only the attempt log holds (through `jobhooks.delivery.history`, as the
API does; tests/integration/test_delivery_history.py adds first-attempt pages)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from jobhooks.delivery.attempt_log import MAX_LOGGED_ATTEMPTS
from jobhooks.delivery.exceptions import DeliveryNotFoundError
from jobhooks.delivery.first_attempts import FirstAttemptLog
from jobhooks.delivery.history import DeliveryHistory
from jobhooks.delivery.model import (
    FAILURE_RESPONSE_BYTES,
    SUCCESS_RESPONSE_BYTES,
    DeliveryAttempt,
    DeliveryStatus,
)
from jobhooks.delivery_task import DeliveryTask, delivery_task_for
from jobhooks.storage.claim_reader import ClaimReader
from jobhooks.storage.exceptions import InvalidCursorError, InvalidPageSizeError
from jobhooks_tools.local.template import LocalResources

from tests.integration.deliver_harness import (
    DeliveryBench,
    delivery_bench,
    payload_for,
)


@pytest.fixture
def bench(stack: LocalResources) -> Iterator[DeliveryBench]:
    with delivery_bench(stack) as bench:
        yield bench


@pytest.fixture
def history(stack: LocalResources, bench: DeliveryBench) -> DeliveryHistory:
    """What the management API reads deliveries through, over the bench's attempt log."""
    pages = FirstAttemptLog(
        stack.table_name("FirstAttemptsTable"), bench.dynamodb, clock=bench.clock
    )
    claims = ClaimReader(stack.table_name("ClaimsTable"), bench.dynamodb, clock=bench.clock)
    return DeliveryHistory(bench.log, pages, claims)


def make_task(
    event_id: str, subscription_id: str = "sub_a", tenant_id: str = "acme"
) -> DeliveryTask:
    return delivery_task_for(
        event_id=event_id,
        tenant_id=tenant_id,
        event_type="job.completed",
        payload=payload_for(event_id),
        subscription_id=subscription_id,
    )


def attempt(
    bench: DeliveryBench, n: int = 1, status: int | None = 200, **fields: object
) -> DeliveryAttempt:
    return DeliveryAttempt(n=n, at=bench.clock(), status_code=status, latency_ms=12, **fields)  # type: ignore[arg-type]


def test_one_attempt_is_one_item_in_the_documented_shape(bench: DeliveryBench) -> None:
    task = make_task("fetcher.job.completed.j-1")
    assert bench.log.record_attempt(
        task, DeliveryStatus.SUCCEEDED, attempt(bench, response="ok"), message_id="m-1"
    )

    item = bench.dynamodb.get_item(
        TableName=bench.deliveries_table, Key={"delivery_id": {"S": task.delivery_id}}
    )["Item"]
    assert item["status"] == {"S": "succeeded"}
    assert item["subscription_id"] == {"S": "sub_a"}
    assert item["event_id"] == {"S": task.event_id}
    assert item["attempt_count"] == {"N": "1"}
    assert item["attempts"]["L"][0]["M"].keys() == {
        "n",
        "at",
        "status_code",
        "latency_ms",
        "response",
    }
    created = bench.clock()
    assert item["created_at"]["S"].endswith("Z")
    expires = int(item["expires_at"]["N"])
    assert expires == int((created + timedelta(days=30)).timestamp())
    assert "payload" not in item  # the body is the customer's data: not kept here


def test_get_returns_the_delivery_with_its_attempts_and_hides_other_tenants(
    bench: DeliveryBench,
) -> None:
    task = make_task("fetcher.job.completed.j-1")
    bench.log.record_attempt(task, DeliveryStatus.PENDING, attempt(bench, 1, 503, response="busy"))
    bench.clock.advance(5)
    bench.log.record_attempt(task, DeliveryStatus.SUCCEEDED, attempt(bench, 2, 200))

    record = bench.log.get(task.delivery_id, tenant_id="acme")

    assert record.status is DeliveryStatus.SUCCEEDED
    assert [(a.n, a.status_code, a.response) for a in record.attempts] == [
        (1, 503, "busy"),
        (2, 200, ""),
    ]
    assert record.succeeded_at == bench.clock()
    assert "succeeded_message_id" not in record.model_dump()
    with pytest.raises(DeliveryNotFoundError) as raised:
        bench.log.get(task.delivery_id, tenant_id="globex")
    assert raised.value.code == "delivery_not_found"
    with pytest.raises(DeliveryNotFoundError):
        bench.log.get("dlv_unknown")


def test_a_subscriptions_deliveries_list_newest_first_in_pages(
    bench: DeliveryBench, history: DeliveryHistory
) -> None:
    tasks = [make_task(f"fetcher.job.completed.j-{n}") for n in range(5)]
    for task in tasks:
        bench.log.record_attempt(task, DeliveryStatus.SUCCEEDED, attempt(bench))
        bench.clock.advance(1)
    bench.log.record_attempt(make_task("fetcher.job.completed.x", "sub_b"), DeliveryStatus.PENDING)

    pages = []
    cursor = None
    while True:
        page = history.list_by_subscription("sub_a", tenant_id="acme", limit=2, cursor=cursor)
        pages.append([record.event_id for record in page.deliveries])
        cursor = page.next_cursor
        if cursor is None:
            break

    assert pages == [
        ["fetcher.job.completed.j-4", "fetcher.job.completed.j-3"],
        ["fetcher.job.completed.j-2", "fetcher.job.completed.j-1"],
        ["fetcher.job.completed.j-0"],
    ]
    assert history.list_by_subscription("sub_a", tenant_id="globex").deliveries == ()


def test_an_events_deliveries_list_one_per_subscription(
    bench: DeliveryBench, history: DeliveryHistory
) -> None:
    for subscription_id in ("sub_c", "sub_a", "sub_b"):
        bench.log.record_attempt(
            make_task("fetcher.job.failed.j-9", subscription_id), DeliveryStatus.PENDING
        )

    page = history.list_by_event(
        "fetcher.job.failed.j-9", subscription_ids=["sub_c", "sub_a", "sub_b", "sub_never"]
    )

    assert [record.subscription_id for record in page.deliveries] == ["sub_a", "sub_b", "sub_c"]
    assert page.next_cursor is None


def test_an_events_deliveries_page_on_subscription_id(
    bench: DeliveryBench, history: DeliveryHistory
) -> None:
    subscription_ids = [f"sub_{n}" for n in range(5)]
    for subscription_id in subscription_ids:
        bench.log.record_attempt(
            make_task("fetcher.job.failed.j-8", subscription_id), DeliveryStatus.PENDING
        )

    pages = []
    cursor = None
    while True:
        page = history.list_by_event(
            "fetcher.job.failed.j-8", subscription_ids=subscription_ids, limit=2, cursor=cursor
        )
        pages.append([record.subscription_id for record in page.deliveries])
        cursor = page.next_cursor
        if cursor is None:
            break

    assert pages == [["sub_0", "sub_1"], ["sub_2", "sub_3"], ["sub_4"]]
    listed = history.list_by_event(
        "fetcher.job.failed.j-8", subscription_ids=subscription_ids, tenant_id="globex"
    )
    assert listed.deliveries == ()


def test_a_cursor_only_continues_the_listing_it_came_from(
    bench: DeliveryBench, history: DeliveryHistory
) -> None:
    for n in range(3):
        bench.log.record_attempt(make_task(f"fetcher.job.completed.j-{n}"), DeliveryStatus.PENDING)
        bench.clock.advance(1)
    cursor = history.list_by_subscription("sub_a", limit=1).next_cursor
    assert cursor is not None

    with pytest.raises(InvalidCursorError):
        history.list_by_subscription("sub_b", cursor=cursor)
    with pytest.raises(InvalidCursorError):
        history.list_by_event("sub_a", subscription_ids=["sub_a"], cursor=cursor)
    with pytest.raises(InvalidCursorError):
        history.list_by_subscription("sub_a", cursor="not-a-cursor")
    with pytest.raises(InvalidPageSizeError):
        history.list_by_subscription("sub_a", limit=0)


def test_an_expired_delivery_is_neither_found_nor_listed(
    bench: DeliveryBench, history: DeliveryHistory
) -> None:
    task = make_task("fetcher.job.completed.j-1")
    bench.log.record_attempt(task, DeliveryStatus.SUCCEEDED, attempt(bench))

    bench.clock.advance(31 * 86400)  # moto, like DynamoDB for up to two days, still holds it

    assert bench.log.find(task.delivery_id) is None
    with pytest.raises(DeliveryNotFoundError):
        bench.log.get(task.delivery_id)
    assert history.list_by_subscription("sub_a").deliveries == ()


def test_response_excerpts_are_kept_short_and_cut_on_a_character(bench: DeliveryBench) -> None:
    ok = make_task("fetcher.job.completed.ok")
    failed = make_task("fetcher.job.completed.failed")
    bench.log.record_attempt(ok, DeliveryStatus.SUCCEEDED, attempt(bench, response="é" * 4096))
    bench.log.record_attempt(
        failed, DeliveryStatus.PENDING, attempt(bench, status=500, response="é" * 4096)
    )

    kept_ok = bench.log.get(ok.delivery_id).attempts[0].response.encode()
    kept_failed = bench.log.get(failed.delivery_id).attempts[0].response.encode()
    assert len(kept_ok) == SUCCESS_RESPONSE_BYTES
    assert len(kept_failed) == FAILURE_RESPONSE_BYTES
    assert kept_failed.decode() == "é" * (FAILURE_RESPONSE_BYTES // 2)


def test_a_success_is_never_overwritten_except_by_a_replay(bench: DeliveryBench) -> None:
    task = make_task("fetcher.job.completed.j-1")
    assert bench.log.record_attempt(task, DeliveryStatus.SUCCEEDED, attempt(bench))

    assert not bench.log.record_attempt(task, DeliveryStatus.PENDING, attempt(bench, 2, 500))
    assert not bench.log.record_attempt(task, DeliveryStatus.SUCCEEDED, attempt(bench, 2))
    assert bench.log.get(task.delivery_id).attempt_count == 1

    replay = task.model_copy(update={"replay": True})
    assert bench.log.record_attempt(replay, DeliveryStatus.PENDING, attempt(bench, 1, 500))
    assert bench.log.get(task.delivery_id).status is DeliveryStatus.PENDING


def test_a_very_long_log_stops_growing_but_keeps_counting(bench: DeliveryBench) -> None:
    task = make_task("fetcher.job.completed.j-1")
    bench.log.record_attempt(task, DeliveryStatus.PENDING, attempt(bench, 1, 500))

    bench.log.record_attempt(
        task, DeliveryStatus.PENDING, attempt(bench, 2, 500), logged_attempts=MAX_LOGGED_ATTEMPTS
    )

    record = bench.log.get(task.delivery_id)
    assert (len(record.attempts), record.attempt_count) == (1, 2)
