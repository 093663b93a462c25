"""The ingest function writes the analytics rows: through a real Firehose stream (moto's server,
delivering to S3), driven by the local SQS event source as Lambda would drive it.

Faults are injected into the handler's own Firehose client (`Faults`, botocore's `before-call`),
where a throttled or failing PutRecordBatch surfaces in production.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from jobhooks.analytics.columns import COLUMN_NAMES, record_problems
from jobhooks.analytics.exceptions import AnalyticsWriteError
from jobhooks.ingest.model import IngestOutcome
from jobhooks.ingest.settings import IngestSettings
from jobhooks.ingest.wiring import build_ingest_service
from jobhooks.management.dlq import resend_parked
from jobhooks.spill.messages import read_spill_message
from jobhooks_tools.local.event_source import SqsEventSource
from jobhooks_tools.local.template import LocalResources
from jobhooks_tools.sample_events import demo_key, make_job_event, re_emit

from tests.fixtures.stack import ProvisionedStacks
from tests.integration.api_support import ApiAnswer, InProcessApi, load_function, use_context
from tests.integration.test_ingest import (
    NEW_KEY,
    Bridge,
    event_for,
    event_id_of,
    open_bridge,
    provisioned_stack,
)

PREFIX = "background_job_completed/"
# template.yaml's SpillQueue maxReceiveCount.
SPILL_MAX_RECEIVES = 30
# A module loaded from its file is not in sys.modules, where the IAM guard finds a handler's
# function: the poller names it.
SPILL_FUNCTION = "SpillFunction"


@pytest.fixture(scope="module")
def ingest_stack(provisioned_stacks: ProvisionedStacks) -> Iterator[LocalResources]:
    with provisioned_stack(provisioned_stacks) as stack:
        yield stack


@pytest.fixture
def bridge(
    ingest_stack: LocalResources,
    provisioned_stacks: ProvisionedStacks,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Bridge]:
    with open_bridge(ingest_stack, provisioned_stacks, monkeypatch) as opened:
        yield opened


class Stream:
    """A Firehose DirectPut stream of this test, delivering to a bucket of its own."""

    def __init__(self, name: str) -> None:
        # The stream IngestRole may write to (its grant names the template's stream), made anew.
        suffix = uuid.uuid4().hex[:8]
        self.name, self.bucket = name, f"analytics-rows-{suffix}"
        session = boto3.session.Session()
        self._s3 = session.client("s3")
        self._s3.create_bucket(Bucket=self.bucket)
        firehose = session.client("firehose")
        with contextlib.suppress(firehose.exceptions.ResourceNotFoundException):
            firehose.delete_delivery_stream(DeliveryStreamName=name)
        firehose.create_delivery_stream(
            DeliveryStreamName=self.name,
            DeliveryStreamType="DirectPut",
            ExtendedS3DestinationConfiguration={
                "BucketARN": f"arn:aws:s3:::{self.bucket}",
                "RoleARN": "arn:aws:iam::123456789012:role/firehose",
                "Prefix": PREFIX,
            },
        )

    def rows(self) -> list[dict[str, Any]]:
        """Every row written, oldest object first."""
        listed = self._s3.list_objects_v2(Bucket=self.bucket, Prefix=PREFIX).get("Contents", [])
        rows: list[dict[str, Any]] = []
        for item in sorted(listed, key=lambda item: (item["LastModified"], item["Key"])):
            body = self._s3.get_object(Bucket=self.bucket, Key=item["Key"])["Body"].read()
            rows += [json.loads(line) for line in body.decode().splitlines()]
        return rows


@pytest.fixture
def stream(bridge: Bridge) -> Stream:
    created = Stream(bridge.stack.policy_names["AnalyticsDeliveryStream"])
    bridge.configure(JOBHOOKS_ANALYTICS_STREAM=created.name)
    return created


def test_every_verified_deduplicated_event_is_one_row_matched_or_not(
    bridge: Bridge, stream: Stream
) -> None:
    bridge.subscribe("acme")
    now = int(time.time())
    delivered = event_for(timestamp=now - 60)
    unmatched = event_for("initech", status="failed", timestamp=now - 30)
    bridge.send(delivered, unmatched)
    bridge.run()
    # A repairer re-emission of a done event, and a message no key verifies.
    bridge.send(
        re_emit(delivered, demo_key(), timestamp=now), make_job_event(NEW_KEY, tenant_id="acme")
    )
    stats = bridge.run()

    assert (stats.succeeded, stats.failed) == (2, 0)
    assert len(bridge.take_deliveries()) == 1
    assert len(bridge.quarantined()) == 1
    rows = stream.rows()
    assert sorted(row["event_id"] for row in rows) == sorted(
        [event_id_of(delivered), event_id_of(unmatched)]
    )
    for row in rows:
        assert list(row) == list(COLUMN_NAMES) and record_problems(row) == []
    by_status = {row["status"]: row for row in rows}
    assert (by_status["success"]["account_id"], by_status["failure"]["account_id"]) == (
        "acme",
        "initech",
    )


def spill_poller(bridge: Bridge) -> SqsEventSource:
    """functions/spill/app.py, loaded afresh (its settings are read at import), driven by the
    SQS event source as Lambda drives it: its receives and deletes with SpillRole's grants."""
    return SqsEventSource(
        bridge.stack.queue_url("SpillQueue"),
        load_function("spill").handler,
        sqs_client=bridge.sqs,
        strict_responses=True,
        wait_time_seconds=0,
        function_timeout_seconds=10,
        principal=SPILL_FUNCTION,
    )


