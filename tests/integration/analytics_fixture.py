"""A hand-built background_job_completed table whose answers are known, written as the sink
writes it (`LocalFileSink`, one file per call, `dt` = the arrival day).

Window FETCHER = [2026-07-13, 2026-07-16): Fetcher-like outcomes (queue_wait_ms never measured,
attempt_count 1, failures without a duration), with one row just before and one exactly at the
end of the window. Window MEASURED = [2026-08-01, 2026-08-02): a producer that measures queue
waits and attempts. Window EMPTY holds nothing. `EXPECTED` gives every question's rows for the
first two windows, worked out by hand (nearest-rank percentiles: the smallest value with at
least p percent of the values at or below it).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from jobhooks.analytics.row import AnalyticsRow
from jobhooks.analytics.window import QueryWindow
from jobhooks_tools.local.analytics.files import LocalFileSink

NOW = datetime(2026, 9, 1, tzinfo=UTC)
FETCHER = QueryWindow(datetime(2026, 7, 13, tzinfo=UTC), datetime(2026, 7, 16, tzinfo=UTC))
MEASURED = QueryWindow(datetime(2026, 8, 1, tzinfo=UTC), datetime(2026, 8, 2, tzinfo=UTC))
EMPTY = QueryWindow(datetime(2026, 6, 1, tzinfo=UTC), datetime(2026, 6, 2, tzinfo=UTC))

FETCHER_UNMEASURED = ("queue_wait_ms",)
FAILURE_UNMEASURED = ("queue_wait_ms", "duration_ms")


def row(
    event_id: str,
    at: str,
    *,
    account: str = "acme",
    job: str = "payments",
    status: str = "success",
    duration: int = 0,
    wait: int = 0,
    attempts: int = 1,
    unmeasured: Sequence[str] | None = None,
    category: str | None = None,
) -> AnalyticsRow:
    if unmeasured is None:
        unmeasured = FETCHER_UNMEASURED if status == "success" else FAILURE_UNMEASURED
    return AnalyticsRow(
        timestamp_utc=datetime.fromisoformat(at),
        event_id=event_id,
        release="fetcher@2.0.2",
        account_id=account,
        job_id=f"job-{event_id}",
        job_name=job,
        queue_name="//lerian.fetcher/worker",
        attempt_count=attempts,
        queue_wait_ms=wait,
        duration_ms=duration,
        status=status,  # type: ignore[arg-type]
        unmeasured=tuple(unmeasured),
        error_category=category if status == "failure" else None,
    )


ROWS = [
    # outside FETCHER: the millisecond before it, and its (exclusive) end
    row("e00", "2026-07-12T23:59:59.999Z", status="failure", category="unknown"),
    row("e12", "2026-07-16T00:00:00.000Z", status="failure", category="unknown"),
    # 2026-07-13
    row("e01", "2026-07-13T08:00:00.000Z", duration=100),
    row("e02", "2026-07-13T09:00:00.000Z", duration=200),
    row("e03", "2026-07-13T10:00:00.000Z", duration=300),
    row("e04", "2026-07-13T11:00:00.000Z", status="failure", category="datasource_error"),
    row("e05", "2026-07-13T12:00:00.000Z", account="globex", job="exports", duration=1000),
    # 2026-07-14
    row("e06", "2026-07-14T08:00:00.000Z", account="globex", job="exports", duration=3000),
    row(
        "e07",
        "2026-07-14T09:00:00.000Z",
        account="globex",
        job="exports",
        status="failure",
        category="schema_mismatch",
    ),
    row(
        "e08",
        "2026-07-14T10:00:00.000Z",
        account="globex",
        job="exports",
        status="failure",
        category="schema_mismatch",
    ),
    row("e09", "2026-07-14T11:00:00.000Z", duration=400),
    row(
        "e10",
        "2026-07-14T12:00:00.000Z",
        job="unknown",
        status="failure",
        category="unknown",
        unmeasured=("job_name", "queue_wait_ms", "duration_ms"),
    ),
    # 2026-07-15
    row("e11", "2026-07-15T23:59:59.999Z", duration=500),
    # MEASURED: a producer that reports queue waits and attempts
    row("f1", "2026-08-01T01:00:00.000Z", job="exports", duration=10, wait=5, unmeasured=()),
    row(
        "f2",
        "2026-08-01T02:00:00.000Z",
        job="exports",
        duration=20,
        wait=15,
        attempts=2,
        unmeasured=(),
    ),
    row(
        "f3",
        "2026-08-01T03:00:00.000Z",
        job="exports",
        status="failure",
        category="storage_write_failed",
        wait=25,
        attempts=3,
        unmeasured=("duration_ms",),
    ),
    row("f4", "2026-08-01T04:00:00.000Z", duration=30, unmeasured=("queue_wait_ms",)),
    row(
        "f5",
        "2026-08-01T05:00:00.000Z",
        duration=40,
        attempts=0,
        unmeasured=("attempt_count", "queue_wait_ms"),
    ),
]

WAIT_NOTE = "Nothing in this window is measured"

EXPECTED: dict[str, dict[QueryWindow, list[list[Any]]]] = {
    "failure_rate_by_job": {
        FETCHER: [["unknown", 1, 1, 1.0], ["exports", 4, 2, 0.5], ["payments", 6, 1, 0.1667]],
        MEASURED: [["exports", 3, 1, 0.3333], ["payments", 2, 0, 0.0]],
    },
    "failure_rate_by_account": {
        FETCHER: [["globex", 4, 2, 0.5], ["acme", 7, 2, 0.2857]],
        MEASURED: [["acme", 5, 1, 0.2]],
    },
    "failure_categories": {
        FETCHER: [
            ["schema_mismatch", "exports", 2],
            ["datasource_error", "payments", 1],
            ["unknown", "unknown", 1],
        ],
        MEASURED: [["storage_write_failed", "exports", 1]],
    },
    "job_health_window": {
        FETCHER: [["exports", 4, 2, 0.5, 2, 3000], ["payments", 6, 1, 0.1667, 5, 500]],
        MEASURED: [["exports", 3, 1, 0.3333, 2, 20], ["payments", 2, 0, 0.0, 2, 40]],
    },
    "slowest_jobs": {
        FETCHER: [
            ["exports", 4, 2, 1000, 3000, 3000],
            ["payments", 6, 5, 300, 500, 500],
            ["unknown", 1, 0, None, None, None],
        ],
        MEASURED: [["payments", 2, 2, 30, 40, 40], ["exports", 3, 2, 10, 20, 20]],
    },
    "waiting_jobs": {
        FETCHER: [
            ["payments", 6, 0, None, None, None],
            ["exports", 4, 0, None, None, None],
            ["unknown", 1, 0, None, None, None],
        ],
        MEASURED: [["exports", 3, 3, 15, 25, 25], ["payments", 2, 0, None, None, None]],
    },
    "retried_jobs": {
        FETCHER: [
            ["exports", 4, 4, 0, 0.0, 1],
            ["payments", 6, 6, 0, 0.0, 1],
            ["unknown", 1, 1, 0, 0.0, 1],
        ],
        MEASURED: [["exports", 3, 3, 2, 0.6667, 3], ["payments", 2, 1, 0, 0.0, 1]],
    },
    "daily_outcomes": {
        FETCHER: [
            ["2026-07-13", 5, 4, 1, 0.2],
            ["2026-07-14", 5, 2, 3, 0.6],
            ["2026-07-15", 1, 1, 0, 0.0],
        ],
        MEASURED: [["2026-08-01", 5, 4, 1, 0.2]],
    },
    "job_health_over_time": {
        FETCHER: [
            ["2026-07-13", "exports", 1, 0, 0.0, 1, 1000],
            ["2026-07-13", "payments", 4, 1, 0.25, 3, 300],
            ["2026-07-14", "exports", 3, 2, 0.6667, 1, 3000],
            ["2026-07-14", "payments", 1, 0, 0.0, 1, 400],
            ["2026-07-14", "unknown", 1, 1, 1.0, 0, None],
            ["2026-07-15", "payments", 1, 0, 0.0, 1, 500],
        ],
        MEASURED: [
            ["2026-08-01", "exports", 3, 1, 0.3333, 2, 20],
            ["2026-08-01", "payments", 2, 0, 0.0, 2, 40],
        ],
    },
}


def write_rows(
    data_dir: Path, rows: Sequence[AnalyticsRow], *, delay: timedelta = timedelta(minutes=1)
) -> None:
    """One sink call per row, each arriving `delay` after its outcome (its `dt` follows)."""
    for written in rows:
        arrival = written.timestamp_utc + delay
        LocalFileSink(data_dir, clock=lambda arrival=arrival: arrival).put_rows([written])


def write_fixture(data_dir: Path) -> None:
    write_rows(data_dir, ROWS)


def write_duplicates(data_dir: Path) -> None:
    """Every row a second time: half a day later (some land in the next day's partition, as a
    retry after a crash would), and a third copy of a few rows in one batch."""
    write_rows(data_dir, ROWS, delay=timedelta(hours=12))
    LocalFileSink(data_dir, clock=lambda: datetime(2026, 7, 14, 23, tzinfo=UTC)).put_rows(
        [r for r in ROWS if r.event_id in ("e03", "e07", "e10")]
    )
