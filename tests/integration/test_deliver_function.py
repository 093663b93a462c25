"""functions/deliver/app.py as Lambda runs it: env settings, Powertools, the partial batch response.

The handler is imported from its file with the environment the template gives it and driven by the
local SQS event source; its stdout (Powertools' JSON logs and EMF metrics) is inspected.
"""

from __future__ import annotations

import importlib.util
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from aws_lambda_powertools import Metrics
from jobhooks.delivery.metrics import PowertoolsDeliveryMetrics
from jobhooks.delivery.model import (
    DeliveryAttempt,
    DeliveryOutcome,
    DeliveryResult,
    DeliveryStatus,
    FailureClass,
)
from jobhooks.settings import ConfigurationError
from jobhooks.subscriptions import SubscriptionStatus
from jobhooks_tools.local.event_source import BatchStats, SqsEventSource
from jobhooks_tools.local.template import LocalResources

from tests.integration.deliver_harness import DeliveryBench, Reply, delivery_bench

APP = Path(__file__).resolve().parents[2] / "functions" / "deliver" / "app.py"

SERVICE = f"jobhooks-deliver-test-{uuid.uuid4().hex[:8]}"

pytestmark = pytest.mark.timeout(60)


def import_app() -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"deliver_app_{uuid.uuid4().hex}", APP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def bench(stack: LocalResources, monkeypatch: pytest.MonkeyPatch) -> Iterator[DeliveryBench]:
    # The `stack` fixture has set the template's JOBHOOKS_* variables; these are the local ones.
    with delivery_bench(stack) as bench:
        # Powertools keeps one logger per service name, its handler bound to the stdout of the
        # test that made it: a fresh name keeps this test's output in this test's capture.
        monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", SERVICE)
        monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "jobhooks")
        monkeypatch.setenv("JOBHOOKS_ALLOW_PRIVATE_WEBHOOKS", "true")
        monkeypatch.setenv("JOBHOOKS_DELIVERY_TIMEOUT_SECONDS", "2")
        yield bench


def emf_blobs(output: str) -> list[dict[str, Any]]:
    blobs = []
    for line in output.splitlines():
        if line.startswith("{") and '"_aws"' in line:
            blobs.append(json.loads(line))
    return blobs


def total(value: float | list[float]) -> float:
    """EMF values are a number or a list of numbers."""
    return sum(value) if isinstance(value, list) else value


def run_deliver_function_once(bench: DeliveryBench, app: Any) -> BatchStats:
    """One receive of the delivery queue handed to the deliver function, as Lambda's event
    source hands it; the function's HTTP client is closed afterwards."""
    try:
        return SqsEventSource(
            bench.queue_url,
            app.handler,
            sqs_client=bench.raw_sqs,
            wait_time_seconds=0,
            function_timeout_seconds=60,
            function_name="jobhooks-DeliverFunction",
            strict_responses=True,
        ).run_once(wait_time_seconds=0)
    finally:
        app.deliverer.close()


def test_the_handler_delivers_a_batch_and_emits_delivery_metrics(
    bench: DeliveryBench, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = bench.receiver(Reply(200))
    failing = bench.receiver(Reply(500, b"upstream exploded"))
    ok_sub, failing_sub = bench.subscribe(ok), bench.subscribe(failing)
    ok_task, failing_task = bench.task(ok_sub), bench.task(failing_sub)
    bench.enqueue(ok_task, failing_task)
    app = import_app()
    # Powertools keeps metrics in one store per process and, while POWERTOOLS_METRICS_DISABLED
    # is set (other tests set it), never clears it: start from an empty one.
    app.metrics.clear_metrics()
    stats = run_deliver_function_once(bench, app)

    assert (stats.received, stats.succeeded, stats.failed, stats.failed_batches) == (2, 1, 1, 0)
    assert ok.count == 1 and failing.count == 1
    output = capsys.readouterr().out
    blobs = emf_blobs(output)
    [batch] = [blob for blob in blobs if "DeliveryAttempts" in blob]
    assert batch["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "jobhooks"
    assert batch["service"] == SERVICE
    assert total(batch["DeliveryAttempts"]) == 2
    assert total(batch["DeliverySucceeded"]) == 1
    assert total(batch["DeliveryFailed"]) == 1
    assert total(batch["DeliveriesParked"]) == 0
    assert len(batch["DeliveryLatency"]) == 2
    [by_class] = [blob for blob in blobs if "failure_class" in blob]
    assert (by_class["failure_class"], total(by_class["DeliveryFailed"])) == ("http_5xx", 1)
    assert by_class["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service", "failure_class"]]
    # Logs carry ids, never a secret, a body, a response or a URL (paths can hold tokens).
    assert failing_task.delivery_id in output
    for secret_or_body in (ok_sub.secret, failing_sub.secret, "pagamentos", "exploded", "/hooks/"):
        assert secret_or_body not in output


def test_the_handler_disables_the_subscription_of_an_endpoint_that_answers_410(
    bench: DeliveryBench,
) -> None:
    # The disable is a revision-checked whole-item write (PutItem) by the deliver function,
    # with DeliverRole's grant on the subscriptions table: the layer's own tests run the
    # deliverer as no function.
    gone = bench.receiver(Reply(410, b"this endpoint was removed"))
    issued = bench.subscribe(gone)
    task = bench.task(issued)
    bench.enqueue(task)
    app = import_app()
    stats = run_deliver_function_once(bench, app)

    assert (stats.received, stats.succeeded, stats.failed) == (1, 1, 0)
    assert gone.count == 1 and bench.queue_depth() == 0
    assert bench.record(task).status is DeliveryStatus.GONE
    subscription = bench.store.get(issued.subscription.subscription_id)
    assert subscription.status is SubscriptionStatus.DISABLED
    assert subscription.disabled_reason is not None and "410" in subscription.disabled_reason


def test_a_bad_setting_stops_the_cold_start_naming_the_variable(
    bench: DeliveryBench, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBHOOKS_RETRY_SCHEDULE", "60,300")

    with pytest.raises(ConfigurationError, match="JOBHOOKS_RETRY_SCHEDULE"):
        import_app()


def test_no_delivery_metrics_pile_up_while_metrics_are_disabled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    metrics = Metrics(namespace="jobhooks", service=SERVICE)
    metrics.clear_metrics()
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    attempt = DeliveryAttempt(n=1, at=datetime.now(UTC), status_code=500, latency_ms=3)
    outcome = DeliveryOutcome(
        DeliveryResult.RETRY_SCHEDULED, "dlv_1", attempt, FailureClass.HTTP_5XX, 5
    )

    PowertoolsDeliveryMetrics(metrics).record_outcomes([outcome] * 150)

    assert metrics.provider.metric_set == {}
