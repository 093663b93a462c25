"""The Firehose sink: rows reach S3 through a real delivery stream (moto's server), within
Firehose's limits, and rows Firehose does not accept are retried, then reported.

moto accepts every record of PutRecordBatch (it never answers with FailedPutCount), so the
partial-failure paths run against `ScriptedFirehose`, a small client with the same operation
that fails the records it is told to. Everything else runs against moto.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from jobhooks.analytics.exceptions import (
    AnalyticsRowTooLargeError,
    AnalyticsWriteError,
    PseudonymizationKeyError,
)
from jobhooks.analytics.firehose import (
    MAX_BYTES_PER_CALL,
    MAX_RECORD_BYTES,
    MAX_RECORDS_PER_CALL,
    FirehoseSink,
    pack_records,
    request_batches,
)
from jobhooks.analytics.pseudonymize import PSEUDONYM_PREFIX
from jobhooks.analytics.recorder import build_analytics_recorder
from jobhooks.analytics.row import AnalyticsRow
from jobhooks.analytics.settings import AnalyticsSinkSettings
from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message
from jobhooks.inbound.outcome import OutcomeData, outcome_data
from jobhooks_tools.local.moto_server import MotoServer
from jobhooks_tools.sample_events import demo_key, make_job_event

from tests.integration.analytics_fixture import ROWS, row

STREAM = "jobhooks-analytics-test"
BUCKET = "jobhooks-analytics-rows"
PREFIX = "background_job_completed/"


@pytest.fixture
def stream(aws: MotoServer) -> str:
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    boto3.client("firehose").create_delivery_stream(
        DeliveryStreamName=STREAM,
        DeliveryStreamType="DirectPut",
        ExtendedS3DestinationConfiguration={
            "BucketARN": f"arn:aws:s3:::{BUCKET}",
            "RoleARN": "arn:aws:iam::123456789012:role/firehose",
            "Prefix": PREFIX,
        },
    )
    return STREAM


def landed() -> list[dict[str, Any]]:
    """Every row in the bucket, in object order (moto writes one object per call)."""
    s3 = boto3.client("s3")
    keys = sorted(
        (item["LastModified"], item["Key"])
        for item in s3.list_objects_v2(Bucket=BUCKET, Prefix=PREFIX).get("Contents", [])
    )
    rows = []
    for _, key in keys:
        body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()
        # Newline-separated JSON documents: how Firehose's conversion reads one record.
        assert body.endswith("\n")
        rows += [json.loads(line) for line in body.splitlines()]
    return rows


class Recording:
    """A real client that also remembers the shape of every PutRecordBatch call."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.calls: list[list[int]] = []

    def put_record_batch(self, **arguments: Any) -> Any:
        self.calls.append([len(record["Data"]) for record in arguments["Records"]])
        return self._client.put_record_batch(**arguments)


def test_rows_land_in_s3_as_newline_separated_json(stream: str) -> None:
    sink = FirehoseSink(stream, boto3.client("firehose"))
    sink.put_rows(ROWS)
    assert landed() == [r.to_record() for r in ROWS]


