"""The Amazon Data Firehose sink: rows to the delivery stream with PutRecordBatch.

Firehose's limits (PutRecordBatch, DirectPut), all checked here rather than left to an error:
at most 500 records per call, at most 4 MiB per call, at most 1,000 KiB per record before
base64. Firehose bills each record rounded up to 5 KB, so rows are packed into records as
newline-separated JSON documents (which the record format conversion reads as one row each)
up to the record limit, instead of one ~400-byte row per record.

PutRecordBatch can answer 200 with some records failed (`FailedPutCount`, an `ErrorCode` per
failed record): only those are sent again, up to `max_attempts` calls in all, with a short
exponential backoff. Whatever is still not accepted then raises `AnalyticsWriteError`; a whole
call that fails (after botocore's own retries) raises it at once. The ingest caller turns it
into "record not completed": the claim is released and SQS delivers the record again. Its
deliveries were enqueued before the row was written, so a Firehose outage delays the claim's
completion, never a webhook. A retry may write a row twice (a timeout after Firehose accepted
it): the outcomes view reads one row per `event_id`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from jobhooks.analytics.exceptions import (
    AnalyticsRowTooLargeError,
    AnalyticsWriteError,
    aws_error_code,
)
from jobhooks.analytics.row import AnalyticsRow
from jobhooks.analytics.sink import AnalyticsSink

MAX_RECORDS_PER_CALL: Final = 500
MAX_BYTES_PER_CALL: Final = 4 * 1024 * 1024
MAX_RECORD_BYTES: Final = 1000 * 1024
DEFAULT_MAX_ATTEMPTS: Final = 3
DEFAULT_FIRST_BACKOFF_SECONDS: Final = 0.1


@dataclass(frozen=True, slots=True)
class _Record:
    data: bytes
    rows: int

    @property
    def request_bytes(self) -> int:
        # The request carries each record base64-encoded: count that, so the call stays under
        # the limit whichever size Firehose measures.
        return 4 * ((len(self.data) + 2) // 3)


class FirehoseSink(AnalyticsSink):
    def __init__(
        self,
        stream_name: str,
        client: Any,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        first_backoff_seconds: float = DEFAULT_FIRST_BACKOFF_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.stream_name = stream_name
        self._client = client
        self._max_attempts = max_attempts
        self._first_backoff = first_backoff_seconds
        self._sleep = sleep

    def put_rows(self, rows: Sequence[AnalyticsRow]) -> None:
        if not rows:
            return
        batches = request_batches(pack_records(rows))
        for index, batch in enumerate(batches):
            failed, code = self._put_batch(batch)
            if failed:
                not_sent = sum(record.rows for later in batches[index + 1 :] for record in later)
                raise AnalyticsWriteError(failed + not_sent, len(rows), code)

    def _put_batch(self, batch: list[_Record]) -> tuple[int, str]:
        """Send one call's records, again for those that failed; (rows not accepted, why)."""
        from botocore.exceptions import BotoCoreError, ClientError

        pending = batch
        code = ""
        for attempt in range(self._max_attempts):
            if attempt:
                self._sleep(self._first_backoff * 2 ** (attempt - 1))
            try:
                response = self._client.put_record_batch(
                    DeliveryStreamName=self.stream_name,
                    Records=[{"Data": record.data} for record in pending],
                )
            except (ClientError, BotoCoreError) as error:
                # botocore has already retried what is worth retrying (throttling, 5xx).
                return sum(record.rows for record in pending), aws_error_code(error)
            if not response.get("FailedPutCount"):
                return 0, ""
            answers = response.get("RequestResponses") or []
            if len(answers) != len(pending):  # never expected: treat the whole call as failed
                code = "MalformedResponse"
                continue
            failed = [
                (record, answer)
                for record, answer in zip(pending, answers, strict=True)
                if answer.get("ErrorCode")
            ]
            code = ", ".join(sorted({str(answer["ErrorCode"]) for _, answer in failed}))
            pending = [record for record, _ in failed]
        return sum(record.rows for record in pending), code


def pack_records(rows: Sequence[AnalyticsRow]) -> list[_Record]:
    """Rows as newline-separated JSON documents, packed into records of at most 1,000 KiB."""
    records: list[_Record] = []
    chunk: list[bytes] = []
    size = 0
    for row in rows:
        line = (row.to_json() + "\n").encode("utf-8")
        if len(line) > MAX_RECORD_BYTES:
            raise AnalyticsRowTooLargeError(row.event_id, len(line), MAX_RECORD_BYTES)
        if chunk and size + len(line) > MAX_RECORD_BYTES:
            records.append(_Record(b"".join(chunk), len(chunk)))
            chunk, size = [], 0
        chunk.append(line)
        size += len(line)
    if chunk:
        records.append(_Record(b"".join(chunk), len(chunk)))
    return records


def request_batches(records: Sequence[_Record]) -> list[list[_Record]]:
    """Records grouped into PutRecordBatch calls within the record-count and size limits."""
    batches: list[list[_Record]] = []
    batch: list[_Record] = []
    size = 0
    for record in records:
        if batch and (
            len(batch) == MAX_RECORDS_PER_CALL or size + record.request_bytes > MAX_BYTES_PER_CALL
        ):
            batches.append(batch)
            batch, size = [], 0
        batch.append(record)
        size += record.request_bytes
    if batch:
        batches.append(batch)
    return batches


def build_firehose_sink(stream_name: str, *, session: Any = None) -> FirehoseSink:
    """The sink over a real Firehose client (from `session`, or boto3's default session)."""
    from jobhooks.storage.clients import aws_client

    return FirehoseSink(stream_name, aws_client("firehose", session=session))
