"""The spill function's production wiring: settings in, `SpillDrain` over AWS clients out."""

from __future__ import annotations

from typing import Any

from jobhooks.analytics.recorder import build_analytics_recorder
from jobhooks.delivery.first_attempts import FirstAttemptLog
from jobhooks.spill.drain import RetryDelay, SpillDrain, SpillMetrics
from jobhooks.spill.settings import SpillSettings
from jobhooks.storage.clients import aws_client


def build_spill_drain(
    settings: SpillSettings, *, session: Any = None, metrics: SpillMetrics | None = None
) -> SpillDrain:
    recorder = build_analytics_recorder(settings, session=session)
    sqs = aws_client("sqs", session=session)
    return SpillDrain(
        sink=recorder.sink if recorder is not None else None,
        pseudonymizer=recorder.pseudonymizer if recorder is not None else None,
        pages=FirstAttemptLog(
            settings.first_attempts_table,
            aws_client("dynamodb", session=session),
            retention_days=settings.attempt_log_days,
        ),
        sqs=sqs,
        queue_url=settings.spill_queue_url,
        dead_letter_queue_url=settings.spill_dlq_url,
        retry_delay=RetryDelay(
            settings.spill_first_retry_seconds, settings.spill_max_retry_seconds
        ),
        metrics=metrics,
    )
