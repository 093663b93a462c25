"""What a query engine answers, in the shapes the API and the CLI print.

- `QueryResult.to_dict()`: `{"question", "engine", "from", "to", "columns", "rows", "note"}`,
  `rows` a list of value lists in `columns` order, `note` a sentence (or null) that says
  plainly when the window holds no outcome or nothing measured for the question;
- `RowsResult.to_dict()`: `{"rows": [{column: value}, ...]}` (at most `ROW_LIMIT` rows:
  `truncated` says when there were more);
- `PendingQuery.to_dict()`: `{"question", "engine", "from", "to", "status": "running",
  "query_id", "state", "scanned_bytes"}`: a query still running when the caller's time ran out
  (Athena only); poll it by `query_id`.

Values are JSON-ready: timestamps as RFC 3339 UTC with milliseconds and `Z`, dates as
`yyyy-MM-dd`, numbers as numbers, lists as lists, NULL as null.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, Protocol

from jobhooks.analytics.questions import Question
from jobhooks.analytics.window import QueryWindow
from jobhooks.storage.times import format_time

NO_OUTCOMES_NOTE = "No outcome in this window."


@dataclass(frozen=True, slots=True)
class QueryResult:
    question: str
    engine: str
    window: QueryWindow
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    note: str | None = None

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "engine": self.engine,
            **self.window.to_dict(),
            "columns": list(self.columns),
            "rows": [list(row) for row in self.rows],
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class RowsResult:
    engine: str
    window: QueryWindow
    rows: tuple[dict[str, Any], ...]
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"rows": [dict(row) for row in self.rows]}


@dataclass(frozen=True, slots=True)
class PendingQuery:
    question: str
    engine: str
    window: QueryWindow
    query_id: str
    state: str = "RUNNING"
    scanned_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "engine": self.engine,
            **self.window.to_dict(),
            "status": "running",
            "query_id": self.query_id,
            "state": self.state,
            "scanned_bytes": self.scanned_bytes,
        }


Answer = QueryResult | PendingQuery
Listing = RowsResult | PendingQuery


class QueryEngine(Protocol):
    """DuckDB (`jobhooks_tools.local.analytics.duckdb_engine`) and Athena
    (`jobhooks.analytics.athena`).

    `wait_seconds` bounds how long a call waits for the engine (the API must answer within API
    Gateway's 30 s): an engine that is not done by then returns a `PendingQuery` to `poll`.
    """

    name: str

    def answer(
        self, question: str, window: QueryWindow, *, wait_seconds: float | None = None
    ) -> Answer: ...

    def rows(self, window: QueryWindow, *, wait_seconds: float | None = None) -> Listing: ...

    def poll(
        self, query_id: str, *, wait_seconds: float | None = None
    ) -> QueryResult | RowsResult | PendingQuery: ...


def note_for(
    question: Question, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> str | None:
    """Say plainly when the window holds nothing, or nothing measured for this question."""
    if not rows:
        return NO_OUTCOMES_NOTE
    if question.measured_column and question.measured_column in columns:
        index = list(columns).index(question.measured_column)
        if not any(row[index] for row in rows):
            return question.when_unmeasured or "Nothing in this window is measured."
    return None


def json_value(value: Any) -> Any:
    """A value an engine returned, as JSON-ready data (naive timestamps are UTC)."""
    if isinstance(value, datetime):
        return format_time(value if value.tzinfo else value.replace(tzinfo=UTC))
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list | tuple):
        return [json_value(item) for item in value]
    return value