def test_a_failed_firehose_put_spills_the_row_and_its_webhook_goes_out_once(
    bridge: Bridge, stream: Stream
) -> None:
    bridge.subscribe("acme")
    bridge.faults.fail("PutRecordBatch", code="ServiceUnavailableException")
    event = event_for()
    bridge.send(event)

    first = bridge.poller().run_once()

    # The record is acknowledged and its claim done: nothing sends its webhook again.
    assert (first.succeeded, first.failed) == (1, 0)
    assert bridge.claim_state(event_id_of(event)) == "done"
    (webhook,) = bridge.take_deliveries()
    assert stream.rows() == []

    # The spill function writes the row into the same stream.
    drained = spill_poller(bridge).run_until_idle(20, include_in_flight=True)

    assert (drained.succeeded, drained.failed) == (1, 0)
    (row,) = stream.rows()
    assert row["event_id"] == event_id_of(event) and record_problems(row) == []
    assert bridge.take_deliveries() == [] and bridge.run().received == 0
    assert webhook.event_id == event_id_of(event)


def test_a_stream_that_stays_down_parks_the_rows_in_the_spill_dlq_never_the_record(
    bridge: Bridge, stream: Stream
) -> None:
    # Retries at once instead of after a minute, then an hour: the queue's 30 receives in
    # seconds.
    bridge.configure(JOBHOOKS_SPILL_FIRST_RETRY_SECONDS="0", JOBHOOKS_SPILL_MAX_RETRY_SECONDS="0")
    firehose_down = bridge.faults.fail(
        "PutRecordBatch", code="ServiceUnavailableException", times=1000
    )
    event = event_for("initech")
    bridge.send(event)

    stats = bridge.run(max_seconds=30)
    drained = spill_poller(bridge).run_until_idle(60, include_in_flight=True)

    assert (stats.succeeded, stats.failed) == (1, 0)
    assert bridge.peek(bridge.stack.queue_url("IngestDeadLetterQueue")) == []
    assert drained.failed == SPILL_MAX_RECEIVES and stream.rows() == []
    spill_dlq = bridge.stack.queue_url("SpillDeadLetterQueue")
    (parked,) = bridge.peek(spill_dlq)
    (spilled,) = read_spill_message(parked["Body"]).rows  # type: ignore[union-attr]
    assert spilled.event_id == event_id_of(event)

    # The runbook: once Firehose works, redrive the spill DLQ; the row is written then.
    firehose_down.times = 0
    moved, remaining = resend_parked(bridge.sqs, spill_dlq, bridge.stack.queue_url("SpillQueue"))
    assert (moved, remaining) == (1, 0)
    spill_poller(bridge).run_until_idle(20, include_in_flight=True)
    assert [row["event_id"] for row in stream.rows()] == [event_id_of(event)]


