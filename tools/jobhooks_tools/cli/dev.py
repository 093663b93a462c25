"""`jobhooks dev`: the whole bridge on one machine, no AWS account (docs/local-stack.md)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType
from typing import Any

from jobhooks.inbound.keys import HmacKey, KeyConfigurationError, derive_external_key, key_from_hex

from jobhooks_tools.cli.exceptions import CliError

USAGE_ERROR = 2
DEFAULT_ALERT_INTERVAL = 60

_DESCRIPTION = """\
Run the whole bridge locally: RabbitMQ (the broker at --amqp-url, else a private node of the
installed rabbitmq-server), the shovel, a local AWS emulator (moto) holding the queues,
tables, key and secret of template.yaml, the ingest and deliver functions driven like the
Lambda SQS event source, and the management API on localhost. Every accepted event is also a
row of the analytics table, written under the data directory and answered by DuckDB
(`jobhooks analytics ...`); the tenants' job-health alert rules are evaluated on those rows
every --alert-interval seconds. One line per ingested, rejected or delivered message and per
notification (what the operators' SNS topic receives). --auto-disable-after 15s shortens the
sustained-failure rule (an endpoint failing every attempt that long is disabled) to watch it.
Ctrl-C (or SIGTERM) stops everything.

--demo also starts a receiver that verifies signatures, registers it as a webhook of tenant
acme and publishes sample events: a completed and a failed one (delivered), a repairer
re-emission (deduplicated) and a copy re-addressed to another tenant (quarantined); and prints
a one-time link that opens the tenant portal for acme (its endpoints and deliveries).

Local only: loopback and plain-http webhooks are allowed here and nowhere else."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "dev",
        help="run the whole bridge locally (no AWS account)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="also run a verifying receiver, register it and publish sample events",
    )
    parser.add_argument(
        "--amqp-url",
        metavar="URL",
        help="RabbitMQ to shovel from (default amqp://guest:guest@localhost:5672/; when none "
        "answers there, a private node is started)",
    )
    parser.add_argument(
        "--api-port",
        type=_port,
        default=0,
        metavar="N",
        help="port of the management API on 127.0.0.1 (default: a free one)",
    )
    keys = parser.add_mutually_exclusive_group()
    keys.add_argument(
        "--key-hex",
        metavar="HEX",
        help="the Fetcher external HMAC key to trust (default: the public demo key)",
    )
    keys.add_argument(
        "--app-enc-key", metavar="B64", help="derive the key to trust from this APP_ENC_KEY"
    )
    parser.add_argument(
        "--retry-schedule",
        metavar="SECONDS,...",
        help="delivery retry delays, e.g. 0,1,2,5 (default: the template's, about 27 h)",
    )
    parser.add_argument(
        "--max-concurrency",
        type=_positive,
        default=2,
        metavar="N",
        help="most concurrent invocations per function (default 2)",
    )
    parser.add_argument(
        "--alert-interval",
        type=_positive,
        default=DEFAULT_ALERT_INTERVAL,
        metavar="SECONDS",
        help=f"how often the job-health alert rules are evaluated (default "
        f"{DEFAULT_ALERT_INTERVAL}; every 5 minutes on AWS)",
    )
    parser.add_argument(
        "--auto-disable-after",
        type=_duration,
        metavar="DURATION",
        help="disable an endpoint whose every attempt has failed this long, e.g. 15s, 10m "
        "(default: the template's AutoDisableAfterHours, 120h)",
    )
    parser.add_argument(
        "--log-file",
        metavar="PATH",
        help="where the functions' and the shovel's logs go (default: a temporary file)",
    )
    parser.add_argument(
        "--data-dir",
        metavar="PATH",
        help="where the analytics rows are written (PATH/analytics), kept after exit (default: "
        "a new temporary directory, also kept)",
    )
    parser.add_argument(
        "--log-level",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        default="INFO",
        help="level of the functions' logs in the log file (default INFO)",
    )
    parser.set_defaults(handler=run_dev)


