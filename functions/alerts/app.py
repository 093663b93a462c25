"""Alerts function: every 5 minutes (an EventBridge schedule), the tenants' job-health rules.

Wiring only; the use case is `jobhooks.alerts.evaluator` (docs/notifications.md), built by
`jobhooks.alerts.wiring`. It reads the rules, asks the analytics table about each tenant's jobs
over each rule's window, and notifies the state changes (`job_health.degraded`,
`job_health.recovered`) to the tenant's subscriptions that list them and to the operators.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from jobhooks.alerts.settings import AlertSettings
from jobhooks.alerts.wiring import build_alert_evaluator

logger = Logger()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "jobhooks"))
# The use case logs through the standard library (`jobhooks.*`): format it like ours.
copy_config_to_registered_loggers(source_logger=logger, include={"jobhooks"})
# At import, so a bad JOBHOOKS_* variable fails the cold start with its name in the message.
evaluator = build_alert_evaluator(AlertSettings.from_env())


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(raise_on_empty_metrics=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    summary = evaluator.evaluate()
    metrics.add_metric(name="JobHealthDegraded", unit=MetricUnit.Count, value=summary.degraded)
    metrics.add_metric(name="JobHealthRecovered", unit=MetricUnit.Count, value=summary.recovered)
    return {"rules": summary.rules, "degraded": summary.degraded, "recovered": summary.recovered}
