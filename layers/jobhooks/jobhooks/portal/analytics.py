"""The portal's chart: the tenant's failure rate and p95 duration per job_name, day by day.

It is the reviewed question `job_health_over_time` (docs/analytics.md) over the analytics table,
scoped to the session's tenant: the window names the tenant's `account_id` as the table stores
it, that is its keyed pseudonym when the stack pseudonymizes (the pseudonymizer that wrote the
rows computes it), so the engine only ever reads that tenant's rows. Without a query engine
(no analytics table on this deployment) the report says `configured: false`.

The engine comes from the route's dependency (`analytics_engine`): Athena on AWS; on
`jobhooks dev` the local API server provides DuckDB, which never ships in the Lambda layer.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Final

from jobhooks.analytics.pseudonymize import Pseudonymizer
from jobhooks.analytics.results import PendingQuery, QueryEngine, json_value
from jobhooks.analytics.window import QueryWindow
from jobhooks.portal.models import JobHealthPoint, JobHealthReport
from jobhooks.storage.times import format_time

QUESTION: Final = "job_health_over_time"
NOT_CONFIGURED_NOTE: Final = "Analytics is not configured on this deployment."
PENDING_NOTE: Final = "The numbers are still being computed; try again in a minute."


def job_health(
    tenant_id: str,
    *,
    days: int,
    now: datetime,
    engine: QueryEngine | None,
    pseudonymizer: Pseudonymizer | None,
) -> JobHealthReport:
    if engine is None:
        return JobHealthReport(configured=False, note=NOT_CONFIGURED_NOTE)
    account = pseudonymizer.pseudonym("account_id", tenant_id) if pseudonymizer else tenant_id
    end = now.replace(microsecond=now.microsecond // 1000 * 1000)
    window = QueryWindow(end - timedelta(days=days), end, account_id=account)
    answer = engine.answer(QUESTION, window)
    report = JobHealthReport(
        configured=True,
        window_from=format_time(window.start),
        window_to=format_time(end),
    )
    if isinstance(answer, PendingQuery):
        return report.model_copy(update={"pending": True, "note": PENDING_NOTE})
    points = [_point(record) for record in answer.records()]
    return report.model_copy(update={"points": points, "note": answer.note})


def _point(record: dict[str, Any]) -> JobHealthPoint:
    p95 = record.get("p95_duration_ms")
    return JobHealthPoint(
        day=str(json_value(record["utc_day"])),
        job_name=str(record["job_name"]),
        outcomes=int(record["outcomes"]),
        failures=int(record["failures"]),
        failure_rate=float(record["failure_rate"]),
        p95_duration_ms=int(p95) if p95 is not None else None,
    )
