"""The rule of the SQS sender: ack an entry only when SQS accepted that entry.

In-memory fakes stand in for the broker side (an owner recording acks and parks) and for SQS
(a client answering scripted results); the integration suite runs the same rule for real.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pika
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from jobhooks_tools.shovel.forwarding import Delivery, SqsEntry
from jobhooks_tools.shovel.metrics import ShovelMetrics
from jobhooks_tools.shovel.outbox import Outbox, PendingDelivery
from jobhooks_tools.shovel.settings import load_settings
from jobhooks_tools.shovel.sqs_sender import MAX_SENDER_FAULTS, SqsSender, SqsStatus

SETTINGS = load_settings(
    {
        "amqp_url": "amqp://guest:guest@127.0.0.1:5672/%2F",
        "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/ingest",
        "retry_max_delay_seconds": "0.01",
    },
    {},
)


class RecordingOwner:
    """The broker side: records acks and parks and settles them, like the AMQP consumer."""

    vhost = "/"

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox
        self.acked: list[int] = []
        self.parked: list[tuple[int, str, str]] = []
        self.open_generation = 1

    def holds(self, generation: int) -> bool:
        return generation == self.open_generation

    def acknowledge(self, deliveries: Sequence[PendingDelivery]) -> None:
        self.acked += [item.delivery_tag for item in deliveries]
        self.outbox.settle(deliveries)

    def park(self, deliveries: Sequence[PendingDelivery], reason: str, detail: str) -> None:
        self.parked += [(item.delivery_tag, reason, detail) for item in deliveries]
        self.outbox.settle(deliveries)


class PacedClock:
    """A monotonic clock the test moves: the outbox's linger is measured on it."""

    def __init__(self) -> None:
        self._now = 1_000.0
        self._lock = threading.Condition()
        self._reads = 0

    def __call__(self) -> float:
        with self._lock:
            self._reads += 1
            self._lock.notify_all()
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds

    def advance_when_waited(self, seconds: float) -> None:
        """Advances once the outbox has read the clock twice more (its deadline, then the time
        left before it waits), so the advance lands while it lingers."""
        with self._lock:
            start = self._reads
            self._lock.wait_for(lambda: self._reads >= start + 2, timeout=10)
            self._now += seconds


def broker_side() -> tuple[RecordingOwner, Outbox]:
    outbox = Outbox(10, 1_048_576)
    return RecordingOwner(outbox), outbox


class ScriptedSqs:
    """Answers each SendMessageBatch with the next scripted behaviour."""

    def __init__(self, *script: Any) -> None:
        self.script = list(script)
        self.calls: list[list[dict[str, Any]]] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(Entries)
        step = self.script.pop(0) if self.script else "accept"
        if isinstance(step, Exception):
            raise step
        if step == "accept":
            return {"Successful": [{"Id": entry["Id"]} for entry in Entries], "Failed": []}
        return step(Entries)


def pending(owner: RecordingOwner, tag: int, size: int = 100) -> PendingDelivery:
    delivery = Delivery("/", "fetcher.job.events", "job.completed", False, b"{}", None)
    return PendingDelivery(owner, 1, tag, delivery, SqsEntry(f"body-{tag}", {}, size))


def sender(outbox: Outbox, client: ScriptedSqs) -> tuple[SqsSender, ShovelMetrics]:
    metrics = ShovelMetrics()
    return (
        SqsSender(0, outbox, client, SETTINGS, metrics, SqsStatus(), threading.Event()),
        metrics,
    )


def fail_entries(*indexes: int, sender_fault: bool = False) -> Any:
    def answer(entries: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "Successful": [{"Id": e["Id"]} for e in entries if int(e["Id"]) not in indexes],
            "Failed": [
                {"Id": e["Id"], "SenderFault": sender_fault, "Code": "X", "Message": "refused"}
                for e in entries
                if int(e["Id"]) in indexes
            ],
        }

    return answer


def run_until_settled(outbox: Outbox, worker: SqsSender) -> None:
    outbox.close()
    worker.start()
    assert outbox.wait_until_settled(5)
    worker.join(5)


