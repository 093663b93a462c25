"""The deliver function's duplicate checks read a batch's records together
(jobhooks.delivery.deliver): one `find_many` when the batch begins, a task's own `find` when
that read is too old for it, failed, or would hold a single record."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from jobhooks.delivery.attempt_log import AttemptLog
from jobhooks.delivery.deliver import Deliverer
from jobhooks.delivery.model import DeliveryRecord, DeliveryStatus, PostResult
from jobhooks.delivery_task import DeliveryTask

from tests.unit.test_deliver_caps import NOW, Directory, Log, Nowhere, record, subscription


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class CountingLog(Log):
    """Knows the deliveries in `succeeded` as succeeded; counts its reads."""

    def __init__(self, succeeded: Iterable[str] = (), *, batch_read_fails: bool = False) -> None:
        self.succeeded = set(succeeded)
        self.batch_read_fails = batch_read_fails
        self.found: list[str] = []
        self.found_many: list[list[str]] = []

    def _record(self, delivery_id: str) -> DeliveryRecord | None:
        if delivery_id not in self.succeeded:
            return None
        return DeliveryRecord(
            delivery_id=delivery_id,
            event_id="e",
            webhook_id="msg_x",
            subscription_id="s",
            tenant_id="t",
            event_type="job.completed",
            status=DeliveryStatus.SUCCEEDED,
            created_at=NOW,
            updated_at=NOW,
            expires_at=NOW + timedelta(days=30),
        )

    def find(self, delivery_id: str) -> DeliveryRecord | None:
        self.found.append(delivery_id)
        return self._record(delivery_id)

    def find_many(self, delivery_ids: Iterable[str]) -> dict[str, DeliveryRecord]:
        ids = list(delivery_ids)
        self.found_many.append(ids)
        if self.batch_read_fails:
            raise RuntimeError("ProvisionedThroughputExceededException")
        return {d: r for d in ids if (r := self._record(d)) is not None}


class Receiver:
    """Answers 200; each POST takes `seconds` of the fake clock."""

    def __init__(self, clock: Clock, seconds: float = 0.0) -> None:
        self.clock = clock
        self.seconds = seconds
        self.posted: list[str] = []

    def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, timeout: float | None = None
    ) -> PostResult:
        self.posted.append(headers["webhook-id"])
        self.clock.now += self.seconds
        return PostResult(200, None, None, 1)


def deliver(
    records: list[dict[str, Any]],
    log: CountingLog,
    receiver: Receiver,
    clock: Clock,
    **options: Any,
) -> dict[str, Any]:
    """One deliver batch of `records`, by a deliverer made for it; its answer."""
    options.setdefault("dead_letters", Nowhere())
    worker = Deliverer(
        attempt_log=log,
        subscriptions=Directory([subscription("acme", 0)]),
        client=receiver,
        queue=Nowhere(),
        concurrency=1,  # one record at a time: the second starts after the first's POST
        monotonic=clock,
        clock=lambda: NOW,
        **options,
    )
    try:
        return worker.deliver_batch({"Records": records})
    finally:
        worker.close()


def batch(n: int) -> tuple[list[dict[str, Any]], list[DeliveryTask]]:
    made = subscription("acme", 0)
    records = [record(made, i) for i in range(n)]
    return records, [DeliveryTask.from_json(r["body"]) for r in records]


def test_a_batch_reads_its_records_once_and_skips_one_already_delivered() -> None:
    records, tasks = batch(3)
    clock = Clock()
    log = CountingLog(succeeded=[tasks[1].delivery_id])
    receiver = Receiver(clock)
    answer = deliver(records, log, receiver, clock)

    assert answer == {"batchItemFailures": []}
    assert log.found_many == [[task.delivery_id for task in tasks]]
    assert log.found == []
    assert sorted(receiver.posted) == sorted([tasks[0].webhook_id, tasks[2].webhook_id])


def test_a_task_held_past_the_batch_read_reads_its_record_again() -> None:
    records, tasks = batch(2)
    clock = Clock()
    # The batch read sees neither delivered; a copy of the second task succeeds meanwhile.
    log = CountingLog()
    receiver = Receiver(clock, seconds=2.0)

    def success_meanwhile(url: str, body: bytes, headers: Mapping[str, str], **_: Any) -> Any:
        log.succeeded.add(tasks[1].delivery_id)
        return Receiver.post(receiver, url, body, headers)

    receiver.post = success_meanwhile  # type: ignore[method-assign]
    deliver(records, log, receiver, clock)

    assert log.found_many == [[tasks[0].delivery_id, tasks[1].delivery_id]]
    assert log.found == [tasks[1].delivery_id]
    assert receiver.posted == [tasks[0].webhook_id]


def test_a_failed_batch_read_leaves_each_task_to_read_its_own() -> None:
    records, tasks = batch(2)
    clock = Clock()
    log = CountingLog(succeeded=[tasks[0].delivery_id], batch_read_fails=True)
    receiver = Receiver(clock)
    answer = deliver(records, log, receiver, clock)

    assert answer == {"batchItemFailures": []}
    assert sorted(log.found) == sorted(task.delivery_id for task in tasks)
    assert receiver.posted == [tasks[1].webhook_id]


def test_one_task_and_a_message_that_is_no_task_read_with_a_getitem() -> None:
    records, tasks = batch(1)
    not_a_task = {"messageId": "m-junk", "receiptHandle": "r", "body": json.dumps({"x": 1})}
    clock = Clock()
    log = CountingLog()
    parked: list[str] = []

    class Parking(Nowhere):
        def park(self, body: str, summary: Any) -> str:
            parked.append(body)
            return "parked"

    receiver = Receiver(clock)
    answer = deliver([*records, not_a_task], log, receiver, clock, dead_letters=Parking())

    assert answer == {"batchItemFailures": []}
    assert (log.found_many, log.found) == ([], [tasks[0].delivery_id])
    assert parked == [not_a_task["body"]]
    assert receiver.posted == [tasks[0].webhook_id]


def test_the_attempt_log_reads_a_batch_strongly_consistently() -> None:
    class Dynamo:
        def __init__(self) -> None:
            self.requests: list[dict[str, Any]] = []

        def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
            self.requests.append(RequestItems)
            return {"Responses": {"deliveries": []}}

    dynamo = Dynamo()
    log = AttemptLog("deliveries", dynamo, clock=lambda: NOW)
    assert log.find_many(["b", "a", "b"]) == {}
    assert dynamo.requests == [
        {"deliveries": {"Keys": [{"delivery_id": {"S": "a"}}, {"delivery_id": {"S": "b"}}],
                        "ConsistentRead": True}}
    ]  # fmt: skip


SUCCESS = CountingLog(["first"])._record("first")


class FirstAttempts:
    """Ingest's first-attempt successes: those of `succeeded`, as (event, subscription)."""

    def __init__(self, succeeded: Iterable[tuple[str, str]]) -> None:
        self.succeeded = set(succeeded)
        self.found: list[tuple[str, str]] = []
        self.found_many: list[list[tuple[str, str]]] = []

    def find(self, event_id: str, subscription_id: str) -> DeliveryRecord | None:
        self.found.append((event_id, subscription_id))
        return SUCCESS if (event_id, subscription_id) in self.succeeded else None

    def find_many(
        self, deliveries: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], DeliveryRecord]:
        asked = list(deliveries)
        self.found_many.append(asked)
        return {pair: SUCCESS for pair in asked if pair in self.succeeded}


def test_the_tasks_without_a_record_ask_for_first_attempt_successes_together() -> None:
    records, tasks = batch(3)
    replayed = tasks[2].model_copy(update={"replay": True})
    records[2]["body"] = replayed.to_json()
    clock = Clock()
    log = CountingLog()
    first_attempts = FirstAttempts([(tasks[0].event_id, tasks[0].subscription_id)])
    receiver = Receiver(clock)
    deliver(records, log, receiver, clock, first_attempts=first_attempts)

    # The replay POSTs whatever ingest did, so it is not asked about; nothing is read alone.
    assert first_attempts.found_many == [
        [(task.event_id, task.subscription_id) for task in tasks[:2]]
    ]
    assert (first_attempts.found, log.found) == ([], [])
    assert sorted(receiver.posted) == sorted([tasks[1].webhook_id, tasks[2].webhook_id])
