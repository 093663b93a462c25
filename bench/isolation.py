"""A quiet tenant's webhook latency alone, and beside a noisy tenant, through the whole local stack.

    .venv/bin/python bench/isolation.py [--rounds 1] [--quiet-events 80] [--rate 4]
                                        [--endpoints 8] [--noisy-events 8] [--max-concurrency 2]
                                        [--retry-schedule 0,5,5,5,5,5,5,5]
                                        [--kinds slow,hanging,failing]
                                        [--subscription-cache-seconds 30]
                                        [--table-apart ClaimsTable] [--slowest 5]

RabbitMQ -> shovel -> SQS (moto) -> ingest (first attempts) -> SQS -> deliver -> loopback
receivers, all of `jobhooks_tools.local.dev_stack` as `jobhooks dev` runs it, in one run. The
quiet tenant has one endpoint that answers 200 at once; it publishes --quiet-events events at
--rate a second in every phase. Phases alternate: the quiet tenant alone, then beside a noisy
tenant, alone again, beside the next kind, and so on (--rounds times), so that whatever else
loads the machine meanwhile falls on the phases alone as much as on the noisy ones. Each noisy
tenant (a new one per kind and round, so no circuit opened before carries over) has --endpoints
endpoints and publishes --noisy-events events spread over the same seconds, interleaved with the
quiet ones:

- slow: every endpoint answers 200 after 4.8 s;
- hanging: every endpoint holds the request without answering while the quiet tenant publishes
  (the POSTs time out), then answers 200;
- failing: every endpoint answers 500 while the quiet tenant publishes, then 200.

A webhook's latency runs from just before its event's publish to the moment its endpoint has
the request whose 2xx answer delivered it. After each phase the run waits until every webhook
of both tenants is delivered (the noisy ones through retries; the retry schedule is shortened to
`RetrySchedule` 0,5,5,5,5,5,5,5 so that takes seconds, not hours). The functions keep a
tenant's subscriptions 30 s, as deployed, not the 2 s `jobhooks dev` keeps them for a CLI
user's sake (--subscription-cache-seconds); the delivery timeout stays `jobhooks dev`'s 5 s, a
harsher test than the deployed 15 s (the hanging endpoints' retries come three times as often).
It prints p50 and p99 of the quiet tenant alone (every alone phase together) and beside each
kind, its p99 beside a kind as a multiple of its p99 alone (the goal: 1.5 at most), the
machine's load average during the phases (the 1-minute figure, sampled each second), and the
median and p99 time of the stack's AWS calls while the events were published: on the local
stack every function's calls, both tenants', go to one moto server, so a busy moto or machine
shows there first. The last columns
count the stack's AWS calls from a phase's first publish until every webhook was delivered, and
the `GetItem`s among them (the noisy tenant's retries make most of them). `CPU` is this
process's CPU time over the publishing seconds: every function, the shovel and the receivers run
in it, under one interpreter lock, so near 100 % its threads (the quiet tenant's ingest among
them) wait for each other, which Lambda's separate instances never do. `children` is the CPU
of its child processes (the moto servers, the RabbitMQ node) over the same seconds, in % of one
core, and `machine` how busy both cores were (every process of the machine, /proc/stat).

`--slowest N` then lists, for each phase kind, its N slowest quiet webhooks and where their time
went: from the publish to the end of the `ReceiveMessage` that gave ingest their batch (the
shovel, SQS, a free poller), from there to their claim's conditional `PutItem`, the claim
itself, and from the claim to their endpoint's receipt of the POST; and the stack's other AWS
calls that ran during the claim, by operation and table or queue.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

import botocore.client
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.local.dev_stack import DevStack, DevStackSettings
from jobhooks_tools.publisher import SamplePublication, SamplePublisher, sample_traffic
from jobhooks_tools.sample_events import demo_key

SLOW_ANSWER_SECONDS: Final = 4.8
RETRY_SCHEDULE: Final = "0,5,5,5,5,5,5,5"
# How long ingest and deliver keep a tenant's subscriptions, as deployed (the settings' default):
# `jobhooks dev` keeps them 2 s so that a webhook added with the CLI matches the next event,
# which makes every event's path read the table fifteen times as often as on AWS.
DEPLOYED_SUBSCRIPTION_CACHE_SECONDS: Final = "30"
KINDS: Final = ("slow", "hanging", "failing")


@dataclass
class Endpoint:
    kind: str  # quiet, slow, hanging, failing
    misbehaving: threading.Event = field(default_factory=threading.Event)
    delivered: dict[str, float] = field(default_factory=dict)  # webhook-id -> first 2xx receipt


class Receivers:
    """One loopback server, one path per endpoint, each behaving as its kind says."""

    def __init__(self) -> None:
        self.endpoints: dict[str, Endpoint] = {}
        self._lock = threading.Lock()
        receivers = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # http.server's naming
                receivers._answer(self)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def add(self, name: str, kind: str) -> str:
        self.endpoints[name] = Endpoint(kind)
        return f"http://127.0.0.1:{self._server.server_address[1]}/{name}"

    def stop(self) -> None:
        for endpoint in self.endpoints.values():
            endpoint.misbehaving.clear()
        self._server.shutdown()

    def _answer(self, request: BaseHTTPRequestHandler) -> None:
        received = time.time()
        length = int(request.headers.get("content-length", "0"))
        request.rfile.read(length)
        endpoint = self.endpoints.get(request.path.strip("/"))
        status = 404 if endpoint is None else 200
        if endpoint is not None and endpoint.kind == "slow":
            time.sleep(SLOW_ANSWER_SECONDS)
        elif endpoint is not None and endpoint.kind == "hanging" and endpoint.misbehaving.is_set():
            while endpoint.misbehaving.is_set():
                time.sleep(0.1)
            return  # the client timed out long ago; its retry finds the endpoint answering
        elif endpoint is not None and endpoint.kind == "failing" and endpoint.misbehaving.is_set():
            status = 500
        try:
            request.send_response(status)
            request.send_header("content-length", "0")
            request.end_headers()
        except OSError:
            return  # the client gave up (a timeout): not delivered
        if endpoint is not None and status == 200:
            webhook_id = request.headers.get("webhook-id", "")
            with self._lock:
                endpoint.delivered.setdefault(webhook_id, received)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1, help="alone/noisy alternations")
    parser.add_argument("--quiet-events", type=int, default=80)
    parser.add_argument("--rate", type=float, default=4.0, help="quiet events per second")
    parser.add_argument("--endpoints", type=int, default=8, help="endpoints of a noisy tenant")
    parser.add_argument("--noisy-events", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument(
        "--max-concurrency",
        type=int,
        default=2,
        help="concurrent invocations per function (`jobhooks dev --max-concurrency`, default 2)",
    )
    parser.add_argument(
        "--kinds", default=",".join(KINDS), help=f"noisy kinds, comma-separated ({KINDS})"
    )
    parser.add_argument("--retry-schedule", default=RETRY_SCHEDULE, help="RetrySchedule")
    parser.add_argument(
        "--subscription-cache-seconds",
        default=DEPLOYED_SUBSCRIPTION_CACHE_SECONDS,
        help="JOBHOOKS_SUBSCRIPTION_CACHE_SECONDS: the deployed default (`jobhooks dev` uses 2)",
    )
    parser.add_argument(
        "--one-aws-process",
        action="store_true",
        help="serve DynamoDB from the same moto process as the other services (before "
        "`jobhooks dev` gave it its own)",
    )
    parser.add_argument(
        "--table-apart",
        metavar="LOGICAL_ID",
        help="a diagnostic: serve this table of template.yaml (e.g. ClaimsTable) from a moto "
        "process of its own, to see how much of the quiet tenant's tail is its calls sharing "
        "the local DynamoDB's one interpreter with other tables' (each table has its own locks "
        "there, not its own CPU)",
    )
    parser.add_argument(
        "--slowest",
        type=int,
        default=0,
        metavar="N",
        help="a diagnostic: for the N slowest quiet webhooks of each phase kind, where their time "
        "went (to their ingest batch, to their claim, the claim, to the POST) and which AWS "
        "calls of the stack ran during their claim",
    )
    args = parser.parse_args(argv)
    kinds = [kind for kind in args.kinds.split(",") if kind]
    if not kinds or set(kinds) - set(KINDS):
        parser.error(f"--kinds takes some of {', '.join(KINDS)}")

    receivers = Receivers()
    calls = AwsCallTimes()
    apart = TableApart(args.table_apart).start() if args.table_apart else None
    stack = DevStack(
        DevStackSettings(
            shovel="thread",
            api_port=None,
            capture_stdout=True,
            parameters={"RetrySchedule": args.retry_schedule},
            environment={"JOBHOOKS_SUBSCRIPTION_CACHE_SECONDS": args.subscription_cache_seconds},
            max_concurrency=args.max_concurrency,
            dynamodb_apart=not args.one_aws_process,
            on_progress=lambda line: print(f"... {line}", file=sys.stderr),
        )
    )
    results: dict[str, Phase] = {}
    try:
        stack.start()
        _subscribe(receivers, "quiet", ["quiet"], "quiet")
        print(f"... warming up with {args.warmup} events", file=sys.stderr)
        _run(stack, receivers, calls, args.warmup, args.rate, None, 0)
        for round_ in range(args.rounds):
            for kind in kinds:
                print(f"... round {round_ + 1}: alone", file=sys.stderr)
                alone = _run(stack, receivers, calls, args.quiet_events, args.rate, None, 0)
                _add(results, "alone", alone)
                tenant = f"noisy-{kind}-{round_ + 1}"
                names = [f"{tenant}-{n}" for n in range(args.endpoints)]
                _subscribe(receivers, tenant, names, kind)
                print(f"... round {round_ + 1}: beside {args.endpoints} {kind}", file=sys.stderr)
                beside = _run(
                    stack, receivers, calls, args.quiet_events, args.rate, tenant, args.noisy_events
                )
                _add(results, kind, beside)
    finally:
        receivers.stop()
        stack.stop()
        if apart is not None:
            apart.stop()

    alone_p99 = _quantile(results["alone"].latencies, 99)
    print(
        f"quiet tenant: 1 endpoint, {args.quiet_events} events at {args.rate:g}/s a phase; noisy "
        f"tenant: {args.endpoints} endpoints, {args.noisy_events} events in the same seconds; "
        f"{args.max_concurrency} concurrent invocations per function; {args.rounds} round(s) of "
        f"alone/noisy phases; subscriptions cached {args.subscription_cache_seconds} s"
    )
    print(
        f"  {'beside':<10}{'events':>8}{'p50 ms':>8}{'p99 ms':>8}{'p99 / alone':>13}"
        f"{'delivered':>22}{'load':>11}{'AWS call p50/p99 ms':>21}"
        f"{'calls':>8}{'GetItem':>9}{'CPU':>6}{'children':>10}{'machine':>9}"
    )
    for name, phase in results.items():
        p99 = _quantile(phase.latencies, 99)
        print(
            f"  {name:<10}{len(phase.latencies):>8}{1000 * _quantile(phase.latencies, 50):>8.0f}"
            f"{1000 * p99:>8.0f}{p99 / alone_p99:>13.2f}"
            f"{f'{phase.delivered}/{phase.expected} webhooks':>22}"
            f"{f'{min(phase.load):.1f}-{max(phase.load):.1f}':>11}"
            f"{_call_times(phase.aws_calls):>21}"
            f"{phase.call_count:>8}{phase.get_items:>9}"
            f"{f'{100 * phase.cpu_seconds / phase.seconds:.0f}%':>6}"
            f"{f'{100 * phase.children_cpu_seconds / phase.seconds:.0f}%':>10}"
            f"{f'{100 * phase.machine_busy:.0f}%':>9}"
        )
    if args.slowest:
        for name, phase in results.items():
            _print_slowest(name, phase, calls.every, args.slowest)
    return 0


def _print_slowest(name: str, phase: Phase, calls: list[Call], count: int) -> None:
    """Where the slowest quiet webhooks of a phase kind spent their time (`--slowest`)."""
    claims = {call.claimed: call for call in calls if call.claimed}
    print(f"slowest quiet webhooks {'alone' if name == 'alone' else f'beside {name}'}, ms:")
    print(
        f"  {'total':>6}{'to batch':>10}{'to claim':>10}{'claim':>7}{'to POST':>9}"
        "  during the claim"
    )
    slowest = sorted(phase.webhooks, key=lambda webhook: webhook[1] - webhook[2])[:count]
    for event_id, published, delivered in slowest:
        claim = claims.get(event_id)
        if claim is None:
            print(f"  {1000 * (delivered - published):>6.0f}  (no claim seen)")
            continue
        received = max(
            (
                call.ended
                for call in calls
                if call.thread == claim.thread
                and call.operation == "ReceiveMessage"
                and call.ended <= claim.started
            ),
            default=published,
        )
        during = Counter(
            f"{call.operation} {call.resource}"
            for call in calls
            if call is not claim
            and call.operation != "ReceiveMessage"
            and call.started < claim.ended
            and call.ended > claim.started
        )
        print(
            f"  {1000 * (delivered - published):>6.0f}{1000 * (received - published):>10.0f}"
            f"{1000 * (claim.started - received):>10.0f}"
            f"{1000 * (claim.ended - claim.started):>7.0f}"
            f"{1000 * (delivered - claim.ended):>9.0f}  "
            + ", ".join(f"{what} x{n}" for what, n in during.most_common(4))
        )


@dataclass
class Phase:
    """The quiet tenant's latencies in one or more phases, what was delivered, the load, and how
    long the stack's AWS calls took meanwhile."""

    latencies: list[float]
    delivered: int
    expected: int
    load: list[float]
    aws_calls: list[float]
    call_count: int = 0
    get_items: int = 0
    cpu_seconds: float = 0.0  # this process's, while the events were published
    seconds: float = 1.0  # the publishing seconds
    children_cpu_seconds: float = 0.0
    machine_busy: float = 0.0  # of every core, 0-1 (pooled phases: their mean)
    phases: int = 1
    # Each quiet webhook: its event, published and delivered at (for `--slowest`).
    webhooks: list[tuple[str, float, float]] = field(default_factory=list)