def test_rows_are_packed_and_calls_stay_within_firehoses_limits(stream: str) -> None:
    # ~350 KB rows: two fit one 1,000 KiB record, four such records one 4 MiB call.
    big = [row(f"big{n:02d}", "2026-07-13T10:00:00.000Z", account="a" * 350_000) for n in range(30)]
    client = Recording(boto3.client("firehose"))
    FirehoseSink(stream, client).put_rows(big)
    assert client.calls and all(len(call) <= MAX_RECORDS_PER_CALL for call in client.calls)
    for call in client.calls:
        assert all(size <= MAX_RECORD_BYTES for size in call)
        assert sum(4 * ((size + 2) // 3) for size in call) <= MAX_BYTES_PER_CALL
    assert sum(len(call) for call in client.calls) == 15 and len(client.calls) == 4
    # moto writes one object per call; objects of one second do not list in call order.
    assert sorted(r["event_id"] for r in landed()) == [r.event_id for r in big]


def test_request_batches_respect_the_record_count_limit() -> None:
    records = pack_records(ROWS[:1]) * 1201
    batches = request_batches(records)
    assert [len(batch) for batch in batches] == [500, 500, 201]


def test_a_row_larger_than_a_record_is_refused_before_anything_is_sent(stream: str) -> None:
    client = Recording(boto3.client("firehose"))
    huge = row("huge", "2026-07-13T10:00:00.000Z", account="a" * MAX_RECORD_BYTES)
    with pytest.raises(AnalyticsRowTooLargeError, match="record limit"):
        FirehoseSink(stream, client).put_rows([ROWS[2], huge])
    assert client.calls == []


def test_a_missing_stream_raises_the_retryable_error(aws: MotoServer) -> None:
    sink = FirehoseSink("no-such-stream", boto3.client("firehose"))
    with pytest.raises(AnalyticsWriteError, match=r"3 of 3 .*ResourceNotFoundException") as error:
        sink.put_rows(ROWS[:3])
    assert (error.value.failed, error.value.total) == (3, 3)


# ---------------------------------------------------------------------------- partial failures


class ScriptedFirehose:
    """PutRecordBatch that fails the records at the given positions, call after call."""

    def __init__(
        self, failures: Sequence[set[int]], *, error_code: str = "ServiceUnavailableException"
    ) -> None:
        self._failures = list(failures)
        self._error_code = error_code
        self.calls: list[list[bytes]] = []
        self.accepted: list[bytes] = []

    def put_record_batch(self, DeliveryStreamName: str, Records: list[dict[str, bytes]]) -> Any:
        self.calls.append([record["Data"] for record in Records])
        failing = self._failures.pop(0) if self._failures else set()
        answers = []
        for index, record in enumerate(Records):
            if index in failing:
                answers.append({"ErrorCode": self._error_code, "ErrorMessage": "slow down"})
            else:
                self.accepted.append(record["Data"])
                answers.append({"RecordId": f"r{len(self.accepted)}"})
        return {"FailedPutCount": len(failing), "Encrypted": True, "RequestResponses": answers}


def lines(data: Sequence[bytes]) -> list[str]:
    return [json.loads(line)["event_id"] for chunk in data for line in chunk.decode().splitlines()]


def big_rows(count: int) -> list[AnalyticsRow]:
    # One row per record (two ~600 KB rows exceed a record), to fail records one by one.
    return [row(f"r{n}", "2026-07-13T10:00:00.000Z", account="a" * 600_000) for n in range(count)]


def test_records_firehose_refuses_are_sent_again_and_only_those() -> None:
    rows = big_rows(4)
    client = ScriptedFirehose([{1, 3}, {1}])
    sleeps: list[float] = []
    FirehoseSink("s", client, sleep=sleeps.append).put_rows(rows)
    assert [len(call) for call in client.calls] == [4, 2, 1]
    assert sorted(lines(client.accepted)) == sorted(r.event_id for r in rows)  # each once
    assert sleeps == [0.1, 0.2]


def test_records_still_refused_after_the_last_attempt_are_reported_not_dropped() -> None:
    rows = big_rows(3)
    client = ScriptedFirehose([{2}, {0}, {0}])
    sleeps: list[float] = []
    with pytest.raises(AnalyticsWriteError) as error:
        FirehoseSink("s", client, max_attempts=3, sleep=sleeps.append).put_rows(rows)
    assert (error.value.failed, error.value.total) == (1, 3)
    assert error.value.cause == "ServiceUnavailableException"
    assert "1 of 3 analytics rows were not written" in error.value.message
    assert "they are not dropped" in error.value.message
    assert len(client.calls) == 3 and sleeps == [0.1, 0.2]
    assert sorted(lines(client.accepted)) == ["r0", "r1"]


def test_a_failed_call_reports_its_rows_and_every_later_call_as_not_written() -> None:
    class Unavailable:
        calls = 0

        def put_record_batch(self, **_: Any) -> Any:
            self.calls += 1
            raise ClientError(
                {"Error": {"Code": "ServiceUnavailableException", "Message": "down"}},
                "PutRecordBatch",
            )

    client = Unavailable()
    with pytest.raises(AnalyticsWriteError) as error:
        FirehoseSink("s", client).put_rows(big_rows(9))  # 9 records: two calls of 4 MiB max
    assert (error.value.failed, error.value.total) == (9, 9)
    assert client.calls == 1  # botocore retried inside; the sink does not multiply that


# ---------------------------------------------------------------------------- the recorder


def real_outcomes() -> list[OutcomeData]:
    """A completed and a failed outcome of tenant acme, through the real inbound pipeline."""
    key = demo_key()
    policy = VerificationPolicy(keys=[key])
    outcomes = []
    for status in ("completed", "failed"):
        event = make_job_event(key, status=status, tenant_id="acme", job_id=f"job-{status}")
        raw = event.forwarded().to_json()
        outcomes.append(outcome_data(read_forwarded_message(raw, policy, datetime.now(UTC))))
    return outcomes


def test_the_recorder_writes_outcomes_through_the_configured_stream(stream: str) -> None:
    recorder = build_analytics_recorder(
        AnalyticsSinkSettings.from_env({"JOBHOOKS_ANALYTICS_STREAM": stream})
    )
    assert recorder is not None and recorder.pseudonymizer is None
    outcomes = real_outcomes()
    recorder.record(outcomes)
    written = landed()
    assert [r["event_id"] for r in written] == [o["event_id"] for o in outcomes]
    assert [r["status"] for r in written] == ["success", "failure"]


def test_pseudonymization_with_the_key_in_secrets_manager(stream: str) -> None:
    key_text = "Zq7" * 22
    arn = boto3.client("secretsmanager").create_secret(Name="analytics-key", SecretString=key_text)[
        "ARN"
    ]
    recorder = build_analytics_recorder(
        AnalyticsSinkSettings.from_env(
            {
                "JOBHOOKS_ANALYTICS_STREAM": stream,
                "JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_SECRET_ARN": arn,
            }
        )
    )
    assert recorder is not None and recorder.pseudonymizer is not None
    outcomes = real_outcomes()
    recorder.record(outcomes)
    written = landed()
    text = json.dumps(written)
    assert "acme" not in text and "job-completed" not in text and "job-failed" not in text
    for record in written:
        for column in ("event_id", "account_id", "job_id"):
            assert record[column].startswith(PSEUDONYM_PREFIX)
    # Same key, same pseudonym: both outcomes are the same tenant.
    assert written[0]["account_id"] == written[1]["account_id"]


def test_an_unreadable_key_stops_the_write_with_a_retryable_error(stream: str) -> None:
    recorder = build_analytics_recorder(
        AnalyticsSinkSettings.from_env(
            {
                "JOBHOOKS_ANALYTICS_STREAM": stream,
                "JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_SECRET_ARN": (
                    "arn:aws:secretsmanager:us-east-1:123456789012:secret:missing"
                ),
            }
        )
    )
    assert recorder is not None
    with pytest.raises(PseudonymizationKeyError, match="ResourceNotFoundException"):
        recorder.record(real_outcomes())
    assert landed() == []


def test_analytics_is_off_when_no_sink_is_configured() -> None:
    assert build_analytics_recorder(AnalyticsSinkSettings.from_env({})) is None
    with pytest.raises(Exception, match="JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_KEY"):
        AnalyticsSinkSettings.from_env({"JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_KEY": "short"})
