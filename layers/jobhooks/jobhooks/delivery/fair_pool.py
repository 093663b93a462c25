"""A worker pool shared fairly: tenants take turns, and none holds more than its share.

A plain thread pool runs its jobs first in, first out: a tenant whose eight endpoints each take
five seconds to answer fills every worker, and the next tenant's webhook waits behind them. This
pool keeps one queue per tenant and starts jobs in turn, one tenant after another, and never
runs more than a cap of one tenant's jobs (or of one endpoint's) at once: a job over its cap waits
in its queue, holding no worker, while other tenants' jobs start.

The first attempts (`first_attempt`) give each tenant of a batch an equal share of the workers;
the deliver function (`deliver`) caps each endpoint and each tenant with its settings. A job
that has not started when its caller stops waiting is withdrawn (`withdraw`).
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


# A plain class: `@dataclass` compiles its generated methods at import (about 1 ms of the cold
# start each on Python 3.12), and this private record uses none but `__init__`.
class _Job:
    """One submitted call, with the tenant and endpoint it counts against (compared by
    identity)."""

    __slots__ = ("endpoint", "future", "per_endpoint", "per_tenant", "run", "tenant")

    def __init__(
        self,
        tenant: str,
        endpoint: str,
        per_tenant: int,
        per_endpoint: int,
        run: Callable[[], Any],
        future: Future[Any],
    ) -> None:
        self.tenant = tenant
        self.endpoint = endpoint
        self.per_tenant = per_tenant
        self.per_endpoint = per_endpoint
        self.run = run
        self.future = future


class FairPool:
    """Runs jobs on `workers` threads, interleaved across tenants, within per-tenant and
    per-endpoint caps. Thread safe: several callers may share it."""

    def __init__(self, workers: int, *, thread_name_prefix: str = "fair") -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=thread_name_prefix)
        self._lock = threading.RLock()
        self._queues: dict[str, deque[_Job]] = {}
        self._turns: deque[str] = deque()
        self._by_tenant: Counter[str] = Counter()
        self._by_endpoint: Counter[str] = Counter()
        self._running = 0

    def submit(
        self,
        tenant: str,
        endpoint: str,
        run: Callable[[], Any],
        *,
        per_tenant: int | None = None,
        per_endpoint: int | None = None,
    ) -> Future[Any]:
        """Queue `run` for `tenant`'s `endpoint`; its future completes when it has run.

        `per_tenant` / `per_endpoint`: at most this many of the tenant's (the endpoint's) jobs
        run at once; None: the pool's size.
        """
        job = _Job(
            tenant,
            endpoint,
            max(1, per_tenant or self.workers),
            max(1, per_endpoint or self.workers),
            run,
            Future(),
        )
        with self._lock:
            if tenant not in self._queues:
                self._queues[tenant] = deque()
                self._turns.append(tenant)
            self._queues[tenant].append(job)
            self._start_what_fits()
        return job.future

    def withdraw(self, future: Future[Any]) -> bool:
        """Take a job that has not started off its queue (its future is cancelled); False when
        it already started."""
        with self._lock:
            for queue in self._queues.values():
                for job in queue:
                    if job.future is future:
                        queue.remove(job)
                        future.cancel()
                        return True
        return False

    def shutdown(self, *, wait: bool = False) -> None:
        """Cancel the jobs not started; with `wait`, let the running ones finish first."""
        with self._lock:
            for queue in self._queues.values():
                for job in queue:
                    job.future.cancel()
            self._queues.clear()
            self._turns.clear()
        self._pool.shutdown(wait=wait, cancel_futures=True)

    # -- internals ---------------------------------------------------------------------------

    def _start_what_fits(self) -> None:
        # Round robin: each pass starts at most one job per tenant, so tenants interleave.
        started = True
        while started and self._running < self.workers:
            started = False
            for _ in range(len(self._turns)):
                if self._running >= self.workers:
                    return
                tenant = self._turns[0]
                self._turns.rotate(-1)
                job = self._next_job(tenant)
                if job is None:
                    continue
                self._start(job)
                started = True
            self._forget_idle_tenants()

    def _next_job(self, tenant: str) -> _Job | None:
        queue = self._queues[tenant]
        for job in queue:
            if self._by_tenant[tenant] >= job.per_tenant:
                return None
            if self._by_endpoint[job.endpoint] < job.per_endpoint:
                queue.remove(job)
                return job
        return None

    def _start(self, job: _Job) -> None:
        if not job.future.set_running_or_notify_cancel():
            return
        self._running += 1
        self._by_tenant[job.tenant] += 1
        self._by_endpoint[job.endpoint] += 1
        self._pool.submit(self._run, job)

    def _run(self, job: _Job) -> None:
        try:
            result = job.run()
        except BaseException as error:  # handed to the caller through the future
            job.future.set_exception(error)
        else:
            job.future.set_result(result)
        finally:
            with self._lock:
                self._running -= 1
                self._by_tenant[job.tenant] -= 1
                self._by_endpoint[job.endpoint] -= 1
                if not self._by_endpoint[job.endpoint]:
                    del self._by_endpoint[job.endpoint]
                self._start_what_fits()

    def _forget_idle_tenants(self) -> None:
        for tenant in [t for t, queue in self._queues.items() if not queue]:
            if self._by_tenant[tenant] == 0:
                del self._queues[tenant]
                self._turns.remove(tenant)
                del self._by_tenant[tenant]