@dataclass(frozen=True)
class Call:
    """One AWS call of the stack, for `--slowest`: when, what, on which thread and resource, and
    the event a claim's `PutItem` claims."""

    started: float
    ended: float
    operation: str
    thread: str
    resource: str  # a table's or a queue's name, its stack prefix left out
    claimed: str | None = None


class AwsCallTimes:
    """How long each AWS call of the stack takes (every function shares one moto server here),
    long polls left out: when the machine or moto is busy, every call of every tenant waits."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float]] = []  # (start, seconds)
        self.operations: list[tuple[float, str]] = []  # (start, operation)
        self.every: list[Call] = []  # long polls too
        make_api_call = botocore.client.BaseClient._make_api_call

        def timed(client: Any, operation: str, params: Any) -> Any:
            started = time.time()
            try:
                return make_api_call(client, operation, params)
            finally:
                ended = time.time()
                if operation != "ReceiveMessage":
                    self.calls.append((started, ended - started))
                    self.operations.append((started, operation))
                self.every.append(_call(started, ended, operation, params))

        botocore.client.BaseClient._make_api_call = timed  # type: ignore[method-assign]

    def between(self, start: float, end: float) -> list[float]:
        return [seconds for at, seconds in list(self.calls) if start <= at <= end]

    def operations_between(self, start: float, end: float) -> list[str]:
        return [operation for at, operation in list(self.operations) if start <= at <= end]


def _call(started: float, ended: float, operation: str, params: Any) -> Call:
    params = params if isinstance(params, dict) else {}
    named = (
        params.get("TableName")
        or params.get("QueueUrl")
        or next(iter(params.get("RequestItems") or ()), "")
    )
    resource = str(named).rsplit("/", 1)[-1].rsplit("-", 1)[-1]
    claimed = None
    if operation == "PutItem" and resource == "ClaimsTable":
        claimed = (params.get("Item") or {}).get("event_id", {}).get("S")
    thread = threading.current_thread().name
    return Call(started, ended, operation, thread, resource, claimed)


class TableApart:
    """One table's DynamoDB calls sent to a moto server of their own (`--table-apart`).

    Every botocore client of this process made after `start` (the stack's, the functions')
    sends a request that names the table, by `TableName` or as the one table of a batch, to that
    server instead of the stack's DynamoDB endpoint; the table is created there too, by the
    stack's own provisioning. Nothing of the functions changes: only where that table lives."""

    def __init__(self, logical_id: str) -> None:
        from jobhooks_tools.local.moto_server import MotoServer

        self.logical_id = logical_id
        self.server = MotoServer()

    def start(self) -> TableApart:
        import botocore.handlers

        self.server.start()
        botocore.handlers.BUILTIN_HANDLERS.append(
            ("before-parameter-build.dynamodb", self._note_table)
        )
        botocore.handlers.BUILTIN_HANDLERS.append(("before-call.dynamodb", self._route))
        return self

    def stop(self) -> None:
        self.server.stop()

    def _note_table(self, params: Any = None, context: Any = None, **_: Any) -> None:
        if context is None or not isinstance(params, dict):
            return
        tables = list(params.get("RequestItems") or ())
        if self._names(params.get("TableName")) or any(map(self._names, tables)):
            if len(tables) > 1:
                raise RuntimeError(f"--table-apart: a batch names {tables}; split it to route it")
            context["jobhooks_table_apart"] = True

    def _route(self, params: Any = None, context: Any = None, **_: Any) -> None:
        if context and context.get("jobhooks_table_apart"):
            path = params["url"].split("://", 1)[1].partition("/")[2]
            params["url"] = f"{self.server.endpoint_url}/{path}"

    def _names(self, table: Any) -> bool:
        return isinstance(table, str) and table.endswith(self.logical_id)


