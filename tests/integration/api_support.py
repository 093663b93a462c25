"""What the management API and CLI tests share.

- `InProcessApi` calls the API function's handler in this process with API Gateway events, as
  `jobhooks_tools.local.api_server` does, and reads the answer back. By default the event is an
  IAM-authorized operator's (`OPERATOR_ARN`), as API Gateway hands it over; `caller_arn=`
  makes it another principal's, `caller_arn=None` carries no identity, and `gateway=` routes
  and authorizes it as template.yaml's HttpApi does (the portal authorizer function included).
- `use_context` builds a `ManagementContext` over the `stack` fixture's moto resources with an
  injected DNS resolver and clock, and hands it to the API through the Event Handler's
  `dependency_overrides` (no patching).
- `Receiver` is a webhook endpoint on 127.0.0.1 that answers from a script and records requests.
- `load_function` imports a function of `functions/` (deliver, ingest) from its file, fresh,
  so it reads the current test's environment.
"""

from __future__ import annotations

import contextlib
import http.server
import importlib.util
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlencode

from jobhooks.access.access_store import StoredGrant
from jobhooks.access.context import PortalContext
from jobhooks.access.settings import PortalSettings
from jobhooks.management.context import (
    ManagementContext,
    build_management_context,
    management_context,
)
from jobhooks.management.routes.dependencies import operator_patterns, portal_context
from jobhooks.management.settings import ManagementSettings
from jobhooks_tools.local.api_server import (
    WarmAuthorizer,
    api_gateway_event,
    load_api_module,
    load_portal_module,
    normalize_answer,
)
from jobhooks_tools.local.event_source import LambdaContext
from jobhooks_tools.local.gateway import LOCAL_OPERATOR_ARN, Denied, LocalGateway, iam_context

ROOT = Path(__file__).resolve().parents[2]
OPERATOR_ARN = LOCAL_OPERATOR_ARN
LOCAL_OPERATORS = (LOCAL_OPERATOR_ARN,)
# A public address (TEST-NET ranges would be refused): names resolve here, and nothing in the
# tests ever connects to it; test sends go to loopback receivers only.
PUBLIC_ADDRESS = "93.184.215.14"


class FakeResolver:
    """DNS for the tests: chosen names resolve to chosen addresses, every other to a public one."""

    def __init__(self, answers: Mapping[str, Sequence[str]] | None = None) -> None:
        self.answers = {"localhost": ["127.0.0.1", "::1"], **(answers or {})}
        self.asked: list[str] = []

    def __call__(self, host: str) -> Sequence[str]:
        self.asked.append(host)
        return self.answers.get(host, [PUBLIC_ADDRESS])


class FakeClock:
    def __init__(self, start: datetime | None = None) -> None:
        # Near the real time: standardwebhooks refuses timestamps more than 5 minutes off.
        self.now = start or datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def lambda_context(name: str = "jobhooks-test-api", timeout: float = 15.0) -> LambdaContext:
    return LambdaContext(
        function_name=name,
        memory_limit_in_mb=256,
        invoked_function_arn=f"arn:aws:lambda:us-east-1:123456789012:function:{name}",
        aws_request_id=str(uuid.uuid4()),
        deadline=time.monotonic() + timeout,
    )


# -- the API in process ------------------------------------------------------------------------


@dataclass(frozen=True)
class ApiAnswer:
    status: int
    body: Any
    text: str
    headers: Mapping[str, str]

    @property
    def error(self) -> dict[str, Any]:
        assert isinstance(self.body, dict) and "error" in self.body, self.text
        error = self.body["error"]
        assert isinstance(error, dict)
        return error


