"""`jobhooks dev`: the whole bridge from one command, a demo a newcomer can watch, a clean stop.

The command runs as a user runs it: a child process with its own output, stopped by SIGINT (the
terminal's Ctrl-C) or SIGTERM. It shovels from a vhost of its own on the e2e broker, so it never
competes with the shared bridge for messages.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from jobhooks_tools.local.analytics.files import row_files
from jobhooks_tools.local.rabbitmq import RabbitMQBroker

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]


class DevCommand:
    def __init__(self, *arguments: str) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jobhooks_tools.cli.main", "dev", *arguments],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            # A session of its own, as in a terminal: signals reach only what we send them to.
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self._reader = threading.Thread(target=self._read_lines, daemon=True)
        self._reader.start()

    def wait_for(self, pattern: str, timeout: float = 90.0) -> re.Match[str]:
        compiled = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines:
                    if match := compiled.search(line):
                        return match
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._reader.is_alive():
                    output = "\n".join(self.lines)
                    raise AssertionError(f"no line matching {pattern!r}:\n{output}")
                self._changed.wait(remaining)

    def stop(self, number: signal.Signals, timeout: float = 60.0) -> int:
        self.process.send_signal(number)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError("jobhooks dev did not stop:\n" + "\n".join(self.lines)) from None
        self._reader.join(10)
        return self.process.returncode

    def _read_lines(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()


def port_is_closed(url: str) -> bool:
    host, port = url.removeprefix("http://").split(":")
    with socket.socket() as sock:
        return sock.connect_ex((host, int(port))) != 0


@pytest.fixture
def dev_amqp_url(rabbitmq: RabbitMQBroker) -> str:
    return rabbitmq.add_vhost(f"dev-{uuid.uuid4().hex[:8]}")


def open_portal_link(api: str, token: str) -> dict[str, object]:
    """What the portal page does with its link: exchange it for a session."""
    request = urllib.request.Request(
        f"{api}/portal/session",
        headers={"X-Jobhooks-Portal-Link": token, "X-Jobhooks-Portal": "1"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=15) as answer:
        assert "__Host-jobhooks-portal=" in answer.headers["Set-Cookie"]
        document: dict[str, object] = json.loads(answer.read())
    return document


def test_demo_shows_delivery_dedup_and_quarantine_then_ctrl_c_stops_everything(
    dev_amqp_url: str, tmp_path: Path
) -> None:
    dev = DevCommand("--demo", "--amqp-url", dev_amqp_url, "--data-dir", str(tmp_path))
    try:
        rows = dev.wait_for(r"analytics rows\s+(\S+) \(JSON lines").group(1)
        aws = dev.wait_for(r"local AWS\s+(http://\S+)").group(1)
        api = dev.wait_for(r"export JOBHOOKS_API_URL=(\S+) JOBHOOKS_API_AUTH=none").group(1)
        dev.wait_for(r"Fetcher key\s+[0-9a-f]{64}")
        portal = dev.wait_for(r"tenant portal\s+(http://\S+/portal#t=(\S+)) \(tenant acme;")
        assert portal.group(1).startswith(api + "/portal#t=v1.")
        opened = open_portal_link(api, portal.group(2))
        assert opened["tenant_id"] == "acme", opened
        dev.wait_for(r"receiver\s+verified\s+job\.completed .* signature ok")
        dev.wait_for(r"receiver\s+verified\s+job\.failed .* signature ok")
        dev.wait_for(r"ingest\s+duplicate")
        dev.wait_for(r"ingest\s+rejected\s+signature_mismatch")
    finally:
        code = dev.stop(signal.SIGINT)

    assert code == 0, "\n".join(dev.lines)
    assert dev.lines[-1] == "stopped"
    # The demo's two accepted events are rows, in the directory printed, kept after the stop.
    assert rows == str(tmp_path / "analytics")
    assert dev.lines[-2] == f"the analytics rows stay in {rows}"
    written = [line for path in row_files(rows) for line in path.read_text().splitlines()]
    assert sorted(json.loads(line)["status"] for line in written) == ["failure", "success"]
    assert port_is_closed(aws), "moto's server outlived jobhooks dev"
    assert port_is_closed(api), "the management API outlived jobhooks dev"
    assert not any("Traceback" in line for line in dev.lines), "\n".join(dev.lines)
    # `jobhooks dev` enforces AWS's request limits: the demo must not break one.
    refused = [line for line in dev.lines if re.search(r"\baws\s+refused\b", line)]
    assert refused == []


def test_sigterm_stops_everything_cleanly(dev_amqp_url: str) -> None:
    dev = DevCommand("--amqp-url", dev_amqp_url, "--alert-interval", "7")
    try:
        aws = dev.wait_for(r"local AWS\s+(http://\S+)").group(1)
        # The job-health rules' schedule, as --alert-interval set it.
        dev.wait_for(r"AlertsFunction\s+timeout \d+ s, \d+ MB, every 7 s \(job-health")
        dev.wait_for(r"waiting for events")
    finally:
        code = dev.stop(signal.SIGTERM)

    assert code == 0, "\n".join(dev.lines)
    assert dev.lines[-1] == "stopped"
    assert port_is_closed(aws)


def test_an_unreachable_broker_given_explicitly_is_a_one_line_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dev = DevCommand("--amqp-url", f"amqp://guest:guest@127.0.0.1:{port}/")
    code = dev.stop(signal.SIGCONT, timeout=60)  # SIGCONT: just wait for it to give up

    assert code == 1
    assert dev.lines[-1].startswith("jobhooks: dev: no RabbitMQ broker answers at")
