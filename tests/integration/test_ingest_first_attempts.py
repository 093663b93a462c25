"""Ingest makes the first attempt of every delivery (docs/delivery.md, "The first attempt").

Real components throughout: the ingest service as the ingest function's wiring builds it
(`build_ingest_service(..., first_attempts=True)`) over moto's server and the resources of
template.yaml (`stack`), receivers on loopback (`deliver_harness.Receiver`), signatures checked
with `standardwebhooks`, and the deliver function's `Deliverer` driven through the local SQS
event source for what ingest leaves to it. Only the breaker's clock is a test's own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from jobhooks.delivery.circuit_breaker import CircuitBreaker
from jobhooks.delivery.first_attempts import FirstAttemptLog
from jobhooks.delivery.model import DeliveryOutcome, DeliveryResult, DeliveryStatus
from jobhooks.delivery.settings import DeliverSettings
from jobhooks.delivery.wiring import build_deliverer
from jobhooks.delivery_task import DeliveryTask, delivery_id_for
from jobhooks.ingest.claims import ClaimStore
from jobhooks.ingest.inbound import InboundMessage
from jobhooks.ingest.model import IngestOutcome, IngestResult
from jobhooks.ingest.service import IngestService
from jobhooks.ingest.settings import IngestSettings
from jobhooks.ingest.wiring import build_ingest_service
from jobhooks.subscriptions import SubscriptionStatus
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.local.event_source import BatchStats, SqsEventSource
from jobhooks_tools.local.template import LocalResources
from jobhooks_tools.sample_events import SampleEvent, demo_key, make_job_event
from standardwebhooks.webhooks import Webhook

from tests.integration.api_support import load_function
from tests.integration.deliver_harness import (
    DeliveryBench,
    Receiver,
    Reply,
    attempts_of,
    delivery_bench,
)
from tests.integration.test_deliver_subscription_cache import AwsCalls

pytestmark = pytest.mark.timeout(90)

# The ingest function's Timeout in template.yaml: the phase is not cut by the writes' margin.
REMAINING_MS = 30_000


class BreakerClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class PageWriteFault:
    """Refuses the next `times` calls of `operation` (BatchWriteItem: the pages) of the ingest's
    clients; with `key`, only those whose request holds that text (a batch's attempts settle
    concurrently, so "the next call" would be whichever event's write came first)."""

    times: int = 0
    operation: str = "BatchWriteItem"
    calls: int = field(default=0)
    key: str | None = None

    def before_call(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if model.name != self.operation:
            return
        self.calls += 1
        if self.key is not None and self.key not in str(params.get("body", "")):
            return
        if self.times > 0:
            self.times -= 1
            raise ClientError(
                {"Error": {"Code": "InternalServerError", "Message": "injected"}}, model.name
            )


@dataclass
class World:
    stack: LocalResources
    bench: DeliveryBench
    ingest: IngestService
    breaker_clock: BreakerClock
    faults: PageWriteFault

    def event(self, tenant_id: str = "acme", **options: Any) -> SampleEvent:
        return make_job_event(demo_key(), tenant_id=tenant_id, **options)

    def run(self, *events: SampleEvent) -> list[IngestResult | Exception]:
        messages = [
            InboundMessage(
                body=event.forwarded().to_json(),
                message_id=f"m-{n}",
                sent_at=datetime.now(UTC),
            )
            for n, event in enumerate(events)
        ]
        return self.ingest.ingest_messages(messages, remaining_ms=REMAINING_MS)

    def queued(self) -> list[DeliveryTask]:
        """The tasks on the delivery queue that are visible now (removed from it)."""
        tasks = []
        while True:
            messages = self.bench.raw_sqs.receive_message(
                QueueUrl=self.bench.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
            ).get("Messages", [])
            if not messages:
                return tasks
            for message in messages:
                tasks.append(DeliveryTask.from_json(message["Body"]))
                self.bench.raw_sqs.delete_message(
                    QueueUrl=self.bench.queue_url, ReceiptHandle=message["ReceiptHandle"]
                )

    def delayed(self) -> int:
        attributes = self.bench.raw_sqs.get_queue_attributes(
            QueueUrl=self.bench.queue_url, AttributeNames=["ApproximateNumberOfMessagesDelayed"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessagesDelayed"])

    def claim_batch(self, event_id: str) -> str:
        item = self.bench.dynamodb.get_item(
            TableName=self.stack.table_name("ClaimsTable"),
            Key={"event_id": {"S": event_id}},
            ConsistentRead=True,
        )["Item"]
        return str(item["batch_id"]["S"])

    def claim_state(self, event_id: str) -> str | None:
        claims = ClaimStore(
            self.stack.table_name("ClaimsTable"), self.bench.dynamodb, retention_seconds=86_400
        )
        record = claims.get(event_id)
        return None if record is None else record.state.value

    def pages(self) -> FirstAttemptLog:
        return FirstAttemptLog(self.stack.table_name("FirstAttemptsTable"), self.bench.dynamodb)

    def drain_spill(self) -> BatchStats:
        """Run the spill function (functions/spill/app.py, loaded afresh: it reads its settings
        at import) on what the spill queue holds now, as Lambda's event source runs it."""
        return SqsEventSource(
            self.stack.queue_url("SpillQueue"),
            load_function("spill").handler,
            sqs_client=self.bench.raw_sqs,
            strict_responses=True,
            wait_time_seconds=0,
            function_timeout_seconds=10,
        ).run_until_idle(20, include_in_flight=True)

    def delivery_items(self) -> int:
        return int(
            self.bench.dynamodb.scan(TableName=self.bench.deliveries_table, Select="COUNT")["Count"]
        )


def event_id_of(event: SampleEvent) -> str:
    value = event.headers["ce-id"]
    assert isinstance(value, bytes)
    return value.decode()


@pytest.fixture
def world_factory(stack: LocalResources, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    worlds: list[World] = []
    benches: list[Any] = []

    def make(*, spill: bool = False, **variables: str) -> World:
        monkeypatch.setenv("JOBHOOKS_ALLOW_PRIVATE_WEBHOOKS", "true")
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        context = delivery_bench(stack)
        bench = context.__enter__()
        benches.append(context)
        session = boto3.session.Session()
        faults = PageWriteFault()
        session.events.register("before-call", faults.before_call)
        ingest = build_ingest_service(
            IngestSettings.from_env(), session=session, first_attempts=True, spill=spill
        )
        assert ingest.first_attempts is not None
        clock = BreakerClock()
        ingest.first_attempts.dispatcher.breaker = CircuitBreaker(monotonic=clock)
        world = World(stack, bench, ingest, clock, faults)
        worlds.append(world)
        return world

    yield make
    for world in worlds:
        assert world.ingest.first_attempts is not None
        world.ingest.first_attempts.dispatcher.close()
    for context in benches:
        context.__exit__(None, None, None)


@pytest.fixture
def world(world_factory: Any) -> World:
    made: World = world_factory()
    return made


def verified_ids(receiver: Receiver, secret: str) -> list[str]:
    ids = []
    for request in receiver.requests:
        Webhook(secret).verify(request.body, request.headers)
        ids.append(request.headers["webhook-id"])
    return ids


def accepted(results: Sequence[IngestResult | Exception]) -> bool:
    return all(
        isinstance(result, IngestResult) and result.outcome is IngestOutcome.ACCEPTED
        for result in results
    )


# -- every first attempt succeeds -------------------------------------------------------------


def test_a_batch_for_two_subscriptions_is_delivered_by_ingest_with_nothing_queued(
    world: World,
) -> None:
    first, second = world.bench.receiver(), world.bench.receiver()
    one, two = world.bench.subscribe(first), world.bench.subscribe(second)
    events = [world.event() for _ in range(3)]

    results = world.run(*events)

    assert accepted(results)
    expected = sorted(webhook_id_for(event_id_of(event)) for event in events)
    assert sorted(verified_ids(first, one.secret)) == expected
    assert sorted(verified_ids(second, two.secret)) == expected
    assert world.queued() == [] and world.delayed() == 0
    assert world.delivery_items() == 0
    batch_id = world.claim_batch(event_id_of(events[0]))
    assert {world.claim_batch(event_id_of(event)) for event in events} == {batch_id}
    for issued in (one, two):
        subscription_id = issued.subscription.subscription_id
        [stored] = world.pages().newest(subscription_id)
        assert stored.page.batch_id == batch_id
        assert sorted(s.event_id for s in stored.page.successes) == sorted(
            event_id_of(event) for event in events
        )
        assert {s.status_code for s in stored.page.successes} == {200}
        record = stored.records()[0]
        assert record.delivery_id == delivery_id_for(record.event_id, subscription_id)


# -- a failed first attempt goes to the deliver function ---------------------------------------


def test_a_failed_first_attempt_is_recorded_and_the_deliver_function_makes_attempt_2(
    world_factory: Any,
) -> None:
    # Attempt 2 one second after attempt 1, so that the test waits for the real DelaySeconds.
    world = world_factory(JOBHOOKS_RETRY_SCHEDULE="0,1,300")
    receiver = world.bench.receiver(Reply(500, b"boom"), Reply(200))
    issued = world.bench.subscribe(receiver)
    event = world.event()

    assert accepted(world.run(event))

    delivery_id = delivery_id_for(event_id_of(event), issued.subscription.subscription_id)
    record = world.bench.log.find(delivery_id)
    assert record is not None
    assert record.status is DeliveryStatus.PENDING
    assert attempts_of(record) == [(1, 500, None)]
    assert world.queued() == []  # hidden for the schedule's delay after attempt 1
    assert world.delayed() == 1
    time.sleep(1.5)
    stats = world.bench.run_batch()

    assert (stats.succeeded, stats.failed) == (1, 0)
    record = world.bench.log.find(delivery_id)
    assert record is not None
    assert record.status is DeliveryStatus.SUCCEEDED
    assert attempts_of(record) == [(1, 500, None), (2, 200, None)]
    assert verified_ids(receiver, issued.secret) == [webhook_id_for(event_id_of(event))] * 2
    assert world.pages().newest(issued.subscription.subscription_id) == []


# -- tenants apart: the deadline, concurrency and the breaker ----------------------------------


def test_a_hanging_receiver_neither_delays_another_nor_costs_the_next_batches_a_deadline(
    world_factory: Any,
) -> None:
    # A deadline far from the 1 s latency budget, so that a loaded machine's slower batch is
    # never mistaken for one that waited for the deadline.
    world = world_factory(JOBHOOKS_FIRST_ATTEMPT_SECONDS="4")
    slow = world.bench.receiver(default=Reply(hang=True))
    fast = world.bench.receiver()
    hanging = world.bench.subscribe(slow, tenant="slowcorp")
    quick = world.bench.subscribe(fast, tenant="acme")
    slow_event, fast_event = world.event("slowcorp"), world.event("acme")

    dispatcher = world.ingest.first_attempts.dispatcher
    started = time.monotonic()
    assert accepted(world.run(slow_event, fast_event))
    returned = time.monotonic()
    with dispatcher._in_flight_lock:
        still_running = dict(dispatcher._in_flight.get(hanging.subscription.subscription_id, {}))

    # The hanging POST is left behind, not waited for: the batch ended while it was still
    # running, and its own timeout is the phase's deadline (4 s after the batch began), so
    # the batch ended before the deadline, measured from the POST's start (load that delays
    # the batch delays the POST's start as much). A batch that waited for the deadline would
    # find the POST ended.
    assert len(still_running) == 1, "the batch waited until the hanging POST ended"
    [post_started] = still_running.values()
    assert returned < post_started + 4.0
    # It ran past the latency budget (1 s) first: load can only lengthen this.
    assert returned - started > 1.0
    # The quick tenant's POST was made and answered within the batch, while the hanging one
    # was still running: had it waited behind it, it would not have been made at all (a POST
    # not started when the batch leaves is withdrawn and its task goes to the queue).
    [request] = fast.requests
    assert request.received_at < returned
    [hung] = slow.requests
    assert hung.received_at < returned
    assert slow.count == 1
    record = world.bench.log.find(
        delivery_id_for(event_id_of(slow_event), hanging.subscription.subscription_id)
    )
    assert record is not None and attempts_of(record) == [(1, None, "timeout")]
    assert world.delayed() == 1  # the slow one's task, for the deliver function
    assert quick.subscription.subscription_id not in {t.subscription_id for t in world.queued()}

    # The breaker is open: no POST (the slow receiver's count stays 1), no wait for the budget
    # or the deadline, the task goes straight to the queue with no attempt made.
    assert dispatcher.breaker.is_open(hanging.subscription.subscription_id)
    started = time.monotonic()
    again = world.event("slowcorp")
    assert accepted(world.run(again, world.event("acme")))
    # The one bound left: a batch that waited for the deadline takes at least its 4 s however
    # idle the machine; this batch (a few reads and writes of moto's server, one quick POST)
    # takes well under a second idle and under 2 s at load 15.
    assert time.monotonic() - started < 4.0
    assert slow.count == 1
    assert fast.count == 2
    # (The first batch's task, delayed, may have become visible meanwhile on a slow machine.)
    [task] = [task for task in world.queued() if task.attempts_made == 0]
    assert task.event_id == event_id_of(again)

    # Once the breaker's time has passed, and the POST left behind has ended (its own timeout),
    # the slow receiver gets a first attempt again.
    deadline = time.monotonic() + 20
    while dispatcher._in_flight:
        assert time.monotonic() < deadline, "the POST left behind never ended"
        time.sleep(0.05)
    world.breaker_clock.now += 61
    assert accepted(world.run(world.event("slowcorp")))
    assert slow.count == 2


# -- 410, disabled subscriptions ----------------------------------------------------------------


def test_a_410_on_the_first_attempt_disables_the_subscription_and_enqueues_nothing(
    world: World,
) -> None:
    receiver = world.bench.receiver(Reply(410, b"gone"))
    issued = world.bench.subscribe(receiver)
    event = world.event()

    assert accepted(world.run(event))

    subscription_id = issued.subscription.subscription_id
    assert world.bench.store.get(subscription_id).status is SubscriptionStatus.DISABLED
    record = world.bench.log.find(delivery_id_for(event_id_of(event), subscription_id))
    assert record is not None
    assert record.status is DeliveryStatus.GONE
    assert attempts_of(record) == [(1, 410, None)]
    assert world.queued() == [] and world.delayed() == 0
    # The next batch no longer matches it (the 410 cleared ingest's matching cache).
    assert accepted(world.run(world.event()))
    assert receiver.count == 1 and world.queued() == []


def test_a_disabled_subscriptions_delivery_is_recorded_skipped_with_no_post_and_no_task(
    world: World,
) -> None:
    receiver = world.bench.receiver()
    issued = world.bench.subscribe(receiver)
    subscription_id = issued.subscription.subscription_id
    world.bench.store.disable(subscription_id, "disabled by the tenant")
    # The wiring's matcher finds disabled subscriptions too (one Query either way).
    event = world.event()

    assert accepted(world.run(event))

    assert receiver.count == 0
    record = world.bench.log.find(delivery_id_for(event_id_of(event), subscription_id))
    assert record is not None
    assert (record.status, record.status_reason) == (
        DeliveryStatus.SKIPPED,
        "subscription_disabled",
    )
    assert record.attempt_count == 0
    assert world.queued() == [] and world.bench.parked() == []
    assert receiver.count == 0


# -- failures after the POSTs, retries and duplicates -------------------------------------------


def test_a_page_write_failure_is_spilled_and_the_webhook_goes_out_once(
    world_factory: Any,
) -> None:
    # As the ingest function is wired: with the spill queue of template.yaml.
    world = world_factory(spill=True)
    receiver = world.bench.receiver()
    issued = world.bench.subscribe(receiver)
    event = world.event()
    world.faults.times = 1

    [result] = world.run(event)

    # The event is done: nothing retries it, so its webhook is not POSTed again.
    assert isinstance(result, IngestResult) and result.outcome is IngestOutcome.ACCEPTED
    assert world.claim_state(event_id_of(event)) == "done"
    assert receiver.count == 1
    assert world.pages().newest(issued.subscription.subscription_id) == []

    # The spill function writes the page: the delivery's history is whole again.
    drained = world.drain_spill()
    assert (drained.received, drained.succeeded, drained.failed) == (1, 1, 0)
    [stored] = world.pages().newest(issued.subscription.subscription_id)
    assert [s.event_id for s in stored.page.successes] == [event_id_of(event)]
    assert stored.page.batch_id == world.claim_batch(event_id_of(event))
    assert receiver.count == 1 and world.queued() == []


def test_without_a_spill_queue_a_page_write_failure_retries_and_posts_again_with_the_same_id(
    world: World,
) -> None:
    receiver = world.bench.receiver()
    issued = world.bench.subscribe(receiver)
    event = world.event()
    world.faults.times = 1

    [failed] = world.run(event)

    assert isinstance(failed, Exception)
    assert receiver.count == 1
    assert world.claim_state(event_id_of(event)) is None  # released: the retry starts at once

    [retried] = world.run(event)

    assert isinstance(retried, IngestResult) and retried.outcome is IngestOutcome.ACCEPTED
    webhook_id = webhook_id_for(event_id_of(event))
    assert verified_ids(receiver, issued.secret) == [webhook_id, webhook_id]
    assert world.claim_state(event_id_of(event)) == "done"
    [stored] = world.pages().newest(issued.subscription.subscription_id)
    assert [s.event_id for s in stored.page.successes] == [event_id_of(event)]
    assert world.queued() == [] and world.delivery_items() == 0

    # A duplicate of the done event makes no POST.
    [duplicate] = world.run(event)

    assert isinstance(duplicate, IngestResult) and duplicate.outcome is IngestOutcome.DUPLICATE
    assert receiver.count == 2


def test_an_event_whose_failed_attempt_cannot_be_recorded_retries_and_is_paged_only_then(
    world: World,
) -> None:
    fine, failing = world.bench.receiver(), world.bench.receiver(default=Reply(500))
    ok, bad = world.bench.subscribe(fine), world.bench.subscribe(failing)
    first, second = world.event(), world.event()
    # The first event's failed attempt's record (an UpdateItem on DeliveriesTable) is refused.
    world.faults.operation, world.faults.times = "UpdateItem", 1
    world.faults.key = delivery_id_for(event_id_of(first), bad.subscription.subscription_id)

    results = world.run(first, second)

    assert [isinstance(result, Exception) for result in results] == [True, False]
    [page] = world.pages().newest(ok.subscription.subscription_id)
    # Only the event that will not be retried: the other one pages its success when it is.
    assert [s.event_id for s in page.page.successes] == [event_id_of(second)]
    assert world.claim_state(event_id_of(first)) is None

    world.breaker_clock.now += 61  # the failing receiver's circuit opened: let it close
    assert accepted(world.run(first))

    newest, older = world.pages().newest(ok.subscription.subscription_id)
    assert [s.event_id for s in newest.page.successes] == [event_id_of(first)]
    assert older == page
    record = world.bench.log.find(
        delivery_id_for(event_id_of(first), bad.subscription.subscription_id)
    )
    assert record is not None and attempts_of(record) == [(1, 500, None)]


# -- re-fan-outs: the deliver function's duplicate check reads the pages -----------------------


class RecordedOutcomes:
    """The deliver function's metrics port, keeping what each batch ended as."""

    def __init__(self) -> None:
        self.outcomes: list[DeliveryOutcome] = []

    def record_outcomes(self, outcomes: Sequence[DeliveryOutcome]) -> None:
        self.outcomes.extend(outcomes)


def deliver_function(world: World) -> RecordedOutcomes:
    """Run the bench's queue through the deliver function as its wiring builds it from the
    template's environment (the `stack` fixture's variables), instead of the bench's own."""
    recorded = RecordedOutcomes()
    world.bench.deliverer.close()
    world.bench.deliverer = build_deliverer(DeliverSettings.from_env(), metrics=recorded)
    return recorded


def test_a_refan_out_of_a_first_attempt_success_is_a_duplicate_and_makes_no_second_post(
    world: World,
) -> None:
    receiver = world.bench.receiver()
    issued = world.bench.subscribe(receiver)
    event = world.event()
    assert accepted(world.run(event))
    assert receiver.count == 1 and world.delivery_items() == 0
    recorded = deliver_function(world)

    # A management re-fan-out (POST /events/{id}/refan-out without replay).
    world.ingest.refan_out(event_id_of(event))
    stats = world.bench.run_batch()

    assert (stats.received, stats.succeeded, stats.failed) == (1, 1, 0)
    delivery_id = delivery_id_for(event_id_of(event), issued.subscription.subscription_id)
    assert [(o.result, o.delivery_id) for o in recorded.outcomes] == [
        (DeliveryResult.DUPLICATE, delivery_id)
    ]
    assert receiver.count == 1
    assert world.delivery_items() == 0
    assert world.bench.queue_depth() == 0


def test_a_replayed_refan_out_of_a_first_attempt_success_posts_it_again(world: World) -> None:
    receiver = world.bench.receiver()
    issued = world.bench.subscribe(receiver)
    event = world.event()
    assert accepted(world.run(event))
    recorded = deliver_function(world)

    world.ingest.refan_out(event_id_of(event), replay=True)
    world.bench.run_batch()

    assert [o.result for o in recorded.outcomes] == [DeliveryResult.SUCCEEDED]
    assert verified_ids(receiver, issued.secret) == [webhook_id_for(event_id_of(event))] * 2
    delivery_id = delivery_id_for(event_id_of(event), issued.subscription.subscription_id)
    record = world.bench.log.find(delivery_id)
    assert record is not None and record.status is DeliveryStatus.SUCCEEDED


def test_a_task_of_another_subscription_than_the_pages_is_posted(world: World) -> None:
    # The page holds the first subscription's success only: the second one's task, which
    # ingest did not attempt (its subscription was made after the event), is delivered.
    first = world.bench.receiver()
    world.bench.subscribe(first)
    event = world.event()
    assert accepted(world.run(event))
    second = world.bench.receiver()
    issued = world.bench.subscribe(second)
    recorded = deliver_function(world)

    world.ingest.refan_out(event_id_of(event))
    world.bench.run_batch()

    assert sorted(o.result.value for o in recorded.outcomes) == sorted(
        [DeliveryResult.DUPLICATE.value, DeliveryResult.SUCCEEDED.value]
    )
    assert first.count == 1
    assert verified_ids(second, issued.secret) == [webhook_id_for(event_id_of(event))]


def test_a_batch_of_re_fanned_out_successes_reads_records_claims_and_pages_once_each(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two events delivered by ingest's first attempts to two subscriptions each: their
    # re-fan-outs are four tasks without a record, whose duplicate checks read together.
    receivers = [world.bench.receiver(), world.bench.receiver()]
    for receiver in receivers:
        world.bench.subscribe(receiver)
    events = [world.event(), world.event()]
    assert accepted(world.run(*events))
    assert [receiver.count for receiver in receivers] == [2, 2]
    recorded = deliver_function(world)
    for event in events:
        world.ingest.refan_out(event_id_of(event))
    calls = AwsCalls(monkeypatch)

    calls.counting = True
    stats = world.bench.run_batch()
    calls.counting = False

    assert (stats.received, stats.succeeded) == (4, 4)
    assert [o.result for o in recorded.outcomes] == [DeliveryResult.DUPLICATE] * 4
    assert [receiver.count for receiver in receivers] == [2, 2]
    tables = {
        logical: world.stack.table_name(logical)
        for logical in ("DeliveriesTable", "ClaimsTable", "FirstAttemptsTable")
    }
    # No GetItem: one read of the records, one of the claims, one of the pages.
    assert {call: n for call, n in calls.counted.items() if call[1] in tables.values()} == {
        ("BatchGetItem", table): 1 for table in tables.values()
    }