def test_entries_failed_inside_a_200_are_not_acked_but_retried() -> None:
    owner, outbox = broker_side()
    for tag in range(1, 6):
        outbox.put(pending(owner, tag))
    client = ScriptedSqs(fail_entries(1, 3))
    worker, metrics = sender(outbox, client)

    batch = outbox.take_batch(0)
    assert batch is not None
    worker.send(batch)

    assert owner.acked == [1, 3, 5]
    assert outbox.in_flight == 2
    run_until_settled(outbox, worker)
    assert sorted(owner.acked) == [1, 2, 3, 4, 5]
    retried = [entry["MessageBody"] for call in client.calls[1:] for entry in call]
    assert sorted(retried) == ["body-2", "body-4"]
    assert metrics.value("jobhooks_shovel_send_failures_total", kind="entry") == 2


def test_an_entry_sqs_never_mentions_is_not_acked() -> None:
    owner, outbox = broker_side()
    outbox.put(pending(owner, 1))
    outbox.put(pending(owner, 2))
    worker, _ = sender(outbox, ScriptedSqs(lambda entries: {"Successful": [{"Id": "0"}]}))

    batch = outbox.take_batch(0)
    assert batch is not None
    worker.send(batch)

    assert owner.acked == [1]
    assert outbox.in_flight == 1


def test_a_failed_call_acks_nothing_and_the_entries_go_first_next_time() -> None:
    owner, outbox = broker_side()
    for tag in (1, 2):
        outbox.put(pending(owner, tag))
    unreachable = EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
    worker, metrics = sender(outbox, ScriptedSqs(unreachable))

    batch = outbox.take_batch(0)
    assert batch is not None
    assert worker.send(batch) is False

    assert owner.acked == []
    assert worker.status.up is False
    outbox.put(pending(owner, 3))
    assert [item.delivery_tag for item in outbox.take_batch(0) or []] == [1, 2, 3]
    assert metrics.value("jobhooks_shovel_send_failures_total", kind="request") == 1


def test_an_entry_sqs_keeps_refusing_as_invalid_is_parked_not_dropped() -> None:
    owner, outbox = broker_side()
    outbox.put(pending(owner, 7))
    worker, _ = sender(
        outbox, ScriptedSqs(*[fail_entries(0, sender_fault=True)] * MAX_SENDER_FAULTS)
    )

    run_until_settled(outbox, worker)

    assert owner.acked == []
    assert [(tag, reason) for tag, reason, _ in owner.parked] == [(7, "sqs_rejected")]
    assert f"{MAX_SENDER_FAULTS} times" in owner.parked[0][2]


def test_a_batch_refused_for_its_content_is_retried_one_entry_per_call() -> None:
    owner, outbox = broker_side()
    for tag in (1, 2, 3):
        outbox.put(pending(owner, tag))
    too_long = ClientError(
        {"Error": {"Code": "AWS.SimpleQueueService.BatchRequestTooLong", "Message": "too long"}},
        "SendMessageBatch",
    )
    client = ScriptedSqs(too_long)
    worker, _ = sender(outbox, client)

    run_until_settled(outbox, worker)

    assert sorted(owner.acked) == [1, 2, 3]
    assert [len(call) for call in client.calls] == [3, 1, 1, 1]


def test_deliveries_of_a_closed_connection_are_released_not_sent() -> None:
    owner, outbox = broker_side()
    outbox.put(pending(owner, 1))
    owner.open_generation = 2
    client = ScriptedSqs()
    worker, _ = sender(outbox, client)

    run_until_settled(outbox, worker)

    assert client.calls == []
    assert owner.acked == []


@pytest.mark.parametrize(("sizes", "batches"), [([400_000] * 3, [2, 1]), ([10] * 12, [10, 2])])
def test_a_batch_holds_at_most_ten_entries_and_one_mebibyte(
    sizes: list[int], batches: list[int]
) -> None:
    owner, outbox = broker_side()
    for tag, size in enumerate(sizes):
        outbox.put(pending(owner, tag, size))

    taken = [len(outbox.take_batch(0) or []) for _ in batches]

    assert taken == batches


