"""The deliver function's EMF metrics via Powertools (namespace `jobhooks`, dimension `service`).

- `DeliveryAttempts`: attempts made (a POST, or a try that could not sign);
- `DeliverySucceeded`: deliveries that got a 2xx;
- `DeliveryFailed`: failed attempts, once with `service` alone (the dashboard's line) and once
  per `failure_class` (a closed set: `model.FailureClass`);
- `DeliveryLatency`: milliseconds per POST, one value per attempt;
- `DeliveriesParked`: deliveries moved to the delivery DLQ.

Never a tenant, subscription or URL as a dimension: each distinct value is a billed metric.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from jobhooks.delivery.model import DeliveryOutcome, DeliveryResult, FailureClass


class PowertoolsDeliveryMetrics:
    """`DeliveryMetrics` on a Powertools `Metrics` (flushed by its `log_metrics` decorator)."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def record_outcomes(self, outcomes: Sequence[DeliveryOutcome]) -> None:
        if is_metrics_disabled():
            # Powertools 3.x keeps one metric store per process and never clears it while
            # metrics are disabled (`jobhooks dev`), yet prints it every 100 values: add nothing.
            return
        attempts = [outcome.attempt for outcome in outcomes if outcome.attempt is not None]
        failures = Counter(
            outcome.failure_class for outcome in outcomes if outcome.failure_class is not None
        )
        succeeded = sum(1 for outcome in outcomes if outcome.result is DeliveryResult.SUCCEEDED)
        parked = sum(1 for outcome in outcomes if outcome.result is DeliveryResult.PARKED)
        add = self._metrics.add_metric
        add(name="DeliveryAttempts", unit=MetricUnit.Count, value=len(attempts))
        add(name="DeliverySucceeded", unit=MetricUnit.Count, value=succeeded)
        add(name="DeliveryFailed", unit=MetricUnit.Count, value=sum(failures.values()))
        add(name="DeliveriesParked", unit=MetricUnit.Count, value=parked)
        for attempt in attempts:
            if attempt.error != FailureClass.SIGNING_ERROR.value:
                add(name="DeliveryLatency", unit=MetricUnit.Milliseconds, value=attempt.latency_ms)
        provider = self._metrics.provider
        dimensions = dict(provider.default_dimensions)
        if provider.service:
            dimensions.setdefault("service", str(provider.service))
        for failure_class, count in sorted(failures.items()):
            with single_metric(
                name="DeliveryFailed",
                unit=MetricUnit.Count,
                value=count,
                namespace=provider.namespace,
                default_dimensions=dimensions,
            ) as metric:
                metric.add_dimension(name="failure_class", value=failure_class.value)