def _add(results: dict[str, Phase], name: str, phase: Phase) -> None:
    if name not in results:
        results[name] = phase
        return
    pooled = results[name]
    pooled.latencies += phase.latencies
    pooled.delivered += phase.delivered
    pooled.expected += phase.expected
    pooled.load += phase.load
    pooled.aws_calls += phase.aws_calls
    pooled.call_count += phase.call_count
    pooled.get_items += phase.get_items
    pooled.cpu_seconds += phase.cpu_seconds
    pooled.seconds += phase.seconds
    pooled.children_cpu_seconds += phase.children_cpu_seconds
    pooled.machine_busy = (pooled.machine_busy * pooled.phases + phase.machine_busy) / (
        pooled.phases + 1
    )
    pooled.phases += 1
    pooled.webhooks += phase.webhooks


def _subscribe(receivers: Receivers, tenant: str, names: list[str], kind: str) -> None:
    from jobhooks.management.context import build_management_context
    from jobhooks.management.models import CreateSubscriptionRequest
    from jobhooks.management.settings import ManagementSettings
    from jobhooks.management.subscriptions import create_subscription

    context = build_management_context(ManagementSettings.from_env())
    for name in names:
        create_subscription(
            context, CreateSubscriptionRequest(tenant_id=tenant, url=receivers.add(name, kind))
        )


