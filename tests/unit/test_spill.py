"""The spill path's messages and the spill function's use case (`jobhooks.spill`).

What ingest could not write after its webhooks went out travels as spill messages; the spill
function writes them, retries with a growing delay, and parks what it cannot read. The sink,
the page store and SQS are in-memory fakes that keep every call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from jobhooks.analytics.exceptions import AnalyticsWriteError
from jobhooks.analytics.pseudonymize import StaticKeyPseudonymizer, pseudonym
from jobhooks.analytics.row import AnalyticsRow
from jobhooks.analytics.sink import AnalyticsSink
from jobhooks.delivery.exceptions import DeliveryLogBusyError
from jobhooks.delivery.first_attempts import FirstAttempt, FirstAttemptPage, new_batch_id
from jobhooks.spill.drain import RetryDelay, SpillDrain
from jobhooks.spill.exceptions import SpilledMessageInvalidError
from jobhooks.spill.messages import (
    MAX_SPILL_MESSAGE_BYTES,
    SpilledPages,
    SpilledRows,
    read_spill_message,
    spill_messages,
)

NOW = datetime(2026, 7, 13, 18, 4, 11, 204000, tzinfo=UTC)
KEY = "k" * 40


def row(n: int = 1, **changes: Any) -> AnalyticsRow:
    values: dict[str, Any] = {
        "timestamp_utc": NOW,
        "event_id": f"fetcher.job.completed.job-{n}",
        "release": "fetcher@2.0.2",
        "account_id": "acme",
        "job_id": f"job-{n}",
        "job_name": "report",
        "queue_name": "//lerian.fetcher/worker",
        "attempt_count": 1,
        "queue_wait_ms": 0,
        "duration_ms": 120,
        "status": "success",
        "unmeasured": ("queue_wait_ms",),
    }
    return AnalyticsRow(**{**values, **changes})


BATCH = new_batch_id(NOW) + ".0"


def page(subscription: str = "sub_1") -> FirstAttemptPage:
    return FirstAttemptPage(
        subscription_id=subscription,
        tenant_id="acme",
        batch_id=BATCH,
        successes=(FirstAttempt("fetcher.job.completed.job-1", "job.completed", NOW, 200, 41),),
    )


@dataclass
class Sink(AnalyticsSink):
    rows: list[AnalyticsRow] = field(default_factory=list)
    calls: int = 0
    fail_times: int = 0

    def put_rows(self, rows: Sequence[AnalyticsRow]) -> None:
        self.calls += 1
        if self.fail_times:
            self.fail_times -= 1
            raise AnalyticsWriteError(len(rows), len(rows), "ServiceUnavailableException")
        self.rows.extend(rows)


@dataclass
class Pages:
    written: list[FirstAttemptPage] = field(default_factory=list)
    fail_times: int = 0

    def write(self, pages: Sequence[FirstAttemptPage]) -> None:
        if self.fail_times:
            self.fail_times -= 1
            raise DeliveryLogBusyError()
        self.written.extend(pages)


@dataclass
class Sqs:
    hidden: list[tuple[str, int]] = field(default_factory=list)
    sent: list[tuple[str, str]] = field(default_factory=list)

    def change_message_visibility(
        self, *, QueueUrl: str, ReceiptHandle: str, VisibilityTimeout: int
    ) -> None:
        assert QueueUrl == "spill-queue"
        self.hidden.append((ReceiptHandle, VisibilityTimeout))

    def send_message(self, *, QueueUrl: str, MessageBody: str) -> None:
        self.sent.append((QueueUrl, MessageBody))


@dataclass
class World:
    sink: Sink
    pages: Pages
    sqs: Sqs
    drain: SpillDrain


@pytest.fixture
def world() -> World:
    sink, pages, sqs = Sink(), Pages(), Sqs()
    drain = SpillDrain(
        sink=sink,
        pseudonymizer=StaticKeyPseudonymizer(KEY),
        pages=pages,
        sqs=sqs,
        queue_url="spill-queue",
        dead_letter_queue_url="spill-dlq",
        retry_delay=RetryDelay(60, 3600),
    )
    return World(sink, pages, sqs, drain)


def records(*bodies: str, receives: int = 1) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": f"m-{n}",
                "receiptHandle": f"r-{n}",
                "body": body,
                "attributes": {"ApproximateReceiveCount": str(receives)},
            }
            for n, body in enumerate(bodies)
        ]
    }


def only(spilled: SpilledRows | SpilledPages) -> str:
    (body,) = spill_messages(spilled)
    return body


# -- messages -----------------------------------------------------------------------------------


def test_rows_and_pages_read_back_as_they_were_spilled() -> None:
    rows = SpilledRows((row(1), row(2, status="failure", error_category="datasource_error")), True)
    pages = SpilledPages((page("sub_1"), page("sub_2")))

    assert read_spill_message(only(rows)) == rows
    assert read_spill_message(only(pages)) == pages


def test_what_does_not_fit_one_message_is_split_over_several_whole_ones() -> None:
    big = tuple(row(n, job_name="j" * 3000) for n in range(800))  # about 2.6 MB of rows

    bodies = list(spill_messages(SpilledRows(big, False)))

    assert len(bodies) == 3
    assert all(len(body.encode()) <= MAX_SPILL_MESSAGE_BYTES for body in bodies)
    back = [read_spill_message(body) for body in bodies]
    assert all(isinstance(m, SpilledRows) and m.pseudonymized is False for m in back)
    assert tuple(r for m in back if isinstance(m, SpilledRows) for r in m.rows) == big


@pytest.mark.parametrize(
    "body",
    [
        "",
        "not json",
        json.dumps({"kind": "something_else", "rows": []}),
        json.dumps({"kind": "analytics_rows", "pseudonymized": True, "rows": [{"x": 1}]}),
        json.dumps({"kind": "first_attempt_pages", "pages": [{"subscription_id": "s"}]}),
    ],
)
def test_a_body_that_is_no_spill_message_is_refused_with_its_code(body: str) -> None:
    with pytest.raises(SpilledMessageInvalidError) as refused:
        read_spill_message(body)
    assert refused.value.code == "spill_message_invalid"


# -- the spill function -------------------------------------------------------------------------


def test_spilled_rows_and_pages_are_written_and_acknowledged(world: World) -> None:
    rows, pages = SpilledRows((row(1),), True), SpilledPages((page(),))

    answer = world.drain.drain_batch(records(only(rows), only(pages)))

    assert answer == {"batchItemFailures": []}
    assert world.sink.rows == [row(1)] and world.pages.written == [page()]
    assert world.sqs.hidden == [] and world.sqs.sent == []


def test_rows_ingest_could_not_pseudonymize_are_pseudonymized_before_they_are_written(
    world: World,
) -> None:
    world.drain.drain_batch(records(only(SpilledRows((row(1),), pseudonymized=False))))

    (written,) = world.sink.rows
    for column in ("event_id", "account_id", "job_id"):
        raw = getattr(row(1), column)
        assert getattr(written, column) == pseudonym(KEY.encode(), column, raw)
    assert written.job_name == "report"


def test_a_write_that_fails_again_is_hidden_longer_each_time_then_reported(
    world: World,
) -> None:
    body = only(SpilledRows((row(1),), True))
    delays = []
    for receives in (1, 2, 3, 7, 30):
        world.sink.fail_times = 1
        answer = world.drain.drain_batch(records(body, receives=receives))
        assert answer == {"batchItemFailures": [{"itemIdentifier": "m-0"}]}
        delays.append(world.sqs.hidden.pop()[1])

    # Doubling from the first delay, never beyond the most: about a day over 30 receives.
    assert delays == [60, 120, 240, 3600, 3600]
    assert world.sink.rows == []


def test_a_target_that_failed_is_not_tried_again_in_the_same_batch(world: World) -> None:
    world.sink.fail_times = 1
    rows = [only(SpilledRows((row(n),), True)) for n in (1, 2)]

    answer = world.drain.drain_batch(records(rows[0], only(SpilledPages((page(),))), rows[1]))

    # The second rows message was not sent to the sink; the pages went to their own table.
    assert world.sink.calls == 1
    assert [f["itemIdentifier"] for f in answer["batchItemFailures"]] == ["m-0", "m-2"]
    assert world.pages.written == [page()]
    assert [handle for handle, _ in world.sqs.hidden] == ["r-0", "r-2"]


def test_an_unreadable_message_is_parked_at_once_not_retried(world: World) -> None:
    answer = world.drain.drain_batch(records("{not a spill message"))

    assert answer == {"batchItemFailures": []}
    assert world.sqs.sent == [("spill-dlq", "{not a spill message")]
    assert world.sqs.hidden == []
