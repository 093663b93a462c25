"""One bridge for the whole end-to-end package: started once, shared, stopped at the end.

Starting the stack takes 10-20 s on two cores, so every e2e test uses the same bridge and keeps
to tenants of its own (`unique_tenant`). The broker is the session's private node
(tests/fixtures/rabbitmq.py); the bridge's moto server, shovel process and pollers are private
to this package: no other suite's fixture resets or reads them.

Two settings differ from a deployment, both to keep the suite fast and both visible here:
- the retry schedule is 0,1,1,2,2,3,3,3 s (8 attempts in about 15 s instead of about 27 h);
- visibility timeouts are 12-16 s and function timeouts 6-10 s (instead of 240/360 and 40/60),
  so a record that a failed invocation left in flight comes back within seconds.
The analytics rows go to the local files through a sink a test can make lose or alter rows
(`SinkFaults`, off unless a test turns it on).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jobhooks_tools.local.demo_receiver import DemoReceiver
from jobhooks_tools.local.dev_stack import DevStack, DevStackSettings
from jobhooks_tools.local.rabbitmq import RabbitMQBroker

from tests.e2e.harness import Bridge, SinkFaults

RETRY_SCHEDULE = "0,1,1,2,2,3,3,3"


def shorten_timeouts(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    resources["IngestQueue"]["Properties"]["VisibilityTimeout"] = 12
    resources["DeliveryQueue"]["Properties"]["VisibilityTimeout"] = 16
    resources["IngestFunction"]["Properties"]["Timeout"] = 6
    # Deliver starts an attempt only with the POST timeout (2 s here) + 5 s left.
    resources["DeliverFunction"]["Properties"]["Timeout"] = 10


@pytest.fixture(scope="package")
def bridge(rabbitmq: RabbitMQBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bridge]:
    log_path = tmp_path_factory.mktemp("e2e") / "bridge.log"
    sink_faults = SinkFaults()
    stack = DevStack(
        DevStackSettings(
            broker=rabbitmq,
            aws_outage_proxy=True,
            shovel="process",
            parameters={"RetrySchedule": RETRY_SCHEDULE},
            template_changes=shorten_timeouts,
            environment={"JOBHOOKS_DELIVERY_TIMEOUT_SECONDS": "2"},
            log_path=log_path,
            data_dir=tmp_path_factory.mktemp("e2e-data"),
            # The local files and DuckDB, with a hook that can lose or alter rows.
            analytics_backend=sink_faults.backend(),
        )
    )
    receiver = DemoReceiver().start()
    try:
        stack.start()
        yield Bridge(stack, receiver, sink_faults)
    finally:
        receiver.stop()
        stack.stop()
        _keep_log_of_failed_run(log_path)
    # The shovel runs as a child process: a request it made that real AWS would refuse is in
    # the log only (the test process's own are failed by tests/fixtures/aws.py).
    refused = [line for line in _log_lines(log_path) if "AWS would refuse" in line]
    assert refused == [], "the bridge made requests real AWS would refuse:\n" + "\n".join(refused)


def _log_lines(log_path: Path) -> list[str]:
    return (
        log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        if log_path.exists()
        else []
    )


def _keep_log_of_failed_run(log_path: Path) -> None:
    # pytest removes old temporary directories; a copy beside the checkout outlives them.
    keep = Path(".pytest_cache") / "e2e-bridge.log"
    if log_path.exists() and keep.parent.is_dir():
        shutil.copyfile(log_path, keep)
