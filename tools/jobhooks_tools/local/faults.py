"""AWS throttling and 5xx answers, injected into live traffic at the botocore layer.

`FaultInjector.install()` adds a `before-send` handler to every botocore session made from then
on and to boto3's default session (as the AWS limits guard does), so it sees each HTTP attempt
of every client of the local stack. A rule (`inject`) names the function (a template logical id:
the handler invocation the call is made in, from `invoking_as`), the service, the AWS error code
and HTTP status, and how many attempts to answer: the next matching attempts get that answer
instead of reaching moto, as AWS would send it. botocore then retries them as it retries real
throttling and 5xx answers (`jobhooks.storage.clients`), and what it gives up on reaches the
code as the `ClientError` AWS would cause.

The function is a context variable set around each in-process handler invocation
(`DevStack`'s pollers); while the injector is installed, `ThreadPoolExecutor.submit` runs each
task in a copy of the submitting context, so the calls of a function's worker threads (ingest's
first attempts, deliver's concurrent deliveries) count as that function's.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final

import botocore.handlers
from botocore.awsrequest import AWSResponse

_function: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "jobhooks_local_function", default=None
)
_EVENT: Final = "before-send"
_UNIQUE_ID: Final = "jobhooks-local-faults"


@contextlib.contextmanager
def invoking_as(function: str) -> Iterator[None]:
    """AWS calls made in this block (and in threads it submits work to) are `function`'s."""
    token = _function.set(function)
    try:
        yield
    finally:
        _function.reset(token)


@dataclass
class FaultRule:
    function: str
    service: str  # botocore's service id in the event name: dynamodb, sqs, kms, ...
    code: str
    status: int
    times: int = 1
    operation: str | None = None
    hits: int = 0

    def matches(self, function: str | None, service: str, operation: str) -> bool:
        return (
            self.hits < self.times
            and function == self.function
            and service == self.service
            and self.operation in (None, operation)
        )


@dataclass
class FaultInjector:
    rules: list[FaultRule] = field(default_factory=list)
    # (function, service, code) -> answers injected
    injected: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    # (function, service) -> HTTP attempts seen, injected or not
    calls: Counter[tuple[str, str]] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _installed: bool = False
    _original_submit: Any = None

    def inject(
        self,
        function: str,
        service: str,
        code: str,
        status: int,
        *,
        times: int = 1,
        operation: str | None = None,
    ) -> FaultRule:
        rule = FaultRule(function, service, code, status, times, operation)
        with self._lock:
            self.rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    # -- the botocore hook ---------------------------------------------------------------------

    def before_send(self, request: Any, event_name: str = "", **_: Any) -> AWSResponse | None:
        parts = event_name.split(".")
        service, operation = [*parts, "", "", ""][1:3]
        function = _function.get()
        with self._lock:
            if function is not None:
                self.calls[(function, service)] += 1
            rule = next((r for r in self.rules if r.matches(function, service, operation)), None)
            if rule is None:
                return None
            rule.hits += 1
            self.injected[(rule.function, service, rule.code)] += 1
        # Every service the bridge calls speaks AWS's JSON protocols, SQS included.
        body = json.dumps({"__type": rule.code, "message": "injected by jobhooks faults"})
        headers = {"x-amzn-query-error": f"{rule.code};Sender", "Content-Type": "application/json"}
        return AWSResponse(request.url, rule.status, headers, _Body(body.encode()))

    # -- installing ----------------------------------------------------------------------------

    def install(self) -> None:
        with self._lock:
            if self._installed:
                return
            botocore.handlers.BUILTIN_HANDLERS.append((_EVENT, self.before_send))
            session = _boto3_default_session()
            if session is not None:
                session.events.register(_EVENT, self.before_send, unique_id=_UNIQUE_ID)
            self._original_submit = ThreadPoolExecutor.submit
            original = self._original_submit

            def submit(executor: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
                return original(executor, contextvars.copy_context().run, fn, *args, **kwargs)

            ThreadPoolExecutor.submit = submit  # type: ignore[method-assign]
            self._installed = True

    def uninstall(self) -> None:
        with self._lock:
            if not self._installed:
                return
            spec = (_EVENT, self.before_send)
            while spec in botocore.handlers.BUILTIN_HANDLERS:
                botocore.handlers.BUILTIN_HANDLERS.remove(spec)
            session = _boto3_default_session()
            if session is not None:
                session.events.unregister(_EVENT, unique_id=_UNIQUE_ID)
            ThreadPoolExecutor.submit = self._original_submit  # type: ignore[method-assign]
            self._installed = False


class _Body:
    """The raw stream botocore reads an answer's body from."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


def _boto3_default_session() -> Any:
    try:
        import boto3
    except ImportError:
        return None
    return boto3.DEFAULT_SESSION
