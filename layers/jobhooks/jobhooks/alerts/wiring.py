"""An `AlertEvaluator` over real clients, from `AlertSettings`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from jobhooks.alerts.evaluator import AlertEvaluator
from jobhooks.alerts.settings import AlertSettings
from jobhooks.alerts.store import AlertRuleStore
from jobhooks.analytics.engine import build_query_engine
from jobhooks.analytics.settings import AnalyticsSinkSettings
from jobhooks.notifications.wiring import build_notifier
from jobhooks.storage.clients import aws_client
from jobhooks.storage.times import utc_now


def build_alert_evaluator(
    settings: AlertSettings,
    *,
    session: Any = None,
    clock: Callable[[], datetime] = utc_now,
) -> AlertEvaluator:
    pseudonyms = AnalyticsSinkSettings(
        analytics_pseudonymization_secret_arn=settings.analytics_pseudonymization_secret_arn,
        analytics_pseudonymization_key=settings.analytics_pseudonymization_key,
    )
    return AlertEvaluator(
        rules=AlertRuleStore(
            settings.alert_rules_table, aws_client("dynamodb", session=session), clock=clock
        ),
        engine=build_query_engine(settings, session=session),
        notifier=build_notifier(settings, session=session, clock=clock),
        pseudonymizer=pseudonyms.pseudonymizer(session=session),
        wait_seconds=settings.alert_query_wait_seconds,
        clock=clock,
    )