def run_dev(args: argparse.Namespace) -> int:
    import tempfile
    from pathlib import Path

    from jobhooks_tools.local.activity import Activity
    from jobhooks_tools.local.dev_stack import DevStack, DevStackError, DevStackSettings
    from jobhooks_tools.local.template import LocalTemplateError

    key, key_origin = _trusted_key(args)
    console = _Console()
    stopping = _install_stop_signals(console)

    def show(activity: Activity) -> None:
        console.say(activity.line())

    parameters = {"RetrySchedule": args.retry_schedule} if args.retry_schedule else {}
    # The sustained-failure rule's period, for the functions that settle attempts.
    environment = (
        {"JOBHOOKS_AUTO_DISABLE_AFTER": args.auto_disable_after} if args.auto_disable_after else {}
    )
    # Kept after exit, unlike the stack's own temporary directory: the rows are the user's.
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="jobhooks-dev-"))
    stack = DevStack(
        DevStackSettings(
            amqp_url=args.amqp_url,
            key=key,
            parameters=parameters,
            api_port=args.api_port,
            max_concurrency=args.max_concurrency,
            # As on AWS, DynamoDB does not share a process with the other services.
            dynamodb_apart=True,
            schedule_intervals={"AlertsFunction": args.alert_interval},
            environment=environment,
            log_level=args.log_level,
            log_path=Path(args.log_file) if args.log_file else None,
            data_dir=data_dir,
            emit_metrics=True,
            capture_stdout=True,
            on_activity=show,
            on_progress=lambda message: console.say(f"... {message}"),
        )
    )
    receiver = None
    try:
        console.say("jobhooks dev: starting the bridge on this machine (Ctrl-C stops it)")
        stack.start()
        _print_summary(console, stack, key, key_origin)
        if args.demo:
            receiver = _run_demo(console, stack, key, show)
        console.say("waiting for events; one line per ingested, rejected or delivered message")
        stopping.wait()
    except KeyboardInterrupt:
        pass
    except (DevStackError, LocalTemplateError) as error:
        raise CliError(f"dev: {error}") from None
    except Exception as error:
        # Anything else is a bug or an unexpected environment: one line here, the traceback
        # in the log file.
        stack.record_failure(error)
        raise CliError(
            f"dev: {type(error).__name__}: {error} (details in {stack.log_path})"
        ) from None
    finally:
        stopping.set()
        console.say("stopping: shovel, functions, API, RabbitMQ (if private), local AWS ...")
        if receiver is not None:
            receiver.stop()
        stack.stop()
        console.say(f"the analytics rows stay in {data_dir / 'analytics'}")
        console.say("stopped")
    return 0


def _run_demo(console: _Console, stack: Any, key: HmacKey, show: Any) -> Any:
    from jobhooks_tools.local.demo import (
        demo_portal_link,
        publish_demo_traffic,
        register_demo_webhook,
        start_demo_receiver,
    )

    receiver = start_demo_receiver(show)
    webhook = register_demo_webhook(receiver)
    verifier = "standardwebhooks" if _importable("standardwebhooks") else "jobhooks"
    console.say(
        f"  demo receiver   {webhook.url} (verifies with {verifier}), registered as "
        f"{webhook.subscription_id} for tenant {webhook.tenant_id}"
    )
    if stack.api_url:
        link = demo_portal_link(stack.api_url, webhook.tenant_id)
        console.say(
            f"  tenant portal   {link['url']} (tenant {webhook.tenant_id}; opens once, until "
            f"{link['expires_at']}; another: jobhooks portal link --tenant {webhook.tenant_id})"
        )
    console.say("")
    publish_demo_traffic(stack.amqp_url, key, lambda line: console.say(f"demo: {line}"))
    return receiver