class InProcessApi:
    """Calls `functions/api/app.py`'s handler with API Gateway HTTP API (2.0) events, or
    `functions/portal/app.py`'s for the portal's paths (as the template routes them)."""

    def __init__(
        self,
        module: ModuleType | None = None,
        *,
        caller_arn: str | None = OPERATOR_ARN,
        gateway: LocalGateway | None = None,
    ) -> None:
        self.module = module or load_api_module()
        self.portal = load_portal_module()
        self.caller_arn = caller_arn
        self.gateway = gateway

    def call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        raw_body: bytes | None = None,
        content_type: str | None = "application/json",
        headers: Sequence[tuple[str, str]] = (),
        authorizer: Mapping[str, Any] | None = None,
    ) -> ApiAnswer:
        """One request; `content_type=None` sends no Content-Type header; `authorizer` replaces
        the IAM identity with that `requestContext.authorizer` (without a gateway)."""
        target = path + ("?" + urlencode(query) if query else "")
        data = raw_body if raw_body is not None else b""
        if body is not None:
            data = json.dumps(body).encode("utf-8")
        sent = [("user-agent", "tests"), *headers]
        if content_type is not None:
            sent.append(("content-type", content_type))
        event = api_gateway_event(method, target, sent, data)
        if self.gateway is not None:
            self.gateway.caller_arn = self.caller_arn or OPERATOR_ARN
            routed = self.gateway.authorize(event)
            if isinstance(routed, Denied):
                return ApiAnswer(routed.status, dict(routed.body), json.dumps(routed.body), {})
            event = routed
        elif authorizer is not None:
            event["requestContext"]["authorizer"] = dict(authorizer)
        elif self.caller_arn is not None:
            event["requestContext"]["authorizer"] = {"iam": iam_context(self.caller_arn)}
        function = self.portal if _is_portal_path(path) else self.module
        answer = normalize_answer(function.handler(event, lambda_context()))
        text = answer.get("body") or ""
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = None
        answered = {name.lower(): value for name, value in (answer.get("headers") or {}).items()}
        for cookie in answer.get("cookies") or []:
            answered["set-cookie"] = str(cookie)
        return ApiAnswer(int(answer["statusCode"]), parsed, text, answered)

    def function_loggers(self) -> list[Any]:
        """The Powertools loggers of every function a request may reach: the API, the portal
        and the gateway's authorizers. Each function module names its own service (the
        environment at its import), so the API's logger alone misses the others' lines."""
        loggers = [self.module.logger, self.portal.logger]
        if self.gateway is not None:
            for authorizer in self.gateway.authorizers.values():
                if isinstance(authorizer, WarmAuthorizer):
                    loggers.append(authorizer.module.logger)
        return loggers

    def get(self, path: str, **query: Any) -> ApiAnswer:
        return self.call("GET", path, query={k: v for k, v in query.items() if v is not None})

    def post(self, path: str, body: Any = None, **query: Any) -> ApiAnswer:
        return self.call("POST", path, body=body, query=query or None)

    def patch(self, path: str, body: Any, **query: Any) -> ApiAnswer:
        return self.call("PATCH", path, body=body, query=query or None)

    def delete(self, path: str, **query: Any) -> ApiAnswer:
        return self.call("DELETE", path, query=query or None)


def _is_portal_path(path: str) -> bool:
    return path == "/portal" or path.startswith("/portal/")


def management_settings(**changes: Any) -> ManagementSettings:
    """The API's settings from the `stack` fixture's environment, with `changes`."""
    return ManagementSettings.from_env().model_copy(update=changes)


class GrantsInMemory:
    """The access table's grants, for a test whose AWS resources do not exist: `list_grants`
    is the only read the API makes of it before routing an IAM request."""

    def __init__(self, grants: Sequence[StoredGrant] = ()) -> None:
        self.grants = list(grants)

    def list_grants(self) -> list[StoredGrant]:
        return list(self.grants)


@contextlib.contextmanager
def grants_from_memory(
    module: ModuleType, grants: Sequence[StoredGrant] = ()
) -> Iterator[GrantsInMemory]:
    """The API reads its grants from memory while the block runs: for tests without the stack's
    access table (the API reads the grants before every IAM request)."""
    held = GrantsInMemory(grants)
    offline = PortalContext(PortalSettings(), held, None)  # type: ignore[arg-type]
    overrides = module.app.dependency_overrides
    overrides[portal_context] = lambda: offline
    # Without the stack's environment, the local caller is the operator as `jobhooks dev`'s is.
    overrides[operator_patterns] = lambda: LOCAL_OPERATORS
    try:
        yield held
    finally:
        overrides.pop(portal_context, None)
        overrides.pop(operator_patterns, None)


@contextlib.contextmanager
def use_context(
    module: ModuleType,
    *,
    resolver: FakeResolver | None = None,
    clock: FakeClock | None = None,
    webhook_client: Any = None,
    sqs: Any = None,
    grants: Sequence[StoredGrant] | None = None,
    **settings: Any,
) -> Iterator[ManagementContext]:
    """Serve the API (in this process) from a context built for the test. `grants`: the
    grants come from memory instead of the stack's access table (for a test without AWS)."""
    context = build_management_context(
        management_settings(**settings),
        resolver=resolver or FakeResolver(),
        clock=clock or FakeClock(),
        webhook_client=webhook_client,
        sqs=sqs,
    )
    overrides = module.app.dependency_overrides
    # The portal function works on the same context: one stack, two functions.
    portal_overrides = load_portal_module().app.dependency_overrides
    overrides[management_context] = portal_overrides[management_context] = lambda: context
    if grants is not None:
        offline = PortalContext(PortalSettings(), GrantsInMemory(grants), None)  # type: ignore[arg-type]
        overrides[portal_context] = lambda: offline
        overrides[operator_patterns] = lambda: LOCAL_OPERATORS
    try:
        yield context
    finally:
        overrides.pop(management_context, None)
        portal_overrides.pop(management_context, None)
        overrides.pop(portal_context, None)
        overrides.pop(operator_patterns, None)


# -- a webhook receiver ------------------------------------------------------------------------


