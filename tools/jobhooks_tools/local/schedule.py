"""A function with a Schedule event, invoked locally as EventBridge would: every N seconds.

The template's alerts function runs `rate(5 minutes)` on AWS; `jobhooks dev` runs it every
`--alert-interval` seconds (default 60). One invocation at a time, as a schedule with a
function that finishes within its period; an invocation that raises is logged and the next one
comes on time. `run_now()` invokes it at once (tests, and a console that wants an answer now).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from jobhooks_tools.local.event_source import LOCAL_ACCOUNT_ID, LambdaContext
from jobhooks_tools.local.moto_server import LOCAL_REGION

_log = logging.getLogger("jobhooks.local.schedule")


class ScheduledFunction:
    def __init__(
        self,
        handler: Callable[[dict[str, Any], LambdaContext], object],
        *,
        interval_seconds: float,
        function_name: str,
        function_timeout_seconds: float,
        memory_limit_in_mb: int,
    ) -> None:
        self.interval_seconds = interval_seconds
        self.function_name = function_name
        self.invocations = 0
        self.failures = 0
        self._handler = handler
        self._timeout = function_timeout_seconds
        self._memory = memory_limit_in_mb
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"schedule-{function_name}", daemon=True
        )

    def start(self) -> ScheduledFunction:
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def run_now(self) -> object:
        """One invocation now (after the one in progress, if any); its result."""
        with self._lock:
            request_id = str(uuid.uuid4())
            event = {
                "version": "0",
                "id": request_id,
                "detail-type": "Scheduled Event",
                "source": "aws.events",
                "account": LOCAL_ACCOUNT_ID,
                "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "region": LOCAL_REGION,
                "resources": [],
                "detail": {},
            }
            context = LambdaContext(
                function_name=self.function_name,
                memory_limit_in_mb=self._memory,
                invoked_function_arn=(
                    f"arn:aws:lambda:{LOCAL_REGION}:{LOCAL_ACCOUNT_ID}:function:{self.function_name}"
                ),
                aws_request_id=request_id,
                deadline=time.monotonic() + self._timeout,
            )
            self.invocations += 1
            return self._handler(event, context)

    def _run(self) -> None:
        while not self._stopping.wait(self.interval_seconds):
            try:
                self.run_now()
            except Exception:
                self.failures += 1
                _log.exception("scheduled invocation of %s failed", self.function_name)
