"""The whole bridge on one machine: what `jobhooks dev`, the end-to-end tests and the benches run.

In the order an event flows through it:

1. **RabbitMQ**: the broker at the given URL, or a private node of the installed
   `rabbitmq-server` in a temporary directory when none answers (`jobhooks_tools.local.rabbitmq`).
2. **the shovel**: the real forwarder, in this process (a thread) or as a child process that
   can be SIGKILLed, against the local SQS ingest queue.
3. **the local AWS**: moto's server as a child process, optionally behind a TCP proxy that can
   refuse connections (an AWS outage on demand), with every queue, table, key and secret of
   template.yaml provisioned from the template itself (`jobhooks_tools.local.template`). With
   `dynamodb_apart` (`jobhooks dev`, bench/isolation.py), DynamoDB is a moto process of its own
   (`AWS_ENDPOINT_URL_DYNAMODB`), as AWS's services do not share one: one process answers one
   request at a time per interpreter lock, so every SQS call of every function waited behind
   the DynamoDB writes of a tenant whose failing endpoints the deliver function was retrying.
4. **the functions**: the handlers of `functions/` loaded from their files, each driven by the
   SQS event-source poller with the batch size, timeout and memory the template gives it
   (ingest, deliver and spill), each invocation's AWS calls marked as its function's, where
   `faults` can answer them with throttling or 5xx (`jobhooks_tools.local.faults`).
5. **the management API** on a loopback port.
6. **the analytics table** in files under the data directory (`<data dir>/analytics`, what
   `JOBHOOKS_ANALYTICS_DIR` names for ingest and the API): the local file sink and DuckDB stand
   in for Firehose, S3 and Athena (`jobhooks_tools.local.analytics`).

Everything runs with the functions' environment from the template plus the local-only settings
of `LOCAL_ONLY_SETTINGS` (loopback webhooks allowed, short caches), which nothing else sets, and
under the AWS limits guard (`jobhooks_tools.local.aws_limits`): every SQS and DynamoDB request of
the stack, the shovel process's included, is held to the real services' limits, which moto does not
enforce; a violation is logged as an error and fails the call as AWS would. And under the IAM
guard (`jobhooks_tools.local.iam`): each function calls AWS as its role in template.yaml, the
shovel under the policy deploy/shovel/iam-policy.json documents; a call the policy does not allow
fails with AccessDenied and shows on the console as `aws  refused  IngestFunction may not ...`.
`stop()` ends every thread and child process it started, in reverse order, and puts the
process's environment back as it found it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import IO, Any, Final

from jobhooks.analytics.local_backend import LocalBackend, register_local_backend
from jobhooks.inbound.keys import HmacKey

from jobhooks_tools.local import aws_limits, iam
from jobhooks_tools.local.activity import Activity, ActivityFeed
from jobhooks_tools.local.analytics import install_local_backend
from jobhooks_tools.local.event_source import LambdaContext, SqsEventSource
from jobhooks_tools.local.faults import FaultInjector, invoking_as
from jobhooks_tools.local.gateway import LOCAL_PARAMETERS
from jobhooks_tools.local.moto_server import (
    LOCAL_REGION,
    MotoServer,
    local_aws_environment,
)
from jobhooks_tools.local.ports import free_port
from jobhooks_tools.local.rabbitmq import (
    DEFAULT_AMQP_URL,
    RabbitMQBroker,
    RabbitMQError,
    RabbitMQNotInstalledError,
    is_reachable,
    rabbitmq_script,
    start_private_rabbitmq,
)
from jobhooks_tools.local.schedule import ScheduledFunction
from jobhooks_tools.local.tcp_proxy import TcpProxy
from jobhooks_tools.local.template import (
    LocalFunction,
    LocalResources,
    find_template,
    load_template,
    provision,
)
from jobhooks_tools.sample_events import demo_key

# Named in the `jobhooks` logger tree, where the local stack routes the package's records.
logger = logging.getLogger("jobhooks.local.dev_stack")

# Settings `jobhooks dev` alone turns on (docs/local-stack.md says why each one).
LOCAL_ONLY_SETTINGS: Final = {
    # The demo receiver and your own test endpoints listen on loopback over plain http.
    "JOBHOOKS_ALLOW_PRIVATE_WEBHOOKS": "true",
    # A webhook added with the CLI is matched and delivered within 2 s, not after 30.
    "JOBHOOKS_SUBSCRIPTION_CACHE_SECONDS": "2",
    # A local receiver that hangs should show up as a timeout quickly.
    "JOBHOOKS_DELIVERY_TIMEOUT_SECONDS": "5",
}
# Local pollers share this machine's cores: cap each function's concurrency (the template's
# MaximumConcurrency is for Lambda).
DEFAULT_MAX_CONCURRENCY: Final = 2
SHOVEL_MODES: Final = ("thread", "process", "off")
ANALYTICS_DIR_VARIABLE: Final = "JOBHOOKS_ANALYTICS_DIR"


class DevStackError(Exception):
    """The local stack cannot start; the message says what is missing and what to do."""


@dataclass(frozen=True)
class Invocation:
    """One handler invocation by a poller: what the cost model and benches measure."""

    function: str  # the template's logical id
    records: int
    seconds: float
    memory_mb: int


@dataclass
class DevStackSettings:
    # RabbitMQ: a broker object already running (tests), else this URL, else the local default
    # broker, else (`private_broker_fallback`) a private node.
    broker: RabbitMQBroker | None = None
    amqp_url: str | None = None
    private_broker_fallback: bool = True
    # The Fetcher key the ingest function trusts (the Fetcher keys secret's value).
    key: HmacKey = field(default_factory=demo_key)
    # template.yaml parameter overrides, e.g. {"RetrySchedule": "0,1,1,2,2,3,3,3"}.
    parameters: dict[str, str] = field(default_factory=dict)
    template: Path | None = None
    # Edits the loaded template before provisioning: fault tests shorten visibility timeouts
    # (6x a function timeout on AWS) so that a record a failed invocation left in flight comes
    # back in seconds, not minutes.
    template_changes: Callable[[dict[str, Any]], None] | None = None
    # An AWS emulator already running (tests share one per session); None starts moto's server.
    aws_endpoint_url: str | None = None
    # Put a TcpProxy between everything and the emulator, so tests can make AWS unreachable.
    aws_outage_proxy: bool = False
    # Serve DynamoDB from a moto process of its own (module docstring, 3.). Only when this stack
    # starts the emulator and has no outage proxy (one proxy stands for one process).
    dynamodb_apart: bool = False
    shovel: str = "thread"
    api_port: int | None = 0  # None: no management API; 0: a free port
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    # Batching windows (seconds) by function logical id, instead of the template's. Lambda takes
    # whole seconds only; fractions are for benches that compress time (bench/cost.py
    # --time-scale divides the windows by the factor it speeds publishing up by).
    batching_windows: Mapping[str, float] = field(default_factory=dict)
    # How often (seconds) a function with a Schedule event runs, by logical id, instead of the
    # template's rate: `jobhooks dev --alert-interval` sets AlertsFunction's (default 60 s).
    schedule_intervals: Mapping[str, float] = field(default_factory=dict)
    # Powertools EMF metrics on stdout (benches count their bytes).
    emit_metrics: bool = False
    # Send this process's stdout to the log file while the stack runs, as Lambda sends a
    # function's stdout to CloudWatch Logs (EMF metrics, stray prints). For `jobhooks dev`,
    # whose console is then written through `console_stream()`.
    capture_stdout: bool = False
    log_level: str = "INFO"
    # Where the functions', the shovel's and the libraries' logs go; None: a temporary file.
    log_path: Path | None = None
    environment: dict[str, str] = field(default_factory=dict)
    # Where the stack keeps what outlives a request: the analytics rows (`analytics/`). None: a
    # temporary directory, removed on stop.
    data_dir: Path | None = None
    # The analytics sink and engine of `JOBHOOKS_ANALYTICS_DIR`; None: the local files and
    # DuckDB. Tests pass one that misbehaves.
    analytics_backend: LocalBackend | None = None
    on_activity: Callable[[Activity], None] | None = None
    on_invocation: Callable[[Invocation], None] | None = None
    # Called with the in-process shovel's SQS client (benches count its requests).
    on_shovel_client: Callable[[Any], None] | None = None
    on_progress: Callable[[str], None] | None = None


class DevStack:
    def __init__(self, settings: DevStackSettings | None = None) -> None:
        self.settings = settings or DevStackSettings()
        if self.settings.shovel not in SHOVEL_MODES:
            raise ValueError(f"shovel must be one of {SHOVEL_MODES}")
        self.broker: RabbitMQBroker | None = self.settings.broker
        self.moto: MotoServer | None = None
        # DynamoDB's own moto process (`dynamodb_apart`).
        self.dynamodb_moto: MotoServer | None = None
        self.aws_proxy: TcpProxy | None = None
        self.resources: LocalResources | None = None
        self.event_sources: dict[str, SqsEventSource] = {}
        # Throttling and 5xx answers on demand, per function and service (tests/e2e).
        self.faults = FaultInjector()
        self.scheduled: dict[str, ScheduledFunction] = {}
        self.api_url: str | None = None
        self.log_path: Path | None = None
        self._owns_broker = False
        self._broker_thread: threading.Thread | None = None
        self._broker_error: BaseException | None = None
        self._emulator_url: str | None = None
        self._saved_environment: dict[str, str | None] = {}
        self._log_file: IO[str] | None = None
        self._log_handlers: list[tuple[logging.Logger, logging.Handler]] = []
        self._redirected: list[tuple[logging.StreamHandler[Any], Any]] = []
        self._filtered: list[tuple[logging.Handler, logging.Filter]] = []
        self._levels: list[tuple[logging.Logger, int]] = []
        self._saved_stdout: Any = None
        self._feed: ActivityFeed | None = None
        self._shovel: Any = None
        self._shovel_process: subprocess.Popen[bytes] | None = None
        self._shovel_health_port: int | None = None
        self._api_server: Any = None
        # The handler modules this stack loaded (kept alive with the stack that configured them).
        self._modules: list[ModuleType] = []
        self._template_path = Path("template.yaml")
        self._probe: Any = None
        self._installed_aws_limits = False
        self._installed_iam = False
        self._shovel_iam_journal = Path(tempfile.gettempdir()) / f"jobhooks-iam-{uuid.uuid4().hex}"
        self.data_dir: Path | None = None
        self._owns_data_dir = False
        # The analytics back end this stack replaced, put back on stop.
        self._previous_backend: LocalBackend | None = None
        self._installed_backend = False

    # ------------------------------------------------------------------------------ lifecycle

    def start(self) -> DevStack:
        """Start everything; on any failure, stop what was started and raise."""
        try:
            # Before any client exists: clients copy their session's hooks when made.
            self._installed_aws_limits = aws_limits.install()
            self._installed_iam = iam.install()
            self.faults.install()
            self._open_log()
            self._open_data_dir()
            self._find_or_start_broker_in_background()
            self._start_aws()
            self._set_environment(self._aws_environment())
            self._provision()
            self._set_environment(self.environment())
            self._start_functions()
            self._start_api()
            self._wait_for_broker()
            self._start_shovel()
        except BaseException as error:
            if not isinstance(error, DevStackError | KeyboardInterrupt):
                self.record_failure(error)
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop every part, newest first; safe to call twice and after a failed start."""
        self.stop_shovel()
        for scheduled in self.scheduled.values():
            scheduled.stop(timeout=65)
        self.scheduled.clear()
        for source in self.event_sources.values():
            source.stop(timeout=15)
        self.event_sources.clear()
        if self._api_server is not None:
            with contextlib.suppress(Exception):
                self._api_server.shutdown()
            self._api_server = None
        if self._broker_thread is not None:
            self._broker_thread.join()
            self._broker_thread = None
        if self.broker is not None and self._owns_broker:
            self._progress("stopping the private RabbitMQ node")
            with contextlib.suppress(Exception):
                self.broker.stop()
            self.broker = None
            self._owns_broker = False
        if self.aws_proxy is not None:
            self.aws_proxy.stop()
            self.aws_proxy = None
        if self.moto is not None:
            self.moto.stop()
            self.moto = None
        if self.dynamodb_moto is not None:
            self.dynamodb_moto.stop()
            self.dynamodb_moto = None
        self._restore_environment()
        self._close_log()
        for module in self._modules:
            sys.modules.pop(module.__name__, None)
        self._modules.clear()
        self._probe = None
        self._close_data_dir()
        self._shovel_iam_journal.unlink(missing_ok=True)
        if self._installed_aws_limits:
            aws_limits.uninstall()
            self._installed_aws_limits = False
        if self._installed_iam:
            iam.uninstall()
            self._installed_iam = False
        self.faults.uninstall()

    def __enter__(self) -> DevStack:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ------------------------------------------------------------------------------ addresses

    @property
    def amqp_url(self) -> str:
        if self.broker is None:
            raise DevStackError("the broker is not running")
        return self.broker.url

    @property
    def aws_endpoint_url(self) -> str:
        """Where every part of the stack sends its AWS calls (the proxy when there is one)."""
        if self.aws_proxy is not None:
            return self.aws_proxy.url
        if self._emulator_url is None:
            raise DevStackError("the local AWS endpoint is not running")
        return self._emulator_url

    @property
    def service_endpoints(self) -> dict[str, str]:
        """The services another local endpoint serves, by botocore's name (`dynamodb_apart`)."""
        if self.dynamodb_moto is None:
            return {}
        return {"dynamodb": self.dynamodb_moto.endpoint_url}

    def _aws_environment(self) -> dict[str, str]:
        """What points boto3 at the local AWS: botocore takes `AWS_ENDPOINT_URL_<SERVICE>` over
        `AWS_ENDPOINT_URL` for that service."""
        return {
            **local_aws_environment(self.aws_endpoint_url),
            **{
                f"AWS_ENDPOINT_URL_{service.upper()}": url
                for service, url in self.service_endpoints.items()
            },
        }

    def queue_url(self, logical_id: str) -> str:
        return self._resources.queue_url(logical_id)

    @property
    def analytics_dir(self) -> Path:
        """Where ingest writes the analytics rows and the API's DuckDB reads them."""
        if self.data_dir is None:
            raise DevStackError("the stack is not started")
        return self.data_dir / "analytics"

    def environment(self) -> dict[str, str]:
        """The variables a CLI in another shell needs to talk to this stack directly."""
        return {**self._aws_environment(), **self._function_environment()}

    # ------------------------------------------------------------------------------ 1. broker

    def _find_or_start_broker_in_background(self) -> None:
        """A private node takes seconds to boot: let it boot while AWS is provisioned."""
        if self.broker is not None:
            return
        url = self.settings.amqp_url or DEFAULT_AMQP_URL
        if is_reachable(url, timeout=2):
            self.broker = RabbitMQBroker(url=url)
            return
        explicit = self.settings.amqp_url is not None
        if explicit or not self.settings.private_broker_fallback:
            raise DevStackError(
                f"no RabbitMQ broker answers at {_redacted(url)}: start it, or leave out "
                "--amqp-url to run a private node"
            )
        if rabbitmq_script("rabbitmq-server") is None:
            raise DevStackError(str(RabbitMQNotInstalledError()))
        self._progress(
            f"no broker at {_redacted(url)}: starting a private RabbitMQ node (takes ~10 s)"
        )

        def boot() -> None:
            try:
                self.broker = start_private_rabbitmq(timeout=120)
                self._owns_broker = True
            except BaseException as error:
                self._broker_error = error

        self._broker_thread = threading.Thread(target=boot, name="private-rabbitmq", daemon=True)
        self._broker_thread.start()

    def _wait_for_broker(self) -> None:
        if self._broker_thread is not None:
            self._broker_thread.join()
            self._broker_thread = None
        if self._broker_error is not None:
            error, self._broker_error = self._broker_error, None
            if isinstance(error, RabbitMQError):
                raise DevStackError(f"the private RabbitMQ node did not start: {error}") from None
            raise error
        if self.broker is None:
            raise DevStackError("no RabbitMQ broker")

    def restart_broker(self, timeout: float = 120.0) -> None:
        """Restart the private node (same ports and data: durable queues survive)."""
        if self.broker is None or self.broker.node is None:
            raise DevStackError("only a private RabbitMQ node can be restarted")
        self.broker.restart(timeout)

    # ------------------------------------------------------------------------------ 2. shovel

    def start_shovel(self) -> None:
        """Start the shovel (again); returns once it consumes from every vhost."""
        self._start_shovel()

    def _start_shovel(self) -> None:
        mode = self.settings.shovel
        if mode == "off" or (self._shovel is not None or self._shovel_process is not None):
            return
        if mode == "thread":
            from jobhooks_tools.shovel import Shovel
            from jobhooks_tools.shovel.settings import ShovelSettings
            from jobhooks_tools.shovel.sqs_sender import create_sqs_client

            shovel_settings = ShovelSettings.model_validate(
                {
                    "amqp_url": self.amqp_url,
                    "queue_url": self.queue_url("IngestQueue"),
                    "region": LOCAL_REGION,
                    "sqs_endpoint_url": self.aws_endpoint_url,
                    "health_port": None,
                    "log_level": self.settings.log_level,
                }
            )
            client = create_sqs_client(shovel_settings)
            if self.settings.on_shovel_client is not None:
                self.settings.on_shovel_client(client)
            self._shovel = Shovel(shovel_settings, sqs_client=client).start()
            if not self._shovel.wait_until_consuming(timeout=60):
                failure = self._shovel.failure or "it did not consume within 60 s"
                raise DevStackError(f"the shovel could not start: {failure}")
            return
        self._shovel_health_port = free_port()
        self._shovel_process = subprocess.Popen(  # noqa: S603 - our own CLI, same interpreter
            [
                sys.executable,
                "-m",
                # The `jobhooks` CLI under the AWS limits guard and the shovel's IAM policy
                # (jobhooks_tools/local/iam/__main__.py).
                "jobhooks_tools.local.iam",
                "shovel",
                "--amqp-url",
                self.amqp_url,
                "--queue-url",
                self.queue_url("IngestQueue"),
                "--region",
                LOCAL_REGION,
                "--sqs-endpoint-url",
                self.aws_endpoint_url,
                "--health-port",
                str(self._shovel_health_port),
                "--retry-max-delay",
                "2",
            ],
            env={
                **os.environ,
                **local_aws_environment(self.aws_endpoint_url),
                "JOBHOOKS_LOCAL_SHOVEL_QUEUE_ARN": self._resources.arns["IngestQueue"],
                "JOBHOOKS_LOCAL_IAM_JOURNAL": str(self._shovel_iam_journal),
            },
            stdin=subprocess.DEVNULL,
            stdout=self._log_file or subprocess.DEVNULL,
            stderr=self._log_file or subprocess.DEVNULL,
            # Its own session: a Ctrl-C in the terminal reaches `jobhooks dev`, which stops the
            # shovel in order, instead of killing it mid-batch.
            start_new_session=True,
        )
        self._wait_for_shovel_health(timeout=60)

    def _wait_for_shovel_health(self, timeout: float) -> None:
        assert self._shovel_process is not None
        url = f"http://127.0.0.1:{self._shovel_health_port}/healthz"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._shovel_process.poll() is not None:
                raise DevStackError(
                    f"the shovel exited with code {self._shovel_process.returncode}; see "
                    f"{self.log_path}"
                )
            with (
                contextlib.suppress(urllib.error.URLError, OSError),
                urllib.request.urlopen(url, timeout=2),
            ):
                return
            time.sleep(0.2)
        raise DevStackError(f"the shovel was not healthy within {timeout} s; see {self.log_path}")

    def kill_shovel(self) -> None:
        """SIGKILL the shovel process: no drain, no acks; the broker redelivers its messages."""
        if self._shovel_process is None:
            raise DevStackError("the shovel runs as a process only with shovel='process'")
        self._shovel_process.send_signal(signal.SIGKILL)
        self._shovel_process.wait(10)
        self._shovel_process = None

    def stop_shovel(self) -> None:
        """Stop the shovel cleanly (drain, then close)."""
        if self._shovel is not None:
            with contextlib.suppress(Exception):
                self._shovel.stop()
            self._shovel = None
        process, self._shovel_process = self._shovel_process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        if process is not None:
            # What the shovel process was refused (and exercised) under its IAM policy.
            iam.merge_journal(self._shovel_iam_journal)

    # ------------------------------------------------------------------------------ 3. AWS

    def _start_aws(self) -> None:
        if self.settings.aws_endpoint_url:
            self._emulator_url = self.settings.aws_endpoint_url
        else:
            self._progress("starting the local AWS emulator (moto)")
            # Started with SIGINT ignored (inherited across exec), so a Ctrl-C meant for
            # `jobhooks dev` does not kill the emulator before the shovel and pollers stop.
            with _terminal_interrupts_ignored():
                self.moto = MotoServer().start()
                if self.settings.dynamodb_apart and not self.settings.aws_outage_proxy:
                    self.dynamodb_moto = MotoServer().start()
            self._emulator_url = self.moto.endpoint_url
        if self.settings.aws_outage_proxy:
            host, port = _host_port(self._emulator_url)
            self.aws_proxy = TcpProxy(host, port).start()

    def _provision(self) -> None:
        self._progress("creating the queues, tables, key and secret of template.yaml")
        self._template_path = find_template(self.settings.template)
        template = load_template(self._template_path)
        if self.settings.template_changes is not None:
            self.settings.template_changes(template)
        self.resources = provision(
            template,
            checkout=self._template_path.parent,
            parameters={**LOCAL_PARAMETERS, **self.settings.parameters},
            fetcher_keys=[self.settings.key.hex],
            endpoint_url=self.aws_endpoint_url,
            service_endpoints=self.service_endpoints,
            region=LOCAL_REGION,
        )

    @property
    def _resources(self) -> LocalResources:
        if self.resources is None:
            raise DevStackError("the stack is not provisioned")
        return self.resources

    def _function_environment(self) -> dict[str, str]:
        resources = self._resources
        variables = resources.environment()
        for function in resources.functions.values():
            for name, value in function.variables.items():
                if name.startswith("POWERTOOLS_"):
                    variables.setdefault(name, value)
        variables["POWERTOOLS_LOG_LEVEL"] = self.settings.log_level
        if not self.settings.emit_metrics:
            variables["POWERTOOLS_METRICS_DISABLED"] = "true"
        variables.update(LOCAL_ONLY_SETTINGS)
        variables[ANALYTICS_DIR_VARIABLE] = str(self.analytics_dir)
        variables.update(self.settings.environment)
        return variables

    def _set_environment(self, variables: Mapping[str, str]) -> None:
        # The handlers read os.environ (as on Lambda); one process hosts them all.
        wanted: dict[str, str | None] = {
            **variables,
            "AWS_PROFILE": None,
            "AWS_SESSION_TOKEN": None,
        }
        for name, value in wanted.items():
            self._saved_environment.setdefault(name, os.environ.get(name))
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def _restore_environment(self) -> None:
        for name, value in self._saved_environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_environment.clear()

    # ------------------------------------------------------------------------------ 4. functions

    def _start_functions(self) -> None:
        _forget_cached_clients()
        resources = self._resources
        for function in resources.functions.values():
            if function.schedule_seconds is not None:
                self.scheduled[function.logical_id] = ScheduledFunction(
                    self._load_handler(function),
                    interval_seconds=float(
                        self.settings.schedule_intervals.get(
                            function.logical_id, function.schedule_seconds
                        )
                    ),
                    function_name=f"{resources.prefix}-{function.logical_id}",
                    function_timeout_seconds=float(function.timeout_seconds),
                    memory_limit_in_mb=function.memory_mb,
                )
            if function.queue is None:
                continue
            handler = self._load_handler(function)
            concurrency = max(
                1, min(function.maximum_concurrency or 1, self.settings.max_concurrency)
            )
            self.event_sources[function.logical_id] = SqsEventSource(
                resources.queue_url(function.queue),
                self._observed(function, handler),
                batch_size=function.batch_size or 10,
                batching_window_seconds=self.batching_window(function),
                function_name=f"{resources.prefix}-{function.logical_id}",
                function_timeout_seconds=float(function.timeout_seconds),
                memory_limit_in_mb=function.memory_mb,
                concurrency=concurrency,
                # The function's role: what its handler's and poller's calls are allowed.
                principal=function.logical_id,
            )
        # The handlers configured their loggers at import: send them to the log file now.
        self._route_logs()
        for source in self.event_sources.values():
            source.start()
        for scheduled in self.scheduled.values():
            scheduled.start()

    def run_scheduled(self, logical_id: str) -> object:
        """Invoke a scheduled function now (e.g. "AlertsFunction"), as its schedule would."""
        if logical_id not in self.scheduled:
            raise DevStackError(f"{logical_id} is not a scheduled function of the template")
        return self.scheduled[logical_id].run_now()

    def batching_window(self, function: LocalFunction) -> float:
        """The seconds `function`'s event source waits to fill a batch: the settings' override,
        else the template's MaximumBatchingWindowInSeconds."""
        return float(
            self.settings.batching_windows.get(
                function.logical_id, function.batching_window_seconds
            )
        )

    def _load_handler(self, function: LocalFunction) -> Callable[..., Any]:
        module_name, _, attribute = function.handler.rpartition(".")
        path = (
            self._template_path.parent / function.code_uri / (module_name.replace(".", "/") + ".py")
        )
        if not path.is_file():
            raise DevStackError(f"{function.logical_id}: handler file {path} is missing")
        # A fresh module per stack: handlers build their clients at import from the environment.
        unique = f"jobhooks_local_{function.logical_id.lower()}_{uuid.uuid4().hex[:8]}"
        spec = importlib.util.spec_from_file_location(unique, path)
        if spec is None or spec.loader is None:
            raise DevStackError(f"{function.logical_id}: cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[unique] = module
        spec.loader.exec_module(module)
        self._modules.append(module)
        handler = getattr(module, attribute, None)
        if not callable(handler):
            raise DevStackError(f"{function.logical_id}: {path} has no function {attribute}")
        return handler  # type: ignore[no-any-return]

    def _observed(
        self, function: LocalFunction, handler: Callable[..., Any]
    ) -> Callable[[dict[str, Any], LambdaContext], object]:
        hook = self.settings.on_invocation

        def invoke(event: dict[str, Any], context: LambdaContext) -> object:
            started = time.perf_counter()
            try:
                # Its AWS calls are the function's (`faults`: rules name the function).
                with invoking_as(function.logical_id):
                    return handler(event, context)
            finally:
                if hook is not None:
                    hook(
                        Invocation(
                            function.logical_id,
                            len(event.get("Records", [])),
                            time.perf_counter() - started,
                            function.memory_mb,
                        )
                    )

        return invoke

    def wait_until_idle(self, timeout: float = 60.0, *, settle: float = 0.5) -> None:
        """Block until the ingest and delivery queues hold nothing, in flight or delayed, for
        `settle` seconds. Messages in a DLQ do not count: they are parked, not pending."""
        deadline = time.monotonic() + timeout
        quiet_since: float | None = None
        pending: int | str = "?"
        while True:
            try:
                pending = self.pending_messages()
            except Exception as error:  # an AWS outage a test made: not idle, keep waiting
                pending = f"unknown ({type(error).__name__})"
            now = time.monotonic()
            if pending == 0:
                quiet_since = quiet_since or now
                if now - quiet_since >= settle:
                    return
            else:
                quiet_since = None
            if now >= deadline:
                raise TimeoutError(f"messages still pending after {timeout} s: {pending}")
            time.sleep(0.2)

    def pending_messages(self) -> int:
        """Visible + in flight + delayed messages of every queue a function consumes."""
        return sum(self.queue_depth(source.queue_url) for source in self.event_sources.values())

    def queue_depth(self, queue_url: str) -> int:
        """Visible + in flight + delayed messages of one queue."""
        if self._probe is None:
            import boto3
            from botocore.config import Config

            # A session of its own: benches count the calls made on boto3's default session,
            # which the functions use, and these are not the bridge's.
            self._probe = boto3.session.Session().client(
                "sqs",
                endpoint_url=self.aws_endpoint_url,
                region_name=LOCAL_REGION,
                config=Config(
                    retries={"mode": "standard", "total_max_attempts": 1}, connect_timeout=2
                ),
            )
        attributes = self._probe.get_queue_attributes(
            QueueUrl=queue_url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        return sum(int(value) for value in attributes.values())

    # ------------------------------------------------------------------------------ 5. API

    def _start_api(self) -> None:
        if self.settings.api_port is None:
            return
        from jobhooks_tools.local.api_server import serve_api

        on_activity = self.settings.on_activity

        def access_log(line: str) -> None:
            if on_activity is not None:
                on_activity(Activity("api", "request", line, {}, time.time()))

        self._api_server = serve_api(port=self.settings.api_port, access_log=access_log)
        self.api_url = str(self._api_server.url)

    # ------------------------------------------------------------------------------ data

    def _open_data_dir(self) -> None:
        if self.settings.data_dir is not None:
            self.data_dir = Path(self.settings.data_dir)
        else:
            self.data_dir = Path(tempfile.mkdtemp(prefix="jobhooks-dev-data-"))
            self._owns_data_dir = True
        self.analytics_dir.mkdir(parents=True, exist_ok=True)
        # Before the functions load: ingest and the API find the sink and DuckDB through it.
        self._previous_backend = install_local_backend(self.settings.analytics_backend)
        self._installed_backend = True

    def _close_data_dir(self) -> None:
        if self._installed_backend:
            register_local_backend(self._previous_backend)
            self._installed_backend, self._previous_backend = False, None
        if self._owns_data_dir and self.data_dir is not None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        self._owns_data_dir = False

    # ------------------------------------------------------------------------------ logs

    def _open_log(self) -> None:
        path = self.settings.log_path
        if path is None:
            handle, name = tempfile.mkstemp(prefix="jobhooks-dev-", suffix=".log")
            os.close(handle)
            path = Path(name)
        self.log_path = path
        self._log_file = path.open("a", encoding="utf-8", buffering=1)
        if self.settings.capture_stdout:
            self._saved_stdout, sys.stdout = sys.stdout, self._log_file

    def _route_logs(self) -> None:
        """Send every log line to the log file and the records of interest to the feed."""
        assert self._log_file is not None
        root = logging.getLogger()
        file_handler = logging.StreamHandler(self._log_file)
        file_handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s")
        )
        file_handler.setLevel(logging.WARNING)
        # The package's records reach the file through its own loggers' handlers.
        file_handler.addFilter(lambda record: not record.name.startswith("jobhooks"))
        self._attach(root, file_handler)
        # pika reports every failed reconnect with a traceback; the shovel logs its own events.
        logging.getLogger("pika").setLevel(logging.CRITICAL)
        # Library warnings (Powertools' "no metrics to publish") belong in the log, too.
        logging.captureWarnings(True)
        consoles = (self._saved_stdout, sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)
        # The file holds what CloudWatch would: nothing below the configured level, even when
        # the feed below asks a logger for more.
        at_configured_level = _MinimumLevel(logging.getLevelName(self.settings.log_level))
        if self.settings.on_activity is not None:
            self._feed = ActivityFeed(self.settings.on_activity)
            # Successful attempts are logged at DEBUG (cheaper on AWS); the feed shows them.
            delivery = logging.getLogger("jobhooks.delivery.deliver")
            self._levels.append((delivery, delivery.level))
            delivery.setLevel(logging.DEBUG)
        for logger_ in _jobhooks_loggers():
            for handler in list(logger_.handlers):
                if isinstance(handler, logging.StreamHandler) and handler.stream in consoles:
                    self._redirected.append((handler, handler.stream))
                    handler.setStream(self._log_file)
                    handler.addFilter(at_configured_level)
                    self._filtered.append((handler, at_configured_level))
            if self._feed is not None:
                self._attach(logger_, self._feed)
        package_logger = logging.getLogger("jobhooks")
        if not package_logger.handlers:
            # No Powertools logger claimed the package name: give it the file itself.
            package_logger.setLevel(self.settings.log_level)
            copy = logging.StreamHandler(self._log_file)
            copy.setFormatter(file_handler.formatter)
            copy.addFilter(at_configured_level)
            self._attach(package_logger, copy)
        if self._feed is not None:
            self._attach(package_logger, self._feed)

    def console_stream(self) -> Any:
        """Where a console should print while stdout goes to the log file."""
        return self._saved_stdout or sys.stdout

    def record_failure(self, error: BaseException) -> None:
        """Write `error` with its traceback to the log file (when it is open)."""
        if self._log_file is not None:
            self._log_file.write(
                "".join(traceback.format_exception(type(error), error, error.__traceback__))
            )

    def _attach(self, logger_: logging.Logger, handler: logging.Handler) -> None:
        if handler not in logger_.handlers:
            logger_.addHandler(handler)
            self._log_handlers.append((logger_, handler))

    def _close_log(self) -> None:
        logging.captureWarnings(False)
        if self._saved_stdout is not None:
            sys.stdout, self._saved_stdout = self._saved_stdout, None
        for logger_, handler in self._log_handlers:
            logger_.removeHandler(handler)
        self._log_handlers.clear()
        for handler, filter_ in self._filtered:
            handler.removeFilter(filter_)
        self._filtered.clear()
        for logger_, level in self._levels:
            logger_.setLevel(level)
        self._levels.clear()
        for stream_handler, stream in self._redirected:
            stream_handler.setStream(stream)
        self._redirected.clear()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def _progress(self, message: str) -> None:
        if self.settings.on_progress is not None:
            self.settings.on_progress(message)


def _forget_cached_clients() -> None:
    """Per-process caches hold boto3 clients bound to the endpoint they were made for: a stack
    started after another one in this process (tests) must not reuse them."""
    from jobhooks.access.context import get_portal_context
    from jobhooks.ingest.wiring import ingest_service
    from jobhooks.management.context import get_management_context

    for cached in (
        ingest_service,
        get_management_context,
        get_portal_context,
    ):
        cached.cache_clear()


class _MinimumLevel(logging.Filter):
    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.level


def _jobhooks_loggers() -> Iterator[logging.Logger]:
    """The package's loggers and the handlers' Powertools logger (named after the service)."""
    service = os.environ.get("POWERTOOLS_SERVICE_NAME", "jobhooks")
    for name, candidate in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(candidate, logging.Logger) and (
            name in ("jobhooks", service) or name.startswith(("jobhooks.", f"{service}."))
        ):
            yield candidate


@contextlib.contextmanager
def _terminal_interrupts_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _host_port(url: str) -> tuple[str, int]:
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    if parts.hostname is None or parts.port is None:
        raise DevStackError(f"{url} has no host and port")
    return parts.hostname, parts.port


def _redacted(url: str) -> str:
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return urllib.parse.urlunsplit(parts._replace(netloc=user + host))
