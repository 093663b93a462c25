"""The writes after the webhooks went out: the analytics rows of the accepted events, and the
first-attempt pages when they could not be written (docs/ingest.md, "When a write after the
webhooks fails").

The rule: neither write fails an event when it fails, because retrying the event would POST its
webhooks again. What was not written goes to the spill queue for the spill function; only when
the spill queue refuses too, or there is none (the management API's in-process ingest), do the
events of the write fail and retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from jobhooks.analytics.exceptions import AnalyticsError, PseudonymizationKeyError
from jobhooks.delivery.first_attempts import FirstAttemptPage
from jobhooks.inbound.outcome import OutcomeData
from jobhooks.ingest.telemetry import IngestTelemetry

if TYPE_CHECKING:
    # Imported by the spill path itself (a failed write), not with every cold start.
    from jobhooks.ingest.ports import OutcomeRecorder, Spill
    from jobhooks.spill.messages import SpilledPages, SpilledRows


def record_outcomes(
    outcomes: Sequence[tuple[str, OutcomeData]],
    *,
    analytics: OutcomeRecorder | None,
    spill: Spill | None,
    telemetry: IngestTelemetry,
) -> dict[str, Exception]:
    """Write the rows of `outcomes` (event id, outcome) in one sink call; the events to retry
    (none when analytics is off, the sink took the rows, or the spill queue took them)."""
    if analytics is None or not outcomes:
        return {}
    try:
        analytics.record([outcome for _, outcome in outcomes])
    except AnalyticsError as error:
        spilled = _spilled_rows(outcomes, error, analytics, spill, telemetry)
        for event_id, _ in outcomes:
            telemetry.analytics_write_failed(event_id, error, spilled=spilled)
        if spilled:
            return {}
        # The sink says how many rows it refused, not which: every event of the call retries
        # (its deliveries are enqueued; deliver deduplicates them).
        return {event_id: error for event_id, _ in outcomes}
    return {}


def spill_pages(
    pages: Sequence[FirstAttemptPage],
    error: Exception,
    *,
    spill: Spill | None,
    telemetry: IngestTelemetry,
) -> bool:
    """The first-attempt stage's fallback when the pages could not be written: spill them, so
    the events complete instead of retrying; whether the spill queue took them."""
    from jobhooks.spill.messages import SpilledPages

    return _spilled(SpilledPages(tuple(pages)), error, spill, telemetry)


def _spilled_rows(
    outcomes: Sequence[tuple[str, OutcomeData]],
    error: AnalyticsError,
    analytics: OutcomeRecorder,
    spill: Spill | None,
    telemetry: IngestTelemetry,
) -> bool:
    """Whether the rows the sink refused are in the spill queue now."""
    from jobhooks.spill.messages import SpilledRows

    if spill is None:
        return False
    plain = [outcome for _, outcome in outcomes]
    try:
        rows, pseudonymized = analytics.rows_for(plain), True
    except PseudonymizationKeyError:
        # The spill function pseudonymizes them once it can read the key.
        rows, pseudonymized = analytics.rows_for(plain, pseudonymize=False), False
    except Exception as building:
        telemetry.spill_refused("analytics rows", building)
        return False
    return _spilled(SpilledRows(tuple(rows), pseudonymized), error, spill, telemetry)


def _spilled(
    spilled: SpilledRows | SpilledPages,
    error: Exception,
    spill: Spill | None,
    telemetry: IngestTelemetry,
) -> bool:
    """Send what could not be written to the spill queue; whether it took it."""
    from jobhooks.spill.messages import SpilledRows

    if spill is None:
        return False
    kind = "analytics rows" if isinstance(spilled, SpilledRows) else "first-attempt pages"
    try:
        messages = spill.spill(spilled)
    except Exception as refused:
        telemetry.spill_refused(kind, refused)
        return False
    size = len(spilled.rows) if isinstance(spilled, SpilledRows) else len(spilled.pages)
    telemetry.spilled(kind, size, messages, error)
    return True
