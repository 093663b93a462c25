"""The shovel's counters and gauges, rendered in Prometheus' text exposition format."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable

_Labels = tuple[tuple[str, str], ...]

_COUNTERS = {
    "jobhooks_shovel_received_total": "AMQP deliveries received",
    "jobhooks_shovel_forwarded_total": "messages SQS accepted (and then acknowledged)",
    "jobhooks_shovel_parked_total": "messages moved to the parking queue, by reason",
    "jobhooks_shovel_send_failures_total": (
        "SQS send failures: kind=request (the call failed) or entry (SQS refused one entry)"
    ),
    "jobhooks_shovel_reconnects_total": "AMQP reconnect attempts after a failure",
    "jobhooks_shovel_batches_total": "SendMessageBatch calls that SQS answered",
}

_GAUGES = {
    "jobhooks_shovel_in_flight": "deliveries received and not yet acknowledged or released",
    "jobhooks_shovel_amqp_connected": "1 while the vhost's consumer is connected and consuming",
    "jobhooks_shovel_sqs_up": "0 after an SQS call failed, 1 again after one succeeded",
}


class ShovelMetrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, dict[_Labels, int]] = defaultdict(lambda: defaultdict(int))
        self._gauges: dict[str, Callable[[], dict[_Labels, float]]] = {}

    # --- counters -------------------------------------------------------------------------

    def received(self, vhost: str, count: int = 1) -> None:
        self._add("jobhooks_shovel_received_total", count, vhost=vhost)

    def forwarded(self, vhost: str, count: int = 1) -> None:
        self._add("jobhooks_shovel_forwarded_total", count, vhost=vhost)

    def parked(self, vhost: str, reason: str, count: int = 1) -> None:
        self._add("jobhooks_shovel_parked_total", count, vhost=vhost, reason=reason)

    def send_failed(self, kind: str, count: int = 1) -> None:
        self._add("jobhooks_shovel_send_failures_total", count, kind=kind)

    def reconnected(self, vhost: str) -> None:
        self._add("jobhooks_shovel_reconnects_total", 1, vhost=vhost)

    def batch_sent(self) -> None:
        self._add("jobhooks_shovel_batches_total", 1)

    def value(self, name: str, **labels: str) -> int:
        """The sum of a counter over the series matching `labels` (tests, health)."""
        wanted = set(labels.items())
        with self._lock:
            series = self._counters.get(name, {})
            return sum(count for key, count in series.items() if wanted <= set(key))

    # --- gauges ---------------------------------------------------------------------------

    def gauge(self, name: str, read: Callable[[], dict[_Labels, float]]) -> None:
        """Registers a gauge read at scrape time (so it never goes stale)."""
        self._gauges[name] = read

    # --- exposition -----------------------------------------------------------------------

    def render(self) -> str:
        lines: list[str] = []
        with self._lock:
            counters = {name: dict(series) for name, series in self._counters.items()}
        for name, help_text in _COUNTERS.items():
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} counter"]
            series = counters.get(name) or {(): 0}
            lines += [f"{name}{_labels(key)} {value}" for key, value in sorted(series.items())]
        for name, help_text in _GAUGES.items():
            read = self._gauges.get(name)
            if read is None:
                continue
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
            lines += [f"{name}{_labels(key)} {_number(v)}" for key, v in sorted(read().items())]
        return "\n".join(lines) + "\n"

    def _add(self, name: str, count: int, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            self._counters[name][key] += count


def _labels(key: _Labels) -> str:
    if not key:
        return ""
    return "{" + ",".join(f'{name}="{_escape(value)}"' for name, value in key) + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
