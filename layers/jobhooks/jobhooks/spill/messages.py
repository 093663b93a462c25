"""What a spill message holds: rows for Firehose or pages for `FirstAttemptsTable`, as JSON.

    {"kind": "analytics_rows", "pseudonymized": true, "rows": [<row record>, ...]}
    {"kind": "first_attempt_pages", "pages": [<page>, ...]}

A row is the record a sink writes (`AnalyticsRow.to_record()`). `pseudonymized` is false only
when ingest could not read the pseudonymization key: the spill function pseudonymizes those
rows before writing them, so no raw id reaches the table by way of the spill path. A page is
its (subscription, tenant, batch) and its successes, each `[event_id, event_type, at in epoch
milliseconds, status code, latency in ms]`, as the page item stores them.

One message carries at most `MAX_SPILL_MESSAGE_BYTES` of JSON: what does not fit is split
over several (`spill_messages`), each a whole list of rows or pages.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from jobhooks.analytics.row import AnalyticsRow
from jobhooks.delivery.first_attempts import FirstAttempt, FirstAttemptPage, batch_time
from jobhooks.inbound.envelope import SQS_MAX_MESSAGE_BYTES
from jobhooks.spill.exceptions import SpilledMessageInvalidError
from jobhooks.storage.times import epoch_millis

# Room for the envelope's keys and SQS's own accounting of the attributes (none are sent).
MAX_SPILL_MESSAGE_BYTES: Final = SQS_MAX_MESSAGE_BYTES - 4096


class SpillKind(StrEnum):
    ANALYTICS_ROWS = "analytics_rows"
    FIRST_ATTEMPT_PAGES = "first_attempt_pages"


@dataclass(frozen=True, slots=True)
class SpilledRows:
    rows: tuple[AnalyticsRow, ...]
    pseudonymized: bool


@dataclass(frozen=True, slots=True)
class SpilledPages:
    pages: tuple[FirstAttemptPage, ...]


SpillMessage = SpilledRows | SpilledPages


def spill_messages(spilled: SpillMessage) -> Iterator[str]:
    """The message bodies of `spilled`: as few as fit, each under the size limit."""
    if isinstance(spilled, SpilledRows):
        head: dict[str, Any] = {
            "kind": SpillKind.ANALYTICS_ROWS.value,
            "pseudonymized": spilled.pseudonymized,
        }
        items, key = [row.to_record() for row in spilled.rows], "rows"
    else:
        head = {"kind": SpillKind.FIRST_ATTEMPT_PAGES.value}
        items, key = [_page_to_json(page) for page in spilled.pages], "pages"
    chunk: list[str] = []
    size = 0
    for item in items:
        text = _compact(item)
        length = len(text.encode("utf-8")) + 1  # and its comma
        if length > MAX_SPILL_MESSAGE_BYTES:
            # A row is at most a Firehose record (1,000 KiB) and a page a DynamoDB item (400
            # KB): neither can exceed a message.
            raise ValueError(f"one spilled {key[:-1]} is larger than a spill message")
        if chunk and size + length > MAX_SPILL_MESSAGE_BYTES:
            yield _body(head, key, chunk)
            chunk, size = [], 0
        chunk.append(text)
        size += length
    if chunk:
        yield _body(head, key, chunk)


def read_spill_message(body: str) -> SpillMessage:
    """A spill message's body back; `SpilledMessageInvalidError` when it is not one."""
    try:
        data = json.loads(body)
        kind = SpillKind(data["kind"])
        if kind is SpillKind.ANALYTICS_ROWS:
            return SpilledRows(
                rows=tuple(AnalyticsRow.model_validate(row) for row in data["rows"]),
                pseudonymized=bool(data["pseudonymized"]),
            )
        return SpilledPages(pages=tuple(_page_from_json(page) for page in data["pages"]))
    except SpilledMessageInvalidError:
        raise
    except Exception as error:  # whatever is wrong with it, it names no secret
        raise SpilledMessageInvalidError(f"{type(error).__name__}: {str(error)[:200]}") from None


def _compact(item: Any) -> str:
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


def _body(head: dict[str, Any], key: str, chunk: Sequence[str]) -> str:
    # The items are JSON already: joined as they are rather than parsed and dumped again.
    return _compact(head)[:-1] + f',"{key}":[' + ",".join(chunk) + "]}"


def _page_to_json(page: FirstAttemptPage) -> dict[str, Any]:
    return {
        "subscription_id": page.subscription_id,
        "tenant_id": page.tenant_id,
        "batch_id": page.batch_id,
        "successes": [
            [s.event_id, s.event_type, epoch_millis(s.at), s.status_code, s.latency_ms]
            for s in page.successes
        ],
    }


def _page_from_json(data: dict[str, Any]) -> FirstAttemptPage:
    if batch_time(str(data["batch_id"])) is None:
        raise SpilledMessageInvalidError("a page's batch id carries no time")
    return FirstAttemptPage(
        subscription_id=str(data["subscription_id"]),
        tenant_id=str(data["tenant_id"]),
        batch_id=str(data["batch_id"]),
        successes=tuple(
            FirstAttempt(
                event_id=str(event_id),
                event_type=str(event_type),
                at=datetime.fromtimestamp(int(at_ms) / 1000, UTC),
                status_code=int(status_code),
                latency_ms=int(latency_ms),
            )
            for event_id, event_type, at_ms, status_code, latency_ms in data["successes"]
        ),
    )
