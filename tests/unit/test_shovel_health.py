"""/healthz and /metrics of the shovel."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from jobhooks_tools.shovel.health import PROMETHEUS_CONTENT_TYPE, HealthServer
from jobhooks_tools.shovel.metrics import ShovelMetrics


def test_healthz_answers_503_with_the_reason_when_unhealthy() -> None:
    state: dict[str, Any] = {"healthy": True}
    server = HealthServer(
        lambda: (state["healthy"], {"status": "ok" if state["healthy"] else "unavailable"}),
        lambda: "",
        "127.0.0.1",
        0,
    ).start()
    try:
        with urllib.request.urlopen(f"{server.url}/healthz", timeout=5) as response:
            assert response.status == 200
        state["healthy"] = False
        try:
            urllib.request.urlopen(f"{server.url}/healthz", timeout=5)
        except urllib.error.HTTPError as error:
            assert error.code == 503
            assert json.loads(error.read()) == {"status": "unavailable"}
        else:
            raise AssertionError("an unhealthy shovel must answer 503")
    finally:
        server.stop()


def test_metrics_are_prometheus_text_with_every_counter() -> None:
    metrics = ShovelMetrics()
    metrics.forwarded("/", 3)
    metrics.parked("tenant-a", "too_large")
    metrics.gauge("jobhooks_shovel_in_flight", lambda: {(): 2.0})
    server = HealthServer(lambda: (True, {}), metrics.render, "127.0.0.1", 0).start()
    try:
        with urllib.request.urlopen(f"{server.url}/metrics", timeout=5) as response:
            text = response.read().decode()
            assert response.headers["Content-Type"] == PROMETHEUS_CONTENT_TYPE
    finally:
        server.stop()

    assert 'jobhooks_shovel_forwarded_total{vhost="/"} 3' in text
    assert 'jobhooks_shovel_parked_total{reason="too_large",vhost="tenant-a"} 1' in text
    assert "jobhooks_shovel_send_failures_total 0" in text
    assert "jobhooks_shovel_reconnects_total 0" in text
    assert "# TYPE jobhooks_shovel_in_flight gauge\njobhooks_shovel_in_flight 2" in text