def _run(
    stack: DevStack,
    receivers: Receivers,
    aws_calls: AwsCallTimes,
    quiet_events: int,
    rate: float,
    noisy_tenant: str | None,
    noisy_events: int,
) -> Phase:
    """Publish the quiet tenant's events at `rate`, the noisy tenant's spread among them; wait
    until every webhook is delivered. The quiet latencies, webhooks delivered and expected, and
    the machine's load average while the events were published."""
    quiet = list(sample_traffic(demo_key(), count=quiet_events, tenants=("quiet",)))
    noisy = (
        list(sample_traffic(demo_key(), count=noisy_events, tenants=(noisy_tenant,)))
        if noisy_tenant
        else []
    )
    misbehaving = [
        e for n, e in receivers.endpoints.items() if noisy_tenant and n.startswith(noisy_tenant)
    ]
    for endpoint in misbehaving:
        endpoint.misbehaving.set()
    schedule = _interleave(quiet, noisy)
    published: dict[str, float] = {}
    interval = 1.0 / rate
    started = time.time()
    cpu_started = time.process_time()
    children_started, machine_started = _children_cpu_seconds(), _machine_jiffies()
    load = [os.getloadavg()[0]]
    with SamplePublisher(stack.amqp_url) as publisher:
        for at, publication in schedule:
            if time.time() - started >= len(load):
                load.append(os.getloadavg()[0])
            time.sleep(max(0.0, started + at * interval - time.time()))
            published[webhook_id_for(publication.event_id)] = time.time()
            publisher.publish_sample(publication)
    publishing_ended = time.time()
    cpu_seconds = time.process_time() - cpu_started
    children_cpu = _children_cpu_seconds() - children_started
    busy, total = (b - a for a, b in zip(machine_started, _machine_jiffies(), strict=True))
    for endpoint in misbehaving:
        endpoint.misbehaving.clear()  # it recovers: the retries deliver what it refused
    quiet_ids = {webhook_id_for(p.event_id) for p in quiet}
    noisy_ids = {webhook_id_for(p.event_id) for p in noisy}
    quiet_endpoint = receivers.endpoints["quiet"]

    def delivered() -> int:
        count = len(quiet_ids & quiet_endpoint.delivered.keys())
        for endpoint in misbehaving:
            count += len(noisy_ids & endpoint.delivered.keys())
        return count

    expected = len(quiet_ids) + len(noisy_ids) * len(misbehaving)
    _wait(lambda: delivered() >= expected, timeout=900)
    stack.wait_until_idle(timeout=300)
    latencies = [quiet_endpoint.delivered[w] - published[w] for w in quiet_ids]
    webhooks = [
        (p.event_id, published[w], quiet_endpoint.delivered[w])
        for p in quiet
        for w in [webhook_id_for(p.event_id)]
    ]
    operations = aws_calls.operations_between(started, time.time())
    return Phase(
        latencies,
        delivered(),
        expected,
        load,
        aws_calls.between(started, publishing_ended),
        len(operations),
        operations.count("GetItem"),
        cpu_seconds,
        publishing_ended - started,
        children_cpu,
        busy / total if total else 0.0,
        webhooks=webhooks,
    )