def _print_summary(console: _Console, stack: Any, key: HmacKey, key_origin: str) -> None:
    from jobhooks_tools.local.dev_stack import LOCAL_ONLY_SETTINGS

    resources = stack.resources
    broker = stack.broker
    broker_kind = "private node, stopped on exit" if broker.is_private else "found running"
    functions = resources.functions
    lines = [
        "",
        "jobhooks dev is running:",
        f"  RabbitMQ        {broker.url} ({broker_kind})",
        f"  shovel          exchange fetcher.job.events -> {resources.names['IngestQueue']}",
        f"  local AWS       {stack.aws_endpoint_url} (moto; resources of template.yaml)",
    ]
    lines += [
        f"  local {service:<9} {url} (moto, a process of its own)"
        for service, url in stack.service_endpoints.items()
    ]
    for logical_id in stack.event_sources:
        function = functions[logical_id]
        lines.append(
            f"  {logical_id:<15} batch {function.batch_size}, timeout {function.timeout_seconds}"
            f" s, {function.memory_mb} MB, polls {resources.names[function.queue]}"
        )
    for logical_id, scheduled in stack.scheduled.items():
        function = functions[logical_id]
        lines.append(
            f"  {logical_id:<15} timeout {function.timeout_seconds} s, {function.memory_mb} MB, "
            f"every {scheduled.interval_seconds:g} s (job-health alert rules)"
        )
    auto_disable = stack.settings.environment.get("JOBHOOKS_AUTO_DISABLE_AFTER")
    if auto_disable:
        lines.append(
            f"  auto-disable    an endpoint failing every attempt for {auto_disable} "
            "(endpoint.disabled, sustained_failure)"
        )
    topic = resources.refs.get("OperationsTopic")
    if topic:
        lines.append(f"  operators' SNS  {topic} (each notification: a 'notify' line below)")
    api = stack.api_url or "not available in this checkout"
    lines += [
        f"  management API  {api}",
        f"  Fetcher key     {key.hex} ({key_origin})",
        f"  analytics rows  {stack.analytics_dir} (JSON lines; DuckDB answers the API's "
        "/v1/analytics routes)",
        f"  logs            {stack.log_path}",
        f"  local-only      {', '.join(f'{k}={v}' for k, v in LOCAL_ONLY_SETTINGS.items())}",
        "",
        "In another shell:",
    ]
    if stack.api_url:
        lines.append(f"  export JOBHOOKS_API_URL={stack.api_url} JOBHOOKS_API_AUTH=none")
    lines += [
        "  jobhooks webhooks add --tenant acme --url http://127.0.0.1:9000/hook",
        "  jobhooks portal link --tenant acme     # opens acme's tenant portal in a browser",
        f"  jobhooks publish-sample --amqp-url {broker.url} --tenant acme --key-hex {key.hex}",
        "  jobhooks analytics query failure_rate_by_job",
        f"  jobhooks analytics check --amqp-url {broker.url} --key-hex {key.hex}",
        "",
    ]
    for line in lines:
        console.say(line)


def _trusted_key(args: argparse.Namespace) -> tuple[HmacKey, str]:
    from jobhooks_tools.sample_events import demo_key

    try:
        if args.key_hex:
            return key_from_hex(args.key_hex), "from --key-hex"
        if args.app_enc_key:
            return derive_external_key(args.app_enc_key), "derived from --app-enc-key"
    except KeyConfigurationError as error:
        raise CliError(f"dev: {error}", USAGE_ERROR) from None
    return demo_key(), "the public demo key of events/README.md"


class _Console:
    """Lines from several threads, never interleaved, on the terminal's stdout (the stack sends
    the functions' own stdout to the log file, as Lambda sends it to CloudWatch Logs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stream = sys.stdout

    def say(self, line: str) -> None:
        with self._lock:
            print(line, file=self._stream, flush=True)


def _install_stop_signals(console: _Console) -> threading.Event:
    """The first SIGINT or SIGTERM interrupts the main thread; later ones only say that the
    stack is still stopping, so a second Ctrl-C cannot leave child processes behind."""
    stopping = threading.Event()

    def on_signal(number: int, _frame: FrameType | None) -> None:
        if stopping.is_set():
            console.say(f"still stopping ({signal.Signals(number).name} ignored)")
            return
        stopping.set()
        raise KeyboardInterrupt

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, on_signal)
    return stopping


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be between 0 and 65535")
    return value


def _duration(text: str) -> str:
    """A duration such as 15s, 10m, 2h (kept as given: the functions parse it)."""
    from jobhooks.endpoint_health.settings import parse_duration_seconds

    try:
        seconds = parse_duration_seconds(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return text.strip()


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value