def test_a_spill_message_no_code_can_read_is_parked_at_once_in_the_spill_dlq(
    bridge: Bridge, stream: Stream
) -> None:
    # A retry would change nothing: the spill function moves it to the DLQ itself (SendMessage,
    # SpillRole's grant on the spill DLQ) and acknowledges it, rather than 30 receives.
    bridge.sqs.send_message(
        QueueUrl=bridge.stack.queue_url("SpillQueue"), MessageBody='{"kind": "unknown"}'
    )

    drained = spill_poller(bridge).run_until_idle(20, include_in_flight=True)

    assert (drained.received, drained.succeeded, drained.failed) == (1, 1, 0)
    (parked,) = bridge.peek(bridge.stack.queue_url("SpillDeadLetterQueue"))
    assert parked["Body"] == '{"kind": "unknown"}'
    assert stream.rows() == []


def replay_through_the_api(quarantine_id: str) -> ApiAnswer:
    """POST /v1/quarantine/{id}/replay to the API function, as the operator: its calls are made
    with ApiRole's grants (the stream's, the claims table's) and on boto3's default session,
    where the bridge's faults are."""
    api = InProcessApi()
    with use_context(api.module, grants=()):
        return api.post(f"/v1/quarantine/{quarantine_id}/replay")


def test_a_quarantine_replay_writes_the_row_and_a_re_fan_out_does_not(
    bridge: Bridge, stream: Stream
) -> None:
    bridge.subscribe("acme")
    event = make_job_event(NEW_KEY, tenant_id="acme")
    bridge.send(event)
    bridge.run()
    (kept,) = bridge.quarantined()
    assert stream.rows() == []
    bridge.put_fetcher_keys(demo_key(), NEW_KEY)

    replayed = replay_through_the_api(kept["quarantine_id"])

    assert replayed.status == 200, replayed.text
    assert replayed.body["outcome"] == IngestOutcome.ACCEPTED.value
    assert [row["event_id"] for row in stream.rows()] == [event_id_of(event)]
    # Built as the API function builds it, from the same settings as the ingest function.
    management = build_ingest_service(IngestSettings.from_env(), session=bridge.session)
    management.refan_out(event_id_of(event), replay=True)
    assert len(stream.rows()) == 1


def test_a_replay_whose_row_cannot_be_written_stays_quarantined_and_can_be_asked_again(
    bridge: Bridge, stream: Stream
) -> None:
    event = make_job_event(NEW_KEY, tenant_id="acme")
    bridge.send(event)
    bridge.run()
    (kept,) = bridge.quarantined()
    bridge.put_fetcher_keys(demo_key(), NEW_KEY)
    bridge.faults.fail("PutRecordBatch", code="ServiceUnavailableException")

    failed = replay_through_the_api(kept["quarantine_id"])

    # Nothing is marked, nothing is held: the API function released the event's claim.
    assert failed.status == 503, failed.text
    assert failed.error["code"] == AnalyticsWriteError.code
    assert bridge.quarantined()[0]["status"] == "quarantined"
    assert bridge.claim_item(event_id_of(event)) is None
    again = replay_through_the_api(kept["quarantine_id"])
    assert again.status == 200 and again.body["outcome"] == IngestOutcome.ACCEPTED.value
    assert [row["event_id"] for row in stream.rows()] == [event_id_of(event)]