@dataclass
class ReceivedWebhook:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A webhook endpoint on 127.0.0.1: answers `statuses` in turn, then `default_status`."""

    statuses: list[int] = field(default_factory=list)
    default_status: int = 200
    requests: list[ReceivedWebhook] = field(default_factory=list)

    def __post_init__(self) -> None:
        receiver = self
        lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                webhook = ReceivedWebhook(
                    self.path,
                    {name.lower(): value for name, value in self.headers.items()},
                    self.rfile.read(length),
                )
                with lock:
                    receiver.requests.append(webhook)
                    status = (
                        receiver.statuses.pop(0) if receiver.statuses else receiver.default_status
                    )
                body = b"received" if status < 300 else b"try again later"
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks/jobhooks"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# -- the other functions -----------------------------------------------------------------------


def load_function(name: str) -> ModuleType:
    """`functions/<name>/app.py`, imported afresh (it reads the environment at import)."""
    path = ROOT / "functions" / name / "app.py"
    spec = importlib.util.spec_from_file_location(f"jobhooks_test_{name}_{uuid.uuid4().hex}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Bridge:
    """The ingest and deliver functions over the `stack` fixture, driven like Lambda would."""

    ingest_queue_url: str
    delivery_queue_url: str
    ingest_handler: Any
    deliver_handler: Any
    sqs: Any

    @classmethod
    def start(cls, resources: Any, *, first_attempts: bool = True) -> Bridge:
        """Load both functions from `functions/` with the current environment.

        Ingest makes the first attempt of every delivery, as deployed: the operator view reads
        the first-attempt successes from their pages and everything else from the attempt log
        (`jobhooks.delivery.history`). Without `first_attempts` (`JOBHOOKS_FIRST_ATTEMPT_SECONDS`
        0) every delivery goes through the deliver function and its attempt log.
        """
        import boto3

        variable = "JOBHOOKS_FIRST_ATTEMPT_SECONDS"
        before = os.environ.get(variable)
        if not first_attempts:
            os.environ[variable] = "0"  # read once, when the function is loaded
        try:
            ingest_handler = load_function("ingest").handler
        finally:
            if before is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = before
        return cls(
            ingest_queue_url=resources.queue_url("IngestQueue"),
            delivery_queue_url=resources.queue_url("DeliveryQueue"),
            ingest_handler=ingest_handler,
            deliver_handler=load_function("deliver").handler,
            sqs=boto3.client("sqs"),
        )

    def publish(self, forwarded_json: str) -> None:
        """What the shovel does: one forwarded message onto the ingest queue."""
        self.sqs.send_message(QueueUrl=self.ingest_queue_url, MessageBody=forwarded_json)

    def ingest(self) -> Any:
        return self._drain(self.ingest_queue_url, self.ingest_handler, "ingest")

    def deliver(self) -> Any:
        return self._drain(self.delivery_queue_url, self.deliver_handler, "deliver")

    def _drain(self, queue_url: str, handler: Any, name: str) -> Any:
        from jobhooks_tools.local.event_source import SqsEventSource

        source = SqsEventSource(
            queue_url, handler, sqs_client=self.sqs, function_name=f"jobhooks-test-{name}"
        )
        return source.run_until_idle(max_seconds=30)


# -- the CLI -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CliRun:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(capsys: Any, *argv: str) -> CliRun:
    """`jobhooks ARGV...` in this process; argparse's usage errors exit 2 as they would."""
    from jobhooks_tools.cli.main import main

    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    out, err = capsys.readouterr()
    return CliRun(code, out, err)


@contextlib.contextmanager
def local_api(monkeypatch: Any, **context: Any) -> Iterator[Any]:
    """The API served by `jobhooks_tools.local.api_server` from a test context; the CLI pointed at
    it the way `jobhooks dev` tells users to (JOBHOOKS_API_URL, JOBHOOKS_API_AUTH=none)."""
    from jobhooks_tools.local.api_server import serve_api

    module = load_api_module()
    # EMF blobs go to stdout at each invocation; the CLI's own output is what tests read.
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    with use_context(module, **context):
        server = serve_api()
        monkeypatch.setenv("JOBHOOKS_API_URL", server.url)
        monkeypatch.setenv("JOBHOOKS_API_AUTH", "none")
        try:
            yield server
        finally:
            server.shutdown()


@dataclass(frozen=True)
class LoggedLine:
    level: str
    text: str  # the line as the function writes it (Powertools' JSON formatter)


@contextlib.contextmanager
def api_log(*loggers: Any) -> Iterator[list[LoggedLine]]:
    """Every line these functions' loggers (Powertools `Logger`s) write while the block runs,
    as each writes it. Loggers of one service name share one logging.Logger: it is collected
    once."""
    lines: list[LoggedLine] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(LoggedLine(record.levelname, self.format(record)))

    attached: dict[int, tuple[logging.Logger, Collect]] = {}
    for logger in loggers:
        underlying = getattr(logger, "_logger", logger)
        if id(underlying) not in attached:
            collector = Collect()
            collector.setFormatter(logger.registered_formatter)
            underlying.addHandler(collector)
            attached[id(underlying)] = (underlying, collector)
    try:
        yield lines
    finally:
        for underlying, collector in attached.values():
            underlying.removeHandler(collector)
