"""The deliver use case end to end: moto's SQS and DynamoDB, real receivers on loopback.

Each test drives the `Deliverer` through the local SQS event source exactly as Lambda would drive
the function: batches from the delivery queue, partial batch responses, visibility for backoff.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from jobhooks import __version__
from jobhooks.delivery.deliver import send_webhook_now
from jobhooks.delivery.model import DeliveryMessage, DeliveryResult, DeliveryStatus
from jobhooks.delivery.parking import ParkingSummary, ParkReason
from jobhooks.delivery.retry_schedule import MAX_RETRY_DELAY_SECONDS, RetrySchedule
from jobhooks.delivery_task import DeliveryTask
from jobhooks.subscriptions import SubscriptionNotFoundError, SubscriptionStatus
from jobhooks_tools.local.template import LocalResources
from standardwebhooks.webhooks import Webhook

from tests.integration.deliver_harness import (
    DeliveryBench,
    Reply,
    attempts_of,
    delivery_bench,
    jittered,
    wait_until,
)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def bench(stack: LocalResources) -> Iterator[DeliveryBench]:
    with delivery_bench(stack) as bench:
        yield bench


def message_for(
    task: DeliveryTask, message_id: str = "m-1", receive_count: int = 1
) -> DeliveryMessage:
    return DeliveryMessage(message_id, "", task.to_json(), receive_count)


# -- what the receiver gets ----------------------------------------------------------------------


def test_receiver_verifies_the_webhook_with_the_one_active_secret(bench: DeliveryBench) -> None:
    receiver = bench.receiver()
    issued = bench.subscribe(receiver)
    task = bench.task(issued)
    bench.enqueue(task)

    stats = bench.run_batch()

    assert (stats.received, stats.succeeded, stats.failed) == (1, 1, 0)
    [request] = receiver.requests
    assert request.body == task.payload.encode("utf-8")  # the exact bytes, not re-serialized
    assert Webhook(issued.secret).verify(request.body, request.headers) is not None
    assert request.headers["webhook-id"] == task.webhook_id
    assert request.headers["user-agent"] == f"jobhooks/{__version__}"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["webhook-timestamp"] == str(int(bench.clock().timestamp()))
    assert len(request.headers["webhook-signature"].split(" ")) == 1
    record = bench.record(task)
    assert record.status is DeliveryStatus.SUCCEEDED
    assert attempts_of(record) == [(1, 200, None)]
    assert record.attempts[0].response == "ok"
    assert bench.queue_depth() == 0


def test_receiver_verifies_the_webhook_with_either_secret_during_a_rotation(
    bench: DeliveryBench,
) -> None:
    receiver = bench.receiver()
    issued = bench.subscribe(receiver)
    rotated = bench.store.rotate_secret(issued.subscription.subscription_id)
    bench.enqueue(bench.task(issued))

    bench.run_batch()

    [request] = receiver.requests
    assert len(request.headers["webhook-signature"].split(" ")) == 2
    Webhook(issued.secret).verify(request.body, request.headers)  # the receiver not yet rotated
    Webhook(rotated.secret).verify(request.body, request.headers)  # the one already rotated


# -- retries ---------------------------------------------------------------------------------------


def test_retries_500_500_then_200_on_the_schedule_and_records_one_success(
    bench: DeliveryBench,
) -> None:
    receiver = bench.receiver(Reply(500, b"boom"), Reply(500, b"boom again"), Reply(200))
    issued = bench.subscribe(receiver)
    task = bench.task(issued)
    bench.enqueue(task)
    started = bench.clock()

    first = bench.run_batch()
    assert (first.succeeded, first.failed) == (0, 1)
    assert bench.fast_forward() == [jittered(5)]
    bench.run_batch()
    assert bench.fast_forward() == [jittered(300)]
    last = bench.run_batch()

    assert (last.succeeded, last.failed) == (1, 0)
    assert receiver.count == 3
    assert {request.headers["webhook-id"] for request in receiver.requests} == {task.webhook_id}
    # A fresh timestamp per attempt: the clock moved by exactly the backoffs.
    assert [int(request.headers["webhook-timestamp"]) for request in receiver.requests] == [
        int(started.timestamp()),
        int(started.timestamp()) + jittered(5),
        int(started.timestamp()) + jittered(5) + jittered(300),
    ]
    record = bench.record(task)
    assert record.status is DeliveryStatus.SUCCEEDED
    assert attempts_of(record) == [(1, 500, None), (2, 500, None), (3, 200, None)]
    assert record.attempts[0].response == "boom"
    assert record.attempt_count == 3
    assert bench.queue_depth() == 0
    assert bench.queue_depth(bench.dlq_url) == 0


def test_retry_after_lengthens_the_delay_but_never_past_the_visibility_cap(
    bench: DeliveryBench,
) -> None:
    receiver = bench.receiver(
        Reply(429, headers={"Retry-After": "120"}),  # longer than 5 s: honoured
        Reply(503, headers={"Retry-After": "1"}),  # shorter than 5 min: the schedule wins
        Reply(503, headers={"Retry-After": "999999"}),  # past 12 h: capped
        Reply(200),
    )
    bench.enqueue(bench.task(bench.subscribe(receiver)))

    delays = []
    for _ in range(3):
        bench.run_batch()
        delays += bench.fast_forward()
    bench.run_batch()

    assert delays == [120, jittered(300), MAX_RETRY_DELAY_SECONDS]
    assert receiver.count == 4


def test_exhausted_retries_are_parked_in_the_dlq_with_the_whole_attempt_log(
    bench: DeliveryBench,
) -> None:
    receiver = bench.receiver(default=Reply(500, b"down for maintenance"))
    task = bench.task(bench.subscribe(receiver))
    bench.enqueue(task)

    delays = []
    for _ in range(8):
        bench.run_batch()
        delays += bench.fast_forward()

    assert receiver.count == 8
    schedule = [5, 300, 1800, 7200, 18000, 36000, 36000]
    assert delays == [min(jittered(seconds), MAX_RETRY_DELAY_SECONDS) for seconds in schedule]
    assert bench.queue_depth() == 0
    [parked] = bench.parked()
    assert parked["Body"] == task.to_json()
    assert len(parked["MessageAttributes"]) <= 3
    assert ParkingSummary.from_message_attributes(parked["MessageAttributes"]) == ParkingSummary(
        ParkReason.ATTEMPTS_EXHAUSTED, 8, "http_500"
    )
    record = bench.record(task)
    assert record.status is DeliveryStatus.PARKED
    assert record.status_reason == "attempts_exhausted"
    assert attempts_of(record) == [(n, 500, None) for n in range(1, 9)]
    assert all(attempt.response == "down for maintenance" for attempt in record.attempts)


def test_a_task_whose_first_attempt_ingest_made_is_attempt_2_on_its_first_receive(
    bench: DeliveryBench,
) -> None:
    receiver = bench.receiver(Reply(500), Reply(200))
    task = bench.task(bench.subscribe(receiver), attempts_made=1)
    bench.enqueue(task)

    first = bench.run_batch()
    assert (first.succeeded, first.failed) == (0, 1)
    # Attempt 2 failed: the delay before attempt 3, not the one before attempt 2.
    assert bench.fast_forward() == [jittered(300)]
    last = bench.run_batch()

    assert (last.succeeded, last.failed) == (1, 0)
    assert attempts_of(bench.record(task)) == [(2, 500, None), (3, 200, None)]


def test_a_two_attempt_schedule_parks_a_task_with_one_attempt_made_after_its_first_receive(
    stack: LocalResources,
) -> None:
    with delivery_bench(stack, schedule=RetrySchedule.parse("0,5")) as bench:
        receiver = bench.receiver(default=Reply(503))
        task = bench.task(bench.subscribe(receiver), attempts_made=1)
        bench.enqueue(task)

        stats = bench.run_batch()

        assert (stats.succeeded, stats.failed) == (1, 0)  # parked: acked
        assert receiver.count == 1
        [parked] = bench.parked()
        summary = ParkingSummary.from_message_attributes(parked["MessageAttributes"])
        assert summary == ParkingSummary(ParkReason.ATTEMPTS_EXHAUSTED, 2, "http_503")
        assert DeliveryTask.from_json(parked["Body"]).attempts_made == 1
        record = bench.record(task)
        assert record.status is DeliveryStatus.PARKED
        assert attempts_of(record) == [(2, 503, None)]


def test_410_gone_disables_the_subscription_and_stops_retrying(bench: DeliveryBench) -> None:
    receiver = bench.receiver(Reply(410, b"this endpoint was removed"))
    issued = bench.subscribe(receiver)
    task = bench.task(issued)
    bench.enqueue(task)

    stats = bench.run_batch()

    assert (stats.succeeded, stats.failed) == (1, 0)  # acked: nothing more to try
    assert bench.sqs.visibility_changes == []
    assert bench.queue_depth() == 0
    record = bench.record(task)
    assert record.status is DeliveryStatus.GONE
    assert attempts_of(record) == [(1, 410, None)]
    subscription = bench.store.get(issued.subscription.subscription_id)
    assert subscription.status is SubscriptionStatus.DISABLED
    assert subscription.disabled_reason is not None and "410" in subscription.disabled_reason

    # Another event for the disabled subscription is kept as skipped, without a POST (for
    # `recover` once the endpoint is back), and acked: nothing goes to the delivery DLQ.
    other = bench.task(issued, event_id="fetcher.job.completed.j-2")
    bench.enqueue(other)
    bench.run_batch()
    assert receiver.count == 1
    skipped = bench.record(other)
    assert (skipped.status, skipped.status_reason) == (
        DeliveryStatus.SKIPPED,
        "subscription_disabled",
    )
    assert skipped.attempts == () and skipped.attempt_count == 0
    assert bench.parked() == [] and bench.queue_depth() == 0


def test_an_endpoint_enabled_again_is_delivered_to_even_while_cached_as_disabled(
    bench: DeliveryBench,
) -> None:
    # A warm function cached the endpoint as disabled; it is enabled and its deliveries
    # recovered a moment later: the recovered task must be POSTed, not skipped again.
    bench.deliverer.close()
    bench.deliverer = bench.make_deliverer(subscription_cache_seconds=3600)
    receiver = bench.receiver()
    issued = bench.subscribe(receiver)
    subscription_id = issued.subscription.subscription_id
    bench.store.disable(subscription_id, "operator")
    skipped = bench.task(issued, event_id="fetcher.job.completed.j-1")
    bench.enqueue(skipped)
    bench.run_batch()
    assert bench.record(skipped).status is DeliveryStatus.SKIPPED
    assert receiver.count == 0

    bench.store.enable(subscription_id)
    recovered = bench.task(issued, event_id="fetcher.job.completed.j-2")
    bench.enqueue(recovered)
    bench.run_batch()

    assert receiver.count == 1
    assert bench.record(recovered).status is DeliveryStatus.SUCCEEDED


def test_a_410_for_a_subscription_deleted_meanwhile_still_ends_the_delivery(
    bench: DeliveryBench,
) -> None:
    receiver = bench.receiver(Reply(200), Reply(410))
    issued = bench.subscribe(receiver)
    deliverer = bench.make_deliverer(subscription_cache_seconds=60)
    try:
        first = bench.task(issued)
        assert deliverer.deliver_task(message_for(first)).result is DeliveryResult.SUCCEEDED
        bench.store.delete(issued.subscription.subscription_id)  # the cached copy lives on
        second = bench.task(issued, event_id="fetcher.job.completed.j-2")

        outcome = deliverer.deliver_task(message_for(second))
    finally:
        deliverer.close()

    assert (outcome.result, outcome.acked) == (DeliveryResult.GONE, True)
    assert bench.record(second).status is DeliveryStatus.GONE


def test_a_302_is_a_failure_and_is_not_followed(bench: DeliveryBench) -> None:
    elsewhere = bench.receiver()
    receiver = bench.receiver(Reply(302, b"", headers={"Location": elsewhere.url}))
    task = bench.task(bench.subscribe(receiver))
    bench.enqueue(task)

    stats = bench.run_batch()

    assert stats.failed == 1
    assert elsewhere.count == 0
    assert bench.sqs.delays == [jittered(5)]
    record = bench.record(task)
    assert record.status is DeliveryStatus.PENDING
    assert attempts_of(record) == [(1, 302, None)]


def test_other_4xx_answers_are_retried_like_any_failure(bench: DeliveryBench) -> None:
    receiver = bench.receiver(Reply(400, b"bad signature?"), Reply(204, b""))
    task = bench.task(bench.subscribe(receiver))
    bench.enqueue(task)

    bench.run_batch()
    bench.fast_forward()
    bench.run_batch()

    assert attempts_of(bench.record(task)) == [(1, 400, None), (2, 204, None)]


# -- hostile receivers -----------------------------------------------------------------------------


def test_a_receiver_that_hangs_is_cut_off_at_the_timeout(stack: LocalResources) -> None:
    with delivery_bench(stack, timeout_seconds=1.0) as bench:
        receiver = bench.receiver(Reply(hang=True))
        task = bench.task(bench.subscribe(receiver))
        bench.enqueue(task)

        started = time.monotonic()
        stats = bench.run_batch()
        elapsed = time.monotonic() - started

        assert stats.failed == 1
        assert elapsed < 3.0
        [attempt] = bench.record(task).attempts
        assert (attempt.status_code, attempt.error) == (None, "timeout")
        assert 900 <= attempt.latency_ms < 2500
        assert bench.sqs.delays == [jittered(5)]


def test_a_receiver_streaming_a_huge_body_is_cut_off_at_the_read_cap(
    bench: DeliveryBench,
) -> None:
    huge = 64 * 1024 * 1024
    receiver = bench.receiver(Reply(500, stream_bytes=huge))
    task = bench.task(bench.subscribe(receiver))
    bench.enqueue(task)

    bench.run_batch()

    [attempt] = bench.record(task).attempts
    assert (attempt.status_code, attempt.error) == (500, None)
    assert attempt.latency_ms < 4000  # ended by the read cap, not by the 5 s deadline
    assert 0 < len(attempt.response.encode()) <= 1024  # what the log keeps of a failure
    wait_until(lambda: receiver.requests[0].answered_at is not None)
    assert receiver.requests[0].bytes_sent < huge  # the bridge hung up long before the end


# -- duplicates and replays ------------------------------------------------------------------------


def test_a_duplicate_task_after_a_recorded_success_is_not_posted_again(
    bench: DeliveryBench,
) -> None:
    receiver = bench.receiver()
    task = bench.task(bench.subscribe(receiver))
    bench.enqueue(task)
    bench.run_batch()

    bench.enqueue(task)  # ingest fanned the same event out again
    stats = bench.run_batch()

    assert (stats.received, stats.succeeded) == (1, 1)
    assert receiver.count == 1
    record = bench.record(task)
    assert attempts_of(record) == [(1, 200, None)]


def test_a_replay_is_posted_again_but_only_once(bench: DeliveryBench) -> None:
    receiver = bench.receiver()
    task = bench.task(bench.subscribe(receiver))
    bench.enqueue(task)
    bench.run_batch()

    replay = task.model_copy(update={"replay": True})
    message = DeliveryMessage("m-replay", "", replay.to_json(), receive_count=1)
    assert bench.deliverer.deliver_task(message).result is DeliveryResult.SUCCEEDED
    # The same replay message handed back by SQS (its ack was lost) is not POSTed again.
    redelivered = DeliveryMessage("m-replay", "", replay.to_json(), receive_count=2)
    assert bench.deliverer.deliver_task(redelivered).result is DeliveryResult.DUPLICATE

    assert receiver.count == 2
    assert attempts_of(bench.record(task)) == [(1, 200, None), (1, 200, None)]


def test_a_late_failure_of_a_duplicate_never_overwrites_the_success(bench: DeliveryBench) -> None:
    receiver = bench.receiver(Reply(200), Reply(503))
    task = bench.task(bench.subscribe(receiver))
    body = task.to_json()
    first = DeliveryMessage("m-1", "", body, receive_count=1)
    second = DeliveryMessage("m-2", "", body, receive_count=1)
    # Both copies read "not delivered yet" before either recorded: the race a duplicate allows.
    bench.log.find = lambda delivery_id: None  # type: ignore[method-assign]

    assert bench.deliverer.deliver_task(first).result is DeliveryResult.SUCCEEDED
    outcome = bench.deliverer.deliver_task(second)

    assert outcome.result is DeliveryResult.DUPLICATE and outcome.acked
    assert bench.sqs.visibility_changes == []
    del bench.log.find
    assert bench.record(task).status is DeliveryStatus.SUCCEEDED


# -- concurrency -----------------------------------------------------------------------------------


def test_a_slow_endpoint_does_not_hold_back_a_fast_one_in_the_same_batch(
    bench: DeliveryBench,
) -> None:
    slow = bench.receiver(Reply(200, delay=2.0))
    fast = bench.receiver(Reply(200))
    slow_task = bench.task(bench.subscribe(slow))
    fast_task = bench.task(bench.subscribe(fast))
    bench.enqueue(slow_task, fast_task)

    batch = threading.Thread(target=bench.run_batch)
    batch.start()
    try:
        wait_until(lambda: bench.fully_written(fast_task), 1.5)
        # The fast one is on record while the slow receiver is still sleeping on its request.
        assert bench.record(fast_task).status is DeliveryStatus.SUCCEEDED
        assert slow.count == 1 and slow.requests[0].answered_at is None
    finally:
        batch.join(10)
    assert bench.record(slow_task).status is DeliveryStatus.SUCCEEDED
    assert bench.record(fast_task).updated_at <= bench.record(slow_task).updated_at


def test_a_batch_hides_its_retries_in_one_call_each_back_when_the_schedule_says(
    bench: DeliveryBench,
) -> None:
    fails_at_once = [bench.receiver(Reply(500)) for _ in range(3)]
    fails_late = bench.receiver(Reply(500, delay=1.5))
    tasks = [bench.task(bench.subscribe(r)) for r in [*fails_at_once, fails_late]]
    bench.enqueue(*tasks)

    started = time.monotonic()
    stats = bench.run_batch()
    elapsed = time.monotonic() - started

    assert stats.failed == 4
    assert bench.sqs.visibility_calls == 1  # not one per retried message
    delays = {
        change["ReceiptHandle"]: int(change["VisibilityTimeout"])
        for change in bench.sqs.visibility_changes
    }
    assert len(delays) == 4
    # The late one settled as the batch ended: its whole delay. The others waited for it, and
    # that wait (whole seconds) is taken off theirs, so each comes back 5 s after its attempt.
    assert sorted(delays.values())[-1] == jittered(5)
    for waited in sorted(jittered(5) - delay for delay in delays.values())[1:]:
        assert 1 <= waited <= elapsed


def test_a_batch_to_ten_one_second_endpoints_takes_about_one_second(
    bench: DeliveryBench,
) -> None:
    receivers = [bench.receiver(Reply(200, delay=1.0)) for _ in range(10)]
    tasks = [bench.task(bench.subscribe(receiver)) for receiver in receivers]
    bench.enqueue(*tasks)

    started = time.monotonic()
    stats = bench.run_batch()
    elapsed = time.monotonic() - started

    assert stats.succeeded == 10
    assert elapsed < 2.5, f"a batch of ten 1 s POSTs took {elapsed:.2f} s"


def test_a_record_that_cannot_finish_in_the_invocation_is_not_started(
    bench: DeliveryBench,
) -> None:
    receiver = bench.receiver()
    bench.enqueue(bench.task(bench.subscribe(receiver)))
    [message] = bench.raw_sqs.receive_message(
        QueueUrl=bench.queue_url, AttributeNames=["All"], WaitTimeSeconds=0
    )["Messages"]
    record = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": {"ApproximateReceiveCount": "1"},
    }

    response = bench.deliverer.deliver_batch({"Records": [record]}, remaining_ms=lambda: 3000)

    assert response == {"batchItemFailures": [{"itemIdentifier": message["MessageId"]}]}
    assert receiver.count == 0


# -- tasks that cannot be delivered ----------------------------------------------------------------


def test_a_message_that_is_not_a_delivery_task_is_parked(bench: DeliveryBench) -> None:
    bench.enqueue('{"format": "something/else"}')

    stats = bench.run_batch()

    assert stats.succeeded == 1
    [parked] = bench.parked()
    assert parked["Body"] == '{"format": "something/else"}'
    summary = ParkingSummary.from_message_attributes(parked["MessageAttributes"])
    assert summary is not None and summary.reason is ParkReason.INVALID_TASK


def test_a_deleted_subscription_ends_the_delivery_as_failed_without_a_post(
    bench: DeliveryBench,
) -> None:
    receiver = bench.receiver()
    issued = bench.subscribe(receiver)
    task = bench.task(issued)
    bench.store.delete(issued.subscription.subscription_id)
    bench.enqueue(task)

    bench.run_batch()

    assert receiver.count == 0
    record = bench.record(task)
    assert (record.status, record.status_reason) == (
        DeliveryStatus.FAILED,
        "subscription_not_found",
    )
    assert bench.queue_depth() == 0


def test_a_task_naming_another_tenants_subscription_is_never_posted(bench: DeliveryBench) -> None:
    receiver = bench.receiver()
    task = bench.task(bench.subscribe(receiver, tenant="globex"))
    bench.enqueue(task.model_copy(update={"tenant_id": "acme"}))

    bench.run_batch()

    assert receiver.count == 0
    assert bench.record(task).status_reason == "tenant_mismatch"


# -- test send -------------------------------------------------------------------------------------


def test_send_webhook_now_posts_once_and_returns_the_attempt(bench: DeliveryBench) -> None:
    receiver = bench.receiver(Reply(202, b"queued"))
    issued = bench.subscribe(receiver)

    sent = send_webhook_now(
        issued.subscription.subscription_id,
        '{"type":"jobhooks.test","data":{}}',
        subscriptions=bench.store,
        client=bench.deliverer._client,
        tenant_id="acme",
    )

    assert (sent.attempt.status_code, sent.attempt.response) == (202, "queued")
    [request] = receiver.requests
    assert request.headers["webhook-id"] == sent.webhook_id
    assert "." not in sent.webhook_id
    Webhook(issued.secret).verify(request.body, request.headers)
    assert bench.queue_depth() == 0
    with pytest.raises(SubscriptionNotFoundError):
        send_webhook_now(
            issued.subscription.subscription_id,
            "{}",
            subscriptions=bench.store,
            client=bench.deliverer._client,
            tenant_id="globex",
        )