def _children_cpu_seconds() -> float:
    """CPU seconds used so far by every descendant process of this one (Linux /proc)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    ticks = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    mine, total = {os.getpid()}, 0.0
    for pid in sorted(parents):  # a child has a higher pid than its parent, nearly always
        if parents[pid] in mine:
            mine.add(pid)
            total += times[pid]
    return total


def _machine_jiffies() -> tuple[int, int]:
    """Busy and total jiffies of every core since boot (/proc/stat's first line)."""
    with open("/proc/stat") as stat:
        values = [int(value) for value in stat.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


def _interleave(
    quiet: list[SamplePublication], noisy: list[SamplePublication]
) -> list[tuple[float, SamplePublication]]:
    """When each event is published, in quiet-event intervals: the noisy ones spread evenly."""
    schedule = [(float(n), p) for n, p in enumerate(quiet)]
    step = len(quiet) / max(1, len(noisy))
    schedule += [(n * step + 0.5, p) for n, p in enumerate(noisy)]
    return sorted(schedule, key=lambda pair: pair[0])


def _wait(condition: Callable[[], bool], *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("not every webhook was delivered in time")
        time.sleep(0.1)


def _call_times(seconds: list[float]) -> str:
    if len(seconds) < 2:
        return "-"
    return f"{1000 * _quantile(seconds, 50):.0f}/{1000 * _quantile(seconds, 99):.0f}"


def _quantile(values: list[float], percent: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[percent - 1]


if __name__ == "__main__":
    sys.exit(main())
