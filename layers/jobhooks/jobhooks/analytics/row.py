"""One row of `background_job_completed`: an outcome, typed for the table.

The row is built from the outcome the webhook carries, field for field, never re-derived from
the raw event: the table and the webhooks cannot disagree. What the row adds is the table's
typing (a timestamp, numbers), the error category of a failure (never its message), and,
when the deployment turns it on, pseudonyms in place of `account_id` and `job_id`.

`to_record()` is the JSON both sinks write (Firehose converts it to Parquet through the Glue
table, the local sink writes it as a line of a file): the columns in order, `timestamp_utc` as
RFC 3339 UTC with milliseconds and `Z`, the form Firehose's OpenX JSON deserializer reads as a
timestamp.
"""

import json
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from jobhooks.analytics.columns import COLUMN_NAMES
from jobhooks.analytics.pseudonymize import PSEUDONYMIZED_COLUMNS, Pseudonymizer
from jobhooks.inbound.outcome import OutcomeData, format_timestamp
from jobhooks.inbound.sanitize import ERROR_CATEGORIES


class AnalyticsRow(BaseModel):
    """Field order is the table's column order (`jobhooks.analytics.columns.COLUMNS`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timestamp_utc: datetime
    event_id: str
    release: str
    account_id: str
    job_id: str
    job_name: str
    queue_name: str
    attempt_count: int
    queue_wait_ms: int
    duration_ms: int
    status: Literal["success", "failure"]
    unmeasured: tuple[str, ...]
    error_category: str | None = None

    @field_validator("timestamp_utc")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("timestamp_utc must carry its time zone (UTC)")
        return value.astimezone(UTC)

    @field_validator("error_category")
    @classmethod
    def _controlled(cls, value: str | None) -> str | None:
        if value is not None and value not in ERROR_CATEGORIES:
            raise ValueError(f"error_category must be one of {', '.join(ERROR_CATEGORIES)}")
        return value

    def to_record(self) -> dict[str, Any]:
        """The row as JSON-ready data, in the table's column order (`columns.COLUMN_NAMES`)."""
        values = self.model_dump(mode="json")
        values["timestamp_utc"] = format_timestamp(self.timestamp_utc)
        values["unmeasured"] = list(self.unmeasured)
        return {name: values[name] for name in COLUMN_NAMES}

    def to_json(self) -> str:
        """One compact JSON line (no newline)."""
        return json.dumps(self.to_record(), ensure_ascii=False, separators=(",", ":"))


def row_from_outcome(
    outcome: OutcomeData, *, pseudonymizer: Pseudonymizer | None = None
) -> AnalyticsRow:
    """The row of an outcome as the webhook carries it (`outcome_data`): the row model checks
    every column's type itself, so the outcome is not validated into its own model first."""
    error = outcome["fetcher"].get("error")
    values: dict[str, Any] = {
        "timestamp_utc": datetime.fromisoformat(outcome["timestamp_utc"]),
        "event_id": outcome["event_id"],
        "release": outcome["release"],
        "account_id": outcome["account_id"],
        "job_id": outcome["job_id"],
        "job_name": outcome["job_name"],
        "queue_name": outcome["queue_name"],
        "attempt_count": outcome["attempt_count"],
        "queue_wait_ms": outcome["queue_wait_ms"],
        "duration_ms": outcome["duration_ms"],
        "status": outcome["status"],
        "unmeasured": tuple(outcome["unmeasured"]),
        "error_category": (
            error["category"] if outcome["status"] == "failure" and error is not None else None
        ),
    }
    if pseudonymizer is not None:
        for column in PSEUDONYMIZED_COLUMNS:
            values[column] = pseudonymizer.pseudonym(column, values[column])
    return AnalyticsRow(**values)