def test_properties_of_a_parked_message_keep_the_original_and_add_the_reason() -> None:
    from jobhooks_tools.shovel.parking import REASON_HEADER, parked_properties

    original = Delivery(
        "/",
        "fetcher.job.events",
        "job.failed",
        False,
        b"{}",
        pika.BasicProperties(content_type="application/json", delivery_mode=1),
        {"ce-id": b"fetcher.job.failed.j1"},
    )

    properties = parked_properties(original, "too_large", "2 MB")

    assert properties.content_type == "application/json"
    assert properties.delivery_mode == 2
    assert properties.headers["ce-id"] == b"fetcher.job.failed.j1"
    assert properties.headers[REASON_HEADER] == "too_large"


class RecordingChannel:
    def __init__(self) -> None:
        self.acks: list[tuple[int, bool]] = []

    def basic_ack(self, delivery_tag: int, multiple: bool = False) -> None:
        self.acks.append((delivery_tag, multiple))


def consumer_holding(tags: list[int]) -> tuple[Any, RecordingChannel, dict[int, PendingDelivery]]:
    from jobhooks_tools.shovel.consumer import VhostConsumer

    outbox = Outbox(10, 1_048_576)
    consumer = VhostConsumer("/", SETTINGS, outbox, ShovelMetrics(), lambda _reason: None)
    channel = RecordingChannel()
    consumer._channel = channel
    consumer._open_generation = 1
    held = {}
    for tag in tags:
        item = pending(consumer, tag)
        outbox.put(item)
        consumer._outstanding[tag] = item
        held[tag] = item
    return consumer, channel, held


def test_the_oldest_outstanding_deliveries_are_acked_with_one_multiple_ack() -> None:
    consumer, channel, held = consumer_holding([1, 2, 3, 4, 5])

    consumer._ack([held[3], held[1], held[2], held[5]])

    assert channel.acks == [(3, True), (5, False)]
    assert list(consumer._outstanding) == [4]
    assert consumer.outbox.in_flight == 1


def test_a_delivery_acked_once_is_never_acked_again() -> None:
    consumer, channel, held = consumer_holding([7, 8])

    consumer._ack([held[8]])
    consumer._ack([held[8]])

    assert channel.acks == [(8, False)]


def test_by_default_a_burst_arriving_over_tens_of_milliseconds_goes_out_ten_to_a_call() -> None:
    # Jobs that finish together reach the shovel a few milliseconds apart, not at once. The
    # default linger (100 ms) waits for them: one SendMessageBatch per 10 (docs/cost.md); at the
    # 20 ms it was, a message every 5 ms went out 4 to a call. The outbox's clock advances 5 ms
    # per arrival, so a busy machine delaying the arriving thread cannot change the spacing.
    settings = load_settings(
        {
            "amqp_url": "amqp://guest:guest@127.0.0.1:5672/%2F",
            "queue_url": "https://sqs.us-east-1.amazonaws.com/123456789012/ingest",
        },
        {},
    )
    assert settings.batch_linger_ms == 100
    clock = PacedClock()
    outbox = Outbox(10, 1_048_576, clock=clock)
    owner = RecordingOwner(outbox)

    def arrive() -> None:
        for tag in range(20):
            outbox.put(pending(owner, tag))
            clock.advance(0.005)

    arriving = threading.Thread(target=arrive)
    arriving.start()
    taken = [len(outbox.take_batch(settings.batch_linger_seconds) or []) for _ in range(2)]
    arriving.join()

    assert taken == [10, 10]


def test_a_burst_spaced_wider_than_the_linger_goes_out_one_to_a_call() -> None:
    # The other side of the same rule: messages further apart than the linger do not wait for
    # each other (the clock is the outbox's; each arrival comes 150 ms after the one before).
    clock = PacedClock()
    outbox = Outbox(10, 1_048_576, clock=clock)
    owner = RecordingOwner(outbox)
    taken: list[int] = []

    for tag in range(3):
        outbox.put(pending(owner, tag))
        # The linger ends when the clock passes it: the taker waits for the clock, not for
        # real time, so advance it from another thread once the taker is waiting.
        advancing = threading.Thread(target=clock.advance_when_waited, args=(0.15,))
        advancing.start()
        taken.append(len(outbox.take_batch(0.1) or []))
        advancing.join()

    assert taken == [1, 1, 1]
