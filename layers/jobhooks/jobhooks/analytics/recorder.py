"""Outcomes in, rows written: what the ingest use case calls once an event's deliveries are
enqueued, before it completes the event's claim.

    recorder = build_analytics_recorder(settings)     # None when analytics is not configured
    recorder.record([outcome])                         # raises AnalyticsError: retry the record

Every verified, deduplicated event becomes one row, whether or not a subscription wanted it.
Quarantined messages and test sends never reach here, so they are never rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jobhooks.analytics.pseudonymize import Pseudonymizer
from jobhooks.analytics.row import AnalyticsRow, row_from_outcome
from jobhooks.analytics.settings import AnalyticsSinkSettings
from jobhooks.analytics.sink import AnalyticsSink
from jobhooks.inbound.outcome import OutcomeData


class AnalyticsRecorder:
    def __init__(self, sink: AnalyticsSink, *, pseudonymizer: Pseudonymizer | None = None) -> None:
        self.sink = sink
        self.pseudonymizer = pseudonymizer

    def rows_for(
        self, outcomes: Sequence[OutcomeData], *, pseudonymize: bool = True
    ) -> list[AnalyticsRow]:
        """The outcomes' rows; `pseudonymize` False keeps the raw ids (the spill path, when the
        key cannot be read: the spill function pseudonymizes them before they are written)."""
        pseudonymizer = self.pseudonymizer if pseudonymize else None
        return [row_from_outcome(outcome, pseudonymizer=pseudonymizer) for outcome in outcomes]

    def record(self, outcomes: Sequence[OutcomeData]) -> None:
        """Write one row per outcome; raises `AnalyticsError` (the caller retries the record)."""
        self.sink.put_rows(self.rows_for(outcomes))


def build_analytics_recorder(
    settings: AnalyticsSinkSettings, *, session: Any = None
) -> AnalyticsRecorder | None:
    """The recorder the settings ask for, over real clients; None when analytics is off."""
    sink: AnalyticsSink
    if settings.analytics_stream:
        from jobhooks.analytics.firehose import build_firehose_sink

        sink = build_firehose_sink(settings.analytics_stream, session=session)
    elif settings.analytics_dir:
        # The local file sink is not part of what Lambda functions load: the local stack
        # registers it.
        from jobhooks.analytics.local_backend import local_backend

        sink = local_backend().sink(settings.analytics_dir)
    else:
        return None
    return AnalyticsRecorder(sink, pseudonymizer=settings.pseudonymizer(session=session))
