"""The fair pool (jobhooks.delivery.fair_pool): tenants take turns, and each stays within its
caps, whatever order their jobs came in."""

from __future__ import annotations

import threading
import time
from concurrent.futures import wait

import pytest
from jobhooks.delivery.fair_pool import FairPool


class Gate:
    """Jobs that note when they start and hold their worker until released."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.release = threading.Event()
        self._lock = threading.Lock()

    def job(self, name: str) -> object:
        def run() -> str:
            with self._lock:
                self.started.append(name)
            assert self.release.wait(5)
            return name

        return run


def wait_until(condition: object, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


@pytest.fixture
def pool() -> object:
    made = FairPool(4)
    yield made
    made.shutdown(wait=True)


def test_a_later_tenant_starts_before_the_first_tenants_backlog(pool: FairPool) -> None:
    gate = Gate()
    noisy = [pool.submit("noisy", f"n{i}", gate.job(f"noisy{i}"), per_tenant=2) for i in range(6)]
    quiet = pool.submit("quiet", "q", gate.job("quiet"), per_tenant=2)

    wait_until(lambda: len(gate.started) == 3)
    assert sorted(gate.started) == ["noisy0", "noisy1", "quiet"]  # noisy holds its 2 of 4
    gate.release.set()
    wait([*noisy, quiet], timeout=5)
    assert all(f.result() for f in [*noisy, quiet])


def test_one_endpoint_holds_at_most_its_cap_and_the_others_run_beside_it(pool: FairPool) -> None:
    gate = Gate()
    slow = [pool.submit("acme", "slow", gate.job(f"slow{i}"), per_endpoint=1) for i in range(3)]
    other = pool.submit("acme", "other", gate.job("other"), per_endpoint=1)

    wait_until(lambda: len(gate.started) == 2)
    time.sleep(0.05)  # nothing else may start while both hold their worker
    assert sorted(gate.started) == ["other", "slow0"]
    gate.release.set()
    wait([*slow, other], timeout=5)
    assert gate.started[2:] == ["slow1", "slow2"]


def test_a_job_not_started_can_be_withdrawn(pool: FairPool) -> None:
    gate = Gate()
    first = pool.submit("acme", "a", gate.job("first"), per_endpoint=1)
    queued = pool.submit("acme", "a", gate.job("queued"), per_endpoint=1)

    wait_until(lambda: gate.started == ["first"])
    assert pool.withdraw(queued) and queued.cancelled()
    assert not pool.withdraw(first)
    gate.release.set()
    assert first.result(timeout=5) == "first"
    assert gate.started == ["first"]
