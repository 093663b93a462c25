"""What a million events cost on AWS, from the requests the local stack really makes.

    .venv/bin/python bench/cost.py [--events 300] [--subscriptions 2] [--copies 0]
        [--rate EVENTS_PER_SECOND [--time-scale K]] [--ingest-window S] [--deliver-window S]
        [--receiver-ms MS] [--alert-rules N]

Runs the whole bridge (`jobhooks_tools.local.dev_stack`: RabbitMQ, the shovel, moto with
template.yaml's resources, the ingest and deliver handlers under the SQS event-source poller) and
publishes N signed events for one tenant with S subscriptions. botocore `before-call`/`after-call`
hooks on boto3's default session (the handlers' and the pollers' clients) and on the shovel's client
count every AWS request by service and operation, with its request and response sizes. From that it
derives, per event:

- SQS requests in billed 64 KiB units (shovel sends, event-source receives and deletes, the
  delivery tasks ingest sends); empty receives are idle polling, reported apart;
- Lambda invocations and GB-s from the measured handler durations and the template's memory;
- DynamoDB write and read request units from item sizes (the final size of every item
  written, each index projecting it charged too) and from returned items;
- KMS and Secrets Manager requests;
- CloudWatch Logs bytes the functions wrote (JSON logs + EMF lines) plus Lambda's own
  START/END/REPORT lines; data out to receivers (the POSTs as received, plus TLS overhead);
- the analytics rows: what the Firehose sink would send for the rows the local sink wrote (one
  write per accepted event), packed by `jobhooks.analytics.firehose` into records and
  PutRecordBatch calls, each record billed rounded up to 5 KB; S3 objects per buffer flush and
  the rows' storage over their retention; Athena per question asked (10 MB minimum);

`--alert-rules N` turns job-health alerts on: N rules for the tenant, each with a window of its
own (so each is its own Athena query: the dearest case; rules of one tenant and window share
one). Evaluating them adds nothing per event (docs/notifications.md): the run measures the
events as without them, then invokes the alerts function a few times as its schedule would and
prices a month of evaluations (every 5 minutes) per rule: its requests, its run time, and
Athena's 10 MB minimum per query (the local stack answers with DuckDB, so the scan is priced,
not measured).

By default the events are published as one burst, which fills every batch. `--rate R` paces
them at R events per second instead, the steady load of a deployment, with the event sources'
batching windows `--ingest-window` and `--deliver-window` (the template's
`IngestBatchingWindowSeconds` and `DeliverBatchingWindowSeconds`, 0 by default). A batch holds
about rate x window records, so `--time-scale K` runs K times faster with the same product: the
events are published at R x K per second, the windows are divided by K (the local event source
takes fractions of a second, Lambda only whole seconds) and so are the functions' subscription
cache times; latencies are reported as measured and multiplied by K. What it does not compress:
the handlers' own run time and the emulator's call latency, the poller's 1 s long poll and its
50 ms pause after an empty short poll, and the shovel. See docs/cost.md.

It then prices them per million events with the table `PRICES` (us-east-1, each with its source)
and sets them beside EventBridge API destinations and hosted webhook services. moto answers
more slowly than AWS, so the Lambda duration line is an upper bound; every other line counts
requests and bytes, which do not depend on the emulator's speed.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

import boto3
from jobhooks.analytics.firehose import pack_records, request_batches
from jobhooks.analytics.row import AnalyticsRow
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.local.analytics.files import row_files
from jobhooks_tools.local.demo_receiver import DemoReceiver
from jobhooks_tools.local.dev_stack import DevStack, DevStackSettings, Invocation
from jobhooks_tools.local.moto_server import LOCAL_REGION
from jobhooks_tools.local.template import load_template
from jobhooks_tools.publisher import Copy, SamplePublisher, sample_traffic
from jobhooks_tools.sample_events import demo_key

TENANT: Final = "acme"
MILLION: Final = 1_000_000
SQS_CHUNK: Final = 64 * 1024
# Lambda writes START, END and REPORT lines for every invocation (about 90 + 60 + 250 bytes
# with request ids, durations and memory figures); they are ingested like any other line.
LAMBDA_PLATFORM_LOG_BYTES: Final = 400
# Client-to-server bytes of a fresh TLS 1.3 connection (ClientHello, key share, Finished) and
# TCP/IP headers, charged once per new connection the receivers accepted (counted). The bytes
# are an estimate, not a measurement.
TLS_OVERHEAD_BYTES: Final = 1_000
# What an in-region DynamoDB or SQS call takes from Lambda, for the duration sensitivity line.
IN_REGION_CALL_SECONDS: Final = 0.008
# DynamoDB counts about 100 bytes of index overhead per item in a GSI.
GSI_ITEM_OVERHEAD: Final = 100
# Firehose bills each record's size rounded up to the next 5 KB.
FIREHOSE_RECORD_UNIT: Final = 5 * 1024
# template.yaml's AnalyticsDeliveryStream flushes every 300 s (or 64 MiB): one S3 object each.
FIREHOSE_FLUSHES_PER_MONTH: Final = 30 * 24 * 3600 // 300
# TableCapacityMode=provisioned: the tables and indexes it provisions (template.yaml), the
# auto scaling target, and a month of steady load for pricing them.
PROVISIONED_TABLES: Final = ("ClaimsTable", "DeliveriesTable", "FirstAttemptsTable")
# Those with a global secondary index (provisioned, and scaled, on its own).
PROVISIONED_INDEXED: Final = frozenset({"ClaimsTable", "DeliveriesTable"})
PROVISIONED_TARGET_UTILIZATION: Final = 0.70
HOURS_PER_MONTH: Final = 730
# Rows per Firehose flush (one S3 object) at a steady million events a month.
ROWS_PER_FLUSH: Final = MILLION // FIREHOSE_FLUSHES_PER_MONTH
# Athena bills at least 10 MB per query.
ATHENA_MINIMUM_BYTES: Final = 10 * 1_000_000
# The template's subscription cache times (JOBHOOKS_SUBSCRIPTION(S)_CACHE_SECONDS), divided by
# --time-scale like the batching windows, so cache refreshes per event stay those of the rate.
SUBSCRIPTION_CACHE_SECONDS: Final = 30.0
# The functions that POST webhooks: ingest (first attempts) and deliver (the retries).
POSTING_FUNCTIONS: Final = frozenset({"IngestFunction", "DeliverFunction"})
# Lambda's limit on MaximumBatchingWindowInSeconds for an SQS event source mapping.
MAX_BATCHING_WINDOW_SECONDS: Final = 300


@dataclass(frozen=True)
class Load:
    """How the measured events are published, and the batching windows they meet."""

    # Events per second at the deployment being modelled; None: one burst.
    rate: float | None = None
    # The run goes this many times faster than the modelled deployment (see the docstring).
    time_scale: float = 1.0
    # The deployed windows, whole seconds as Lambda takes them.
    ingest_window: int = 0
    deliver_window: int = 0
    # How long the receivers take to answer each POST (0: at once, on loopback).
    receiver_ms: int = 0

    @property
    def publish_interval(self) -> float:
        """Wall seconds between two published events (0: a burst)."""
        return 0.0 if self.rate is None else 1.0 / (self.rate * self.time_scale)

    def local(self, seconds: float) -> float:
        """A deployed duration as the compressed run plays it."""
        return seconds / self.time_scale

    def describe(self) -> str:
        windows = (
            f"batching windows: ingest {self.ingest_window} s, deliver {self.deliver_window} s; "
            f"receivers answer in {self.receiver_ms} ms"
        )
        if self.rate is None:
            return f"load: one burst; {windows}"
        if self.time_scale == 1:
            return f"load: paced at {self.rate:g} events/s; {windows}"
        return (
            f"load: paced at {self.rate:g} events/s, run {self.time_scale:g}x faster (published "
            f"at {self.rate * self.time_scale:g}/s, windows {self.local(self.ingest_window):g} s "
            f"and {self.local(self.deliver_window):g} s, cache times divided too); {windows}"
        )


@dataclass(frozen=True)
class Price:
    usd: float
    per: str
    source: str


# us-east-1 list prices, from the project notes aws-facts.md, section 5 (stored copies of
# third-party pages and AWS whitepapers, 2025-2026), except where the source says otherwise.
# Re-check every one against aws.amazon.com/<service>/pricing before quoting a figure.
PRICES: Final = {
    "lambda_request": Price(0.20 / MILLION, "request", "Lambda pricing (x86 and arm64)"),
    "lambda_gb_s": Price(0.0000133334, "GB-s", "Lambda pricing, arm64 (template: arm64)"),
    "sqs_request": Price(0.40 / MILLION, "64 KiB request", "SQS standard, first 100 B/month"),
    "dynamodb_wru": Price(0.625 / MILLION, "WRU", "DynamoDB on-demand, after Nov-2024 cut"),
    "dynamodb_rru": Price(0.125 / MILLION, "RRU", "DynamoDB on-demand, after Nov-2024 cut"),
    "dynamodb_wcu_hour": Price(
        0.00065, "WCU-hour", "DynamoDB provisioned, commonly cited; not in aws-facts: verify"
    ),
    "dynamodb_rcu_hour": Price(
        0.00013, "RCU-hour", "DynamoDB provisioned, commonly cited; not in aws-facts: verify"
    ),
    "kms_request": Price(0.03 / 10_000, "request", "KMS, commonly cited; not in aws-facts: verify"),
    "secrets_request": Price(0.05 / 10_000, "API call", "Secrets Manager"),
    "api_gateway_request": Price(1.00 / MILLION, "request", "API Gateway HTTP API, first 300 M"),
    "logs_gb": Price(0.50, "GB ingested", "CloudWatch Logs standard ingestion"),
    "egress_gb": Price(0.09, "GB out", "Data transfer out to the internet, first 10 TB"),
    "kms_key_month": Price(1.00, "key-month", "KMS customer managed key, commonly cited: verify"),
    "secret_month": Price(0.40, "secret-month", "Secrets Manager"),
    "metric_month": Price(0.30, "metric-month", "CloudWatch custom metrics, first 10k"),
    "alarm_month": Price(0.10, "alarm-month", "CloudWatch standard alarm, commonly cited: verify"),
    "dashboard_month": Price(3.00, "dashboard-month", "CloudWatch dashboard beyond 3 free: verify"),
    "eventbridge_event": Price(1.00 / MILLION, "event", "EventBridge custom events (64 KB)"),
    "api_destination": Price(0.20 / MILLION, "delivery", "EventBridge API destinations"),
    # The analytics table's services: none of these is in aws-facts; commonly cited us-east-1
    # figures, to re-check at aws.amazon.com/{firehose,s3,athena}/pricing.
    "firehose_gb": Price(
        0.029, "GB", "Firehose Direct PUT, first 500 TB/month, records rounded up to 5 KB: verify"
    ),
    "firehose_conversion_gb": Price(
        0.018, "GB", "Firehose format conversion (JSON to Parquet), commonly cited: verify"
    ),
    "s3_gb_month": Price(0.023, "GB-month", "S3 Standard storage, first 50 TB, commonly cited"),
    "s3_put": Price(0.005 / 1000, "PUT", "S3 Standard PUT, commonly cited: verify"),
    "athena_tb": Price(5.00, "TB scanned", "Athena SQL, 10 MB minimum per query: verify"),
}

# Hosted webhook services, list prices as a third-party comparison reported them (dev.to,
# "Why We Built EmitHQ: The $49-$490 Webhook Pricing Gap", 2025/2026), not the vendors' own
# pages: re-check at svix.com/pricing, hookdeck.com/pricing and getconvoy.io/pricing.
HOSTED_SERVICES: Final = (
    ("Svix", 490.0, "first paid plan $490/month (free tier: 50,000 messages/month)"),
    ("Hookdeck", 499.0, "Growth $499/month (Team $39/month is capped at 5 events/s)"),
    ("Convoy Cloud", 99.0, "from $99/month"),
)


# ------------------------------------------------------------------------------ counting


@dataclass
class Call:
    service: str
    operation: str
    request_bytes: int
    response_bytes: int
    request: dict[str, Any]
    response: dict[str, Any]
    seconds: float


class AwsMeter:
    """botocore hooks that record every AWS request the bridge makes, and every invocation."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.invocations: list[Invocation] = []
        self._lock = threading.Lock()
        self._recording = True

    def install(self, events: Any) -> None:
        events.register("before-call", self._before_call)
        events.register("after-call", self._after_call)

    def instrument(self, client: Any) -> None:
        self.install(client.meta.events)

    def invocation(self, invocation: Invocation) -> None:
        with self._lock:
            if self._recording:
                self.invocations.append(invocation)

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.invocations.clear()
            self._recording = True

    def snapshot(self) -> tuple[list[Call], list[Invocation]]:
        with self._lock:
            self._recording = False
            return list(self.calls), list(self.invocations)

    def _before_call(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        body = params.get("body") or b""
        context["bench_started"] = time.perf_counter()
        if isinstance(body, dict):
            # A query-protocol service (SNS): form fields, sent URL-encoded.
            context["bench_request_bytes"] = len(urlencode(body))
            context["bench_request"] = {}
            return
        context["bench_request_bytes"] = len(body)
        try:
            context["bench_request"] = json.loads(body) if body else {}
        except ValueError:
            context["bench_request"] = {}

    def _after_call(
        self,
        http_response: Any,
        parsed: dict[str, Any],
        model: Any,
        context: dict[str, Any],
        **_: Any,
    ) -> None:
        call = Call(
            service=model.service_model.endpoint_prefix,
            operation=model.name,
            request_bytes=int(context.get("bench_request_bytes", 0)),
            response_bytes=len(http_response.content or b""),
            request=context.get("bench_request", {}),
            response=parsed,
            seconds=time.perf_counter() - float(context.get("bench_started", time.perf_counter())),
        )
        with self._lock:
            if self._recording:
                self.calls.append(call)


# ------------------------------------------------------------------------------ DynamoDB sizes


def attribute_size(value: Mapping[str, Any]) -> int:
    """The size DynamoDB bills for one typed attribute value (developer guide, "Item sizes")."""
    ((kind, content),) = value.items()
    if kind == "S":
        return len(str(content).encode())
    if kind == "N":
        digits = str(content).lstrip("-").replace(".", "").lstrip("0") or "0"
        return (len(digits) + 1) // 2 + 1
    if kind == "B":
        return len(content) if isinstance(content, bytes) else len(base64.b64decode(content))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS"):
        return sum(attribute_size({kind[0]: item}) for item in content)
    if kind == "L":
        return 3 + sum(1 + attribute_size(item) for item in content)
    if kind == "M":
        return 3 + sum(len(k.encode()) + 1 + attribute_size(v) for k, v in content.items())
    raise ValueError(f"unknown attribute type {kind}")


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    return sum(len(name.encode()) + attribute_size(value) for name, value in item.items())


def units(size: int, unit: int) -> int:
    return max(1, math.ceil(size / unit))


@dataclass
class Table:
    name: str
    key: tuple[str, ...]
    # Each global secondary index's key attributes (all project ALL in template.yaml).
    indexes: list[tuple[str, ...]]
    items: dict[str, dict[str, Any]] = field(default_factory=dict)

    def key_of(self, item: Mapping[str, Any]) -> str:
        return json.dumps([item[name] for name in self.key], sort_keys=True, default=str)


def read_tables(endpoint_url: str, names: Iterable[str]) -> dict[str, Table]:
    """Every table's key, indexes and final items, read with a client the meter does not see."""
    client = boto3.session.Session().client(
        "dynamodb", endpoint_url=endpoint_url, region_name=LOCAL_REGION
    )
    tables = {}
    for name in names:
        description = client.describe_table(TableName=name)["Table"]
        table = Table(
            name,
            tuple(k["AttributeName"] for k in description["KeySchema"]),
            [
                tuple(k["AttributeName"] for k in index["KeySchema"])
                for index in description.get("GlobalSecondaryIndexes", [])
            ],
        )
        for page in client.get_paginator("scan").paginate(TableName=name):
            for item in page["Items"]:
                table.items[table.key_of(_json_shape(item))] = item
        tables[name] = table
    return tables


def _json_shape(item: Mapping[str, Any]) -> dict[str, Any]:
    """boto3 returns B values as bytes; the wire (and the meter) sees base64 text."""
    shaped: dict[str, Any] = {}
    for name, value in item.items():
        ((kind, content),) = value.items()
        if kind == "B" and isinstance(content, bytes):
            content = base64.b64encode(content).decode()
        shaped[name] = {kind: content}
    return shaped


@dataclass
class CapacityUnits:
    wru: float = 0.0
    rru: float = 0.0
    wru_by_table: Counter[str] = field(default_factory=Counter)
    rru_by_table: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    # Final item sizes of the items written, per table (what the write units follow).
    sizes_by_table: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    index_writes_by_table: Counter[str] = field(default_factory=Counter)
    # The part of `wru_by_table` charged to the table's index (each table has at most one).
    index_wru_by_table: Counter[str] = field(default_factory=Counter)


def dynamodb_units(calls: Iterable[Call], tables: Mapping[str, Table]) -> CapacityUnits:
    """Write units: a put's item (or the stored one when its condition failed), an update's or
    delete's final item (the larger of before and after: our updates only grow items), once for
    the table and once for each index whose key the item carries. Read units: returned bytes
    per 4 KB, halved for eventually consistent reads."""
    result = CapacityUnits()
    for call in calls:
        if call.service != "dynamodb":
            continue
        table = tables.get(call.request.get("TableName", ""))
        if table is None:
            continue
        if call.operation == "BatchWriteItem":
            continue  # charged per item below
        if call.operation in ("PutItem", "UpdateItem", "DeleteItem"):
            written = call.request.get("Item") or call.request.get("Key") or {}
            final = table.items.get(table.key_of(written))
            if call.operation == "PutItem":
                # The larger of the existing item and the new one: none for a new key, the
                # stored item for a put whose condition failed (a duplicate claim).
                code = str(call.response.get("Error", {}).get("Code", ""))
                if not (code.startswith("ConditionalCheckFailed") and final):
                    final = written
            _charge_write(table, final, result)
        elif call.operation in ("GetItem", "Query", "Scan"):
            returned = call.response.get("Items") or (
                [call.response["Item"]] if call.response.get("Item") else []
            )
            size = sum(item_size(item) for item in returned)
            factor = 1.0 if call.request.get("ConsistentRead") else 0.5
            charged_reads = units(size, 4096) * factor
            result.rru += charged_reads
            result.rru_by_table[table.name] += charged_reads
    for call in calls:
        if call.service == "dynamodb" and call.operation == "BatchWriteItem":
            _charge_batch_write(call, tables, result)
    return result


def _charge_batch_write(call: Call, tables: Mapping[str, Table], result: CapacityUnits) -> None:
    """Each put of a BatchWriteItem is billed as a PutItem of its item (what DynamoDB left
    unprocessed is sent again, and billed, by the retry call)."""
    unprocessed = call.response.get("UnprocessedItems") or {}
    for table_name, requests in (call.request.get("RequestItems") or {}).items():
        table = tables.get(table_name)
        if table is None:
            continue
        left = [r.get("PutRequest", {}).get("Item") for r in unprocessed.get(table_name, [])]
        for request in requests:
            item = request.get("PutRequest", {}).get("Item")
            if item is None:
                continue
            if item in left:
                left.remove(item)
                continue
            _charge_write(table, item, result)


def _charge_write(table: Table, item: Mapping[str, Any] | None, result: CapacityUnits) -> None:
    """One item written: ⌈size / 1 KB⌉ on the table, and again on each index its keys put it
    in (an unknown item, a delete of nothing, is one unit)."""
    size = item_size(item) if item else 1
    result.sizes_by_table[table.name].append(size)
    charged = units(size, 1024)
    for index in table.indexes:
        if item and all(name in item for name in index):
            index_units = units(size + GSI_ITEM_OVERHEAD, 1024)
            charged += index_units
            result.index_writes_by_table[table.name] += 1
            result.index_wru_by_table[table.name] += index_units
    result.wru += charged
    result.wru_by_table[table.name] += charged


# ------------------------------------------------------------------------------ the run


@dataclass
class Measurement:
    events: int
    subscriptions: int
    copies: int
    deliveries: int
    calls: list[Call]
    invocations: list[Invocation]
    capacity: CapacityUnits
    log_bytes: int
    log_lines: int
    # Distinct EMF metrics (namespace, name, dimensions) the functions emitted in the run.
    metrics: set[str]
    # From template.yaml: functions with an SQS event source, alarms, dashboards.
    event_sources: int
    alarms: int
    dashboards: int
    egress_bytes: int
    body_bytes: int
    # New TCP connections the receivers accepted while the measured events were delivered.
    connections: int
    # Seconds from publishing an event to each receiver's first successful POST (wall clock).
    latencies: list[float]
    load: Load
    seconds: float
    analytics: AnalyticsWrites
    # template.yaml's AnalyticsRetentionDays default: how long S3 keeps the rows.
    analytics_retention_days: int
    alerts: AlertsCost | None = None


@dataclass
class AlertsCost:
    """The alerts function's evaluations, measured after the events (a fixed cost)."""

    rules: int
    queries_per_evaluation: int
    evaluations: int
    seconds: list[float]
    calls: list[Call]
    capacity: CapacityUnits


def measure(
    events: int,
    subscriptions: int,
    copies: int,
    warmup: int,
    load: Load | None = None,
    alert_rules: int = 0,
) -> Measurement:
    load = load or Load()
    cache_seconds = f"{load.local(SUBSCRIPTION_CACHE_SECONDS):g}"
    meter = AwsMeter()
    # Before anything makes a client: clients copy their session's hooks when created.
    boto3.setup_default_session()
    assert boto3.DEFAULT_SESSION is not None
    meter.install(boto3.DEFAULT_SESSION.events)
    stack = DevStack(
        DevStackSettings(
            shovel="thread",
            api_port=None,
            capture_stdout=True,
            emit_metrics=True,
            # The template's cache times, not jobhooks dev's short local ones.
            environment={
                "JOBHOOKS_SUBSCRIPTIONS_CACHE_SECONDS": cache_seconds,
                "JOBHOOKS_SUBSCRIPTION_CACHE_SECONDS": cache_seconds,
            },
            batching_windows={
                "IngestFunction": load.local(load.ingest_window),
                "DeliverFunction": load.local(load.deliver_window),
            },
            # Evaluations run when this bench asks, after the events: never among them.
            schedule_intervals={"AlertsFunction": 86_400},
            on_invocation=meter.invocation,
            on_shovel_client=meter.instrument,
            on_progress=lambda line: print(f"... {line}", file=sys.stderr),
        )
    )
    receiver = DemoReceiver(answer_after_seconds=load.receiver_ms / 1000).start()
    try:
        stack.start()
        endpoints = _subscribe(receiver, subscriptions)
        _add_alert_rules(alert_rules)
        key = demo_key()
        print(f"... warming up with {warmup} events", file=sys.stderr)
        _run(stack, receiver, endpoints, key, warmup, 0, 0.0)
        meter.reset()
        assert stack.log_path is not None
        log_mark = stack.log_path.stat().st_size
        lines_mark = _line_count(stack.log_path)
        received_mark = len(receiver.received())
        connections_mark = receiver.connections()
        analytics_mark = set(row_files(stack.analytics_dir))
        print(f"... measuring {events} events", file=sys.stderr)
        started = time.monotonic()
        latencies = _run(stack, receiver, endpoints, key, events, copies, load.publish_interval)
        seconds = time.monotonic() - started
        connections = receiver.connections() - connections_mark
        calls, invocations = meter.snapshot()
        analytics = analytics_writes(stack.analytics_dir, analytics_mark)
        log_bytes = stack.log_path.stat().st_size - log_mark
        log_lines = _line_count(stack.log_path) - lines_mark
        metrics = _emf_metrics(stack.log_path, log_mark)
        loaded = load_template()
        template = loaded["Resources"]
        retention = int(loaded["Parameters"]["AnalyticsRetentionDays"]["Default"])
        resource_types = Counter(resource.get("Type") for resource in template.values())
        posts = receiver.received()[received_mark:]
        functions = list(stack.resources.functions.values()) if stack.resources else []
        tables = read_tables(
            stack.aws_endpoint_url,
            [stack.resources.table_name(t) for t in _TABLES] if stack.resources else [],
        )
        alerts = _measure_evaluations(stack, meter, alert_rules) if alert_rules else None
    finally:
        receiver.stop()
        stack.stop()
    body_bytes = sum(len(post.body) for post in posts)
    header_bytes = sum(
        len(name) + len(value) + 4 for post in posts for name, value in post.headers.items()
    )
    request_lines = sum(len(f"POST /{post.endpoint} HTTP/1.1\r\n") + 2 for post in posts)
    return Measurement(
        events=events,
        subscriptions=subscriptions,
        copies=copies,
        deliveries=len(posts),
        calls=calls,
        invocations=invocations,
        capacity=dynamodb_units(calls, tables),
        log_bytes=log_bytes,
        log_lines=log_lines,
        metrics=metrics,
        event_sources=len([f for f in functions if f.queue]),
        alarms=resource_types["AWS::CloudWatch::Alarm"],
        dashboards=resource_types["AWS::CloudWatch::Dashboard"],
        egress_bytes=body_bytes + header_bytes + request_lines + TLS_OVERHEAD_BYTES * connections,
        body_bytes=body_bytes,
        connections=connections,
        latencies=latencies,
        load=load,
        seconds=seconds,
        analytics=analytics,
        analytics_retention_days=retention,
        alerts=alerts,
    )


ALERT_EVALUATIONS: Final = 5
EVALUATIONS_PER_MONTH: Final = 30 * 24 * 12  # every 5 minutes (template: rate(5 minutes))
# What the alerts function waits for Athena per query on AWS (the local stack's DuckDB answers
# in milliseconds): an assumption, not a measurement; a simple query usually takes 1 to 3 s.
ATHENA_WAIT_SECONDS: Final = 2.0
# Athena writes each result and its metadata to S3 (two PUTs); the GET that reads the result
# back costs a tenth as much and is left out.
S3_REQUESTS_PER_QUERY: Final = 2
ALERTS_MEMORY_GB: Final = 0.25


def _add_alert_rules(count: int) -> None:
    from jobhooks.management.alerts import create_alert_rule
    from jobhooks.management.context import build_management_context
    from jobhooks.management.models import CreateAlertRuleRequest
    from jobhooks.management.settings import ManagementSettings

    context = build_management_context(ManagementSettings.from_env())
    for n in range(count):
        create_alert_rule(
            context,
            CreateAlertRuleRequest(
                tenant_id=TENANT,
                job_name="payments*",
                failure_rate=0.5,
                # A window of its own: one query per rule, the dearest case.
                window_seconds=900 + 60 * n,
            ),
        )


def _measure_evaluations(stack: DevStack, meter: AwsMeter, rules: int) -> AlertsCost:
    meter.reset()
    seconds = []
    for _ in range(ALERT_EVALUATIONS):
        started = time.perf_counter()
        stack.run_scheduled("AlertsFunction")
        seconds.append(time.perf_counter() - started)
    calls, _ = meter.snapshot()
    assert stack.resources is not None
    tables = read_tables(stack.aws_endpoint_url, [stack.resources.table_name("AlertRulesTable")])
    return AlertsCost(
        rules=rules,
        queries_per_evaluation=rules,
        evaluations=ALERT_EVALUATIONS,
        seconds=seconds,
        calls=calls,
        capacity=dynamodb_units(calls, tables),
    )


def alerts_lines(a: AlertsCost) -> list[tuple[str, float, Price, str]]:
    """A month of evaluations: (line, quantity, price, note)."""
    per_month = EVALUATIONS_PER_MONTH / a.evaluations
    measured_seconds = sum(a.seconds) / len(a.seconds)
    seconds = measured_seconds + ATHENA_WAIT_SECONDS * a.queries_per_evaluation
    queries = EVALUATIONS_PER_MONTH * a.queries_per_evaluation
    # The event sources' idle receives are the stack's, not the evaluation's.
    sqs = sum(1 for c in a.calls if c.service == "sqs" and c.operation.startswith("Send"))
    return [
        ("Lambda requests", EVALUATIONS_PER_MONTH, PRICES["lambda_request"], "every 5 minutes"),
        (
            "Lambda GB-s",
            EVALUATIONS_PER_MONTH * seconds * ALERTS_MEMORY_GB,
            PRICES["lambda_gb_s"],
            f"{1000 * measured_seconds:.0f} ms measured + {ATHENA_WAIT_SECONDS:g} s Athena "
            "wait per query (assumed)",
        ),
        (
            "Athena TB scanned",
            queries * ATHENA_MINIMUM_BYTES / 1e12,
            PRICES["athena_tb"],
            f"{a.queries_per_evaluation} queries per run, 10 MB minimum each",
        ),
        ("S3 requests", queries * S3_REQUESTS_PER_QUERY, PRICES["s3_put"], "Athena's results"),
        ("DynamoDB RRU", a.capacity.rru * per_month, PRICES["dynamodb_rru"], "the rules' Scan"),
        (
            "DynamoDB WRU",
            a.capacity.wru * per_month,
            PRICES["dynamodb_wru"],
            "state changes: the first run's, extrapolated (an upper bound)",
        ),
        ("SQS requests", sqs * per_month, PRICES["sqs_request"], "notifications enqueued"),
    ]


_TABLES: Final = (
    "AlertRulesTable",
    "ClaimsTable",
    "SubscriptionsTable",
    "DeliveriesTable",
    "FirstAttemptsTable",
    "QuarantineTable",
)


def _subscribe(receiver: DemoReceiver, count: int) -> list[str]:
    from jobhooks.management.context import build_management_context
    from jobhooks.management.models import CreateSubscriptionRequest
    from jobhooks.management.settings import ManagementSettings
    from jobhooks.management.subscriptions import create_subscription

    context = build_management_context(ManagementSettings.from_env())
    endpoints = []
    for n in range(count):
        endpoint = f"subscriber-{n}"
        url = receiver.add_endpoint(endpoint)
        created = create_subscription(context, CreateSubscriptionRequest(tenant_id=TENANT, url=url))
        receiver.trust(endpoint, created.secret)
        endpoints.append(endpoint)
    return endpoints


def _run(
    stack: DevStack,
    receiver: DemoReceiver,
    endpoints: list[str],
    key: Any,
    events: int,
    copies: int,
    interval: float,
) -> list[float]:
    """Publishes `events` (one every `interval` seconds, or as a burst when 0) and waits for
    every delivery; returns each delivery's seconds from publishing to the receiver."""
    traffic = list(
        sample_traffic(key, count=events, tenants=(TENANT,), copies=(Copy.REPAIRER,) * copies)
    )
    expected = {webhook_id_for(p.event_id) for p in traffic}
    originals = [p for p in traffic if p.kind == "original"]
    # Copies come after their events were delivered, as the repairer's do (every 30 s): a copy
    # racing its original's claim would wait out the ingest queue's visibility timeout.
    later_copies = [p for p in traffic if p.kind != "original"]
    published: dict[str, float] = {}
    with SamplePublisher(stack.amqp_url) as publisher:
        start = time.monotonic()
        for n, publication in enumerate(originals):
            time.sleep(max(0.0, start + n * interval - time.monotonic()))
            published[webhook_id_for(publication.event_id)] = time.time()
            publisher.publish_sample(publication)

    def complete(receiver: DemoReceiver) -> bool:
        return all(
            expected <= {w.webhook_id for w in receiver.received(e) if w.answered < 300}
            for e in endpoints
        )

    receiver.wait_for(complete, timeout=300, what="every delivery")
    if later_copies:
        stack.wait_until_idle(timeout=120, settle=0.5)
        with SamplePublisher(stack.amqp_url) as publisher:
            for publication in later_copies:
                publisher.publish_sample(publication)
    stack.wait_until_idle(timeout=120, settle=1.0)
    latencies: list[float] = []
    for endpoint in endpoints:
        first: dict[str, float] = {}
        for webhook in receiver.received(endpoint):
            if webhook.answered < 300 and webhook.webhook_id in published:
                first.setdefault(webhook.webhook_id, webhook.received_at)
        latencies.extend(at - published[webhook_id] for webhook_id, at in first.items())
    return latencies


def _emf_metrics(path: Any, offset: int) -> set[str]:
    """Every distinct metric of the EMF lines written after `offset`."""
    found: set[str] = set()
    with open(path, "rb") as handle:
        handle.seek(offset)
        for raw in handle:
            try:
                document = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(document, dict) or "_aws" not in document:
                continue
            for directive in document["_aws"].get("CloudWatchMetrics", []):
                for dimensions in directive.get("Dimensions", []):
                    labels = ",".join(f"{d}={document.get(d)}" for d in dimensions)
                    for metric in directive.get("Metrics", []):
                        found.add(f"{directive['Namespace']}/{metric['Name']}[{labels}]")
    return found


@dataclass(frozen=True)
class AnalyticsWrites:
    """What the Firehose sink would have sent for the rows the local sink wrote."""

    writes: int  # put_rows calls: one per accepted event (the ingest use case writes its row)
    rows: int
    json_bytes: int  # the rows as newline-separated JSON, what Firehose converts to Parquet
    records: int
    billed_bytes: int  # each record rounded up to 5 KB
    calls: int  # PutRecordBatch
    # The same rows as Snappy Parquet (what S3 keeps), in files of one Firehose flush each.
    parquet_bytes: int = 0


def analytics_writes(data_dir: Path, before: set[Path]) -> AnalyticsWrites:
    """Each row file written after `before` is one `put_rows` call (`LocalFileSink`); its rows
    go through the Firehose sink's own packing (`pack_records`, `request_batches`)."""
    writes = rows = json_bytes = records = billed = calls = 0
    lines: list[str] = []
    for path in row_files(data_dir):
        if path in before:
            continue
        lines.extend(path.read_text().splitlines())
        written = [AnalyticsRow.model_validate_json(line) for line in path.read_text().splitlines()]
        packed = pack_records(written)
        writes += 1
        rows += len(written)
        json_bytes += sum(len(record.data) for record in packed)
        records += len(packed)
        unit = FIREHOSE_RECORD_UNIT
        billed += sum(unit * units(len(record.data), unit) for record in packed)
        calls += len(request_batches(packed))
    return AnalyticsWrites(
        writes, rows, json_bytes, records, billed, calls, parquet_bytes(lines, ROWS_PER_FLUSH)
    )


def parquet_bytes(lines: list[str], rows_per_file: int) -> int:
    """The rows written as Snappy Parquet by DuckDB, `rows_per_file` a file: an estimate of what
    Firehose's conversion stores (its column types come from the Glue table, DuckDB's from the
    JSON; both Snappy-compressed, one file per flush)."""
    import tempfile

    import duckdb

    total = 0
    connection = duckdb.connect()
    with tempfile.TemporaryDirectory() as folder:
        for start in range(0, len(lines), rows_per_file):
            source = Path(folder) / f"rows-{start}.jsonl"
            target = Path(folder) / f"rows-{start}.parquet"
            source.write_text("\n".join(lines[start : start + rows_per_file]) + "\n")
            connection.execute(
                f"COPY (SELECT * FROM read_json_auto('{source}')) TO '{target}' "
                "(FORMAT parquet, COMPRESSION snappy)"
            )
            total += target.stat().st_size
    connection.close()
    return total


def _line_count(path: Any) -> int:
    with open(path, "rb") as handle:
        return sum(1 for _ in handle)


# ------------------------------------------------------------------------------ the model


@dataclass(frozen=True)
class Line:
    name: str
    quantity: float  # per million events
    unit: str
    price: Price

    @property
    def usd(self) -> float:
        return self.quantity * self.price.usd


def receiver_wait_usd(m: Measurement) -> float:
    """Per million events, the duration the POSTing functions spend waiting for receivers
    that answer in `--receiver-ms`: every ingest and deliver invocation of the run POSTed at
    least once, and its POSTs run concurrently, so each waits about that long once."""
    posting = [i for i in m.invocations if i.function in POSTING_FUNCTIONS]
    gb_seconds = sum(m.load.receiver_ms / 1000 * i.memory_mb / 1024 for i in posting)
    return gb_seconds * PRICES["lambda_gb_s"].usd * MILLION / m.events


def cost_lines(m: Measurement) -> list[Line]:
    per_million = MILLION / m.events
    sqs_units = sum(
        max(1, math.ceil(max(c.request_bytes, c.response_bytes) / SQS_CHUNK))
        for c in m.calls
        if c.service == "sqs" and not _idle_receive(c)
    )
    gb_seconds = sum(math.ceil(i.seconds * 1000) / 1000 * i.memory_mb / 1024 for i in m.invocations)
    log_bytes = m.log_bytes + LAMBDA_PLATFORM_LOG_BYTES * len(m.invocations)
    kms = sum(1 for c in m.calls if c.service == "kms")
    secrets = sum(1 for c in m.calls if c.service == "secretsmanager")
    rows = [
        ("SQS requests (64 KiB units)", sqs_units, "requests", "sqs_request"),
        ("Lambda requests", len(m.invocations), "invocations", "lambda_request"),
        ("Lambda duration", gb_seconds, "GB-s", "lambda_gb_s"),
        ("DynamoDB writes", m.capacity.wru, "WRU", "dynamodb_wru"),
        ("DynamoDB reads", m.capacity.rru, "RRU", "dynamodb_rru"),
        ("KMS requests", kms, "requests", "kms_request"),
        ("Secrets Manager calls", secrets, "calls", "secrets_request"),
        ("API Gateway (management only)", 0, "requests", "api_gateway_request"),
        ("CloudWatch Logs ingestion", log_bytes / 1e9, "GB", "logs_gb"),
        ("Data transfer out (POSTs)", m.egress_bytes / 1e9, "GB", "egress_gb"),
        # The analytics rows: Firehose bills what it ingests per 5 KB record and converts the
        # same volume to Parquet (billed on the ingested volume: an assumption to check); S3
        # keeps the rows their retention (their Snappy Parquet size, measured with DuckDB in
        # files of one flush at 1M events a month).
        ("Firehose ingestion (analytics)", m.analytics.billed_bytes / 1e9, "GB", "firehose_gb"),
        (
            "Firehose Parquet conversion",
            m.analytics.billed_bytes / 1e9,
            "GB",
            "firehose_conversion_gb",
        ),
        (
            "S3 storage of the rows",
            m.analytics.parquet_bytes / 1e9 * m.analytics_retention_days / 30,
            "GB-month",
            "s3_gb_month",
        ),
    ]
    return [
        Line(name, quantity * per_million, unit, PRICES[price])
        for name, quantity, unit, price in rows
    ]


# Lambda keeps 2 to 5 pollers per SQS event source while a queue is idle, each long-polling
# (20 s) about 3 times a minute (aws-facts section 2); 30 days a month.
IDLE_POLLERS: Final = (2, 5)
IDLE_RECEIVES_PER_POLLER_MONTH: Final = 3 * 60 * 24 * 30


def fixed_lines(m: Measurement) -> list[tuple[str, float, Price, str]]:
    low, high = (n * m.event_sources * IDLE_RECEIVES_PER_POLLER_MONTH for n in IDLE_POLLERS)
    return [
        (
            "idle long polling (up to)",
            high,
            PRICES["sqs_request"],
            f"{m.event_sources} event sources x 2-5 pollers; at least {low:,} requests",
        ),
        ("KMS key (subscription secrets)", 1, PRICES["kms_key_month"], "one key"),
        ("Fetcher keys secret", 1, PRICES["secret_month"], "when the stack creates it"),
        (
            "custom metrics (EMF)",
            len(m.metrics),
            PRICES["metric_month"],
            "distinct metrics seen in this run; each rejection reason adds one",
        ),
        (
            "S3 PUTs of analytics (up to)",
            FIREHOSE_FLUSHES_PER_MONTH,
            PRICES["s3_put"],
            "one object per Firehose flush (300 s) while events flow",
        ),
        ("alarms", m.alarms, PRICES["alarm_month"], "in template.yaml"),
        ("dashboard", m.dashboards, PRICES["dashboard_month"], "free if among the first 3"),
    ]


def provisioned_capacity(
    m: Measurement, events_per_month: int = MILLION
) -> tuple[float, list[tuple[str, str, float, int, float]]]:
    """The event tables at a steady `events_per_month`: their on-demand price, and per table
    and index the average units per second, the units auto scaling would hold at its target
    utilization (at least 1) and their monthly price."""
    per_event = events_per_month / MILLION / m.events
    seconds = HOURS_PER_MONTH * 3600
    rows: list[tuple[str, str, float, int, float]] = []
    on_demand = 0.0
    for logical_id in PROVISIONED_TABLES:
        table = next(
            (name for name in m.capacity.wru_by_table if name.endswith(logical_id)),
            None,
        ) or next((name for name in m.capacity.rru_by_table if name.endswith(logical_id)), "")
        wru = m.capacity.wru_by_table[table] * per_event * MILLION
        index_wru = m.capacity.index_wru_by_table[table] * per_event * MILLION
        rru = m.capacity.rru_by_table[table] * per_event * MILLION
        on_demand += wru * PRICES["dynamodb_wru"].usd + rru * PRICES["dynamodb_rru"].usd
        parts = [
            (logical_id, "writes", wru - index_wru, "dynamodb_wcu_hour"),
            (logical_id, "reads", rru, "dynamodb_rcu_hour"),
        ]
        if logical_id in PROVISIONED_INDEXED:
            parts += [
                (f"{logical_id} index", "writes", index_wru, "dynamodb_wcu_hour"),
                (f"{logical_id} index", "reads", 0.0, "dynamodb_rcu_hour"),
            ]
        for part, kind, requests, price in parts:
            rate = requests / seconds
            units_ = max(1, math.ceil(rate / PROVISIONED_TARGET_UTILIZATION))
            rows.append((part, kind, rate, units_, units_ * HOURS_PER_MONTH * PRICES[price].usd))
    return on_demand, rows


def _idle_receive(call: Call) -> bool:
    return call.operation == "ReceiveMessage" and not call.response.get("Messages")


def latency_summary(latencies: list[float], time_scale: float) -> str:
    """Publish-to-receiver latency as measured (wall clock), and multiplied by the time scale."""
    if not latencies:
        return "latency: no delivery measured"
    ordered = sorted(latencies)

    def at(share: float) -> float:
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))]

    figures = (sum(ordered) / len(ordered), at(0.5), at(0.95), ordered[-1])
    text = (
        "latency publish -> receiver, mean / p50 / p95 / max: "
        + " / ".join(f"{f:.2f}" for f in figures)
        + " s"
    )
    if time_scale != 1:
        text += (
            f" (x {time_scale:g}: "
            + " / ".join(f"{f * time_scale:.1f}" for f in figures)
            + " s, which also multiplies the emulator's processing time)"
        )
    return text


def report(m: Measurement) -> str:
    out: list[str] = []
    say = out.append
    per_event = 1 / m.events
    say(
        f"jobhooks cost model: {m.events} events ({m.copies} repairer copies each), "
        f"{m.subscriptions} subscriptions per event, {m.deliveries} deliveries, "
        f"measured on the local stack in {m.seconds:.1f} s"
    )
    say(m.load.describe())
    say("")
    say("AWS requests per event (measured)")
    say(f"  {'service':<15}{'operation':<28}{'calls':>7}{'per event':>11}")
    counts = Counter((c.service, c.operation) for c in m.calls if not _idle_receive(c))
    for (service, operation), count in sorted(counts.items()):
        say(f"  {service:<15}{operation:<28}{count:>7}{count * per_event:>11.3f}")
    idle = sum(1 for c in m.calls if _idle_receive(c))
    say(f"  (and {idle} empty receives: idle polling, a fixed cost, left out of the lines below)")
    messages = sum(
        len(c.request.get("Entries", [])) for c in m.calls if c.operation == "SendMessageBatch"
    )
    say(f"  SendMessageBatch entries per event: {messages * per_event:.2f}")
    durations: dict[str, list[float]] = defaultdict(list)
    records: Counter[str] = Counter()
    for invocation in m.invocations:
        durations[invocation.function].append(invocation.seconds)
        records[invocation.function] += invocation.records
    for function, seconds in sorted(durations.items()):
        say(
            f"  {function}: {len(seconds) * per_event:.3f} invocations per event, "
            f"{records[function] / len(seconds):.1f} records and "
            f"{1000 * sum(seconds) / len(seconds):.0f} ms per invocation (on moto)"
        )
    by_table = ", ".join(
        f"{table.split('-', 1)[-1]} {wru * per_event:.2f}"
        for table, wru in m.capacity.wru_by_table.items()
    )
    say(
        f"  DynamoDB: {m.capacity.wru * per_event:.2f} WRU per event ({by_table}), "
        f"{m.capacity.rru * per_event:.2f} RRU per event"
    )
    for table, sizes in sorted(m.capacity.sizes_by_table.items()):
        index_writes = m.capacity.index_writes_by_table[table] / len(sizes)
        say(
            f"    {table.split('-', 1)[-1]}: {len(sizes) * per_event:.2f} writes per event of "
            f"items averaging {sum(sizes) / len(sizes):.0f} B (max {max(sizes)} B), each also "
            f"written to {index_writes:.1f} index(es) on average"
        )
    latencies = [c.seconds for c in m.calls if not _idle_receive(c)]
    say(
        f"  mean AWS call latency on the emulator: {1000 * sum(latencies) / len(latencies):.1f} ms "
        "(in-region DynamoDB and SQS answer in a few ms: the Lambda duration line is an upper "
        "bound)"
    )
    say(
        f"  logs: {m.log_bytes * per_event:.0f} B per event from the functions "
        f"({m.log_lines * per_event:.2f} lines) + {LAMBDA_PLATFORM_LOG_BYTES} B of START/END/"
        f"REPORT per invocation"
    )
    say(
        f"  egress: {m.egress_bytes / max(1, m.deliveries):.0f} B per POST "
        f"({m.body_bytes / max(1, m.deliveries):.0f} B body, headers, {TLS_OVERHEAD_BYTES} B TLS "
        f"per new connection: {m.connections} connections for {m.deliveries} POSTs, "
        f"{m.connections / max(1, m.deliveries):.2f} per POST)"
    )
    say("  " + latency_summary(m.latencies, m.load.time_scale))
    written = m.analytics
    say(
        f"  analytics: {written.rows * per_event:.2f} rows and {written.writes * per_event:.2f} "
        f"writes per event; on AWS {written.records * per_event:.2f} Firehose records of "
        f"{written.json_bytes / max(1, written.records):.0f} B (billed "
        f"{written.billed_bytes / max(1, written.records):.0f} B each) in "
        f"{written.calls * per_event:.2f} PutRecordBatch calls per event; stored as "
        f"{written.parquet_bytes / max(1, written.rows):.0f} B of Snappy Parquet per row (DuckDB, "
        f"files of {ROWS_PER_FLUSH} rows: one Firehose flush at 1M events a month)"
    )
    say("")
    say("Monthly cost per million events (us-east-1, arm64, on demand, no free tier)")
    say(f"  {'line':<32}{'quantity':>14}  {'unit':<12}{'unit price':>14}{'$/1M events':>13}")
    lines = cost_lines(m)
    for line in lines:
        say(
            f"  {line.name:<32}{line.quantity:>14,.1f}  {line.unit:<12}"
            f"{line.price.usd:>14.3g}{line.usd:>13.3f}"
        )
    total = sum(line.usd for line in lines)
    say(f"  {'total':<32}{'':>14}  {'':<12}{'':>14}{total:>13.3f}")
    # The handlers mostly wait for AWS: scale their duration to in-region call latencies. The
    # wait for the receivers (--receiver-ms) is the same in a region, so it is not scaled.
    duration = next(line for line in lines if line.name == "Lambda duration")
    scale = min(1.0, IN_REGION_CALL_SECONDS / (sum(latencies) / len(latencies)))
    receiver_wait = min(duration.usd, receiver_wait_usd(m))
    scaled_total = total - (duration.usd - receiver_wait) * (1 - scale)
    say(
        f"  {'total, Lambda duration scaled':<32}{'':>14}  {'':<12}{'':>14}"
        f"{scaled_total:>13.3f}  (calls at {1000 * IN_REGION_CALL_SECONDS:.0f} ms instead of "
        f"the emulator's; receivers answering in {m.load.receiver_ms} ms: "
        f"${receiver_wait:.3f} of waiting, not scaled)"
    )
    dominant = sorted(lines, key=lambda line: line.usd, reverse=True)[:3]
    say(
        "  largest lines: "
        + ", ".join(f"{line.name} {100 * line.usd / total:.0f} %" for line in dominant)
    )
    say("")
    if m.alerts is not None:
        a = m.alerts
        say(
            f"Job-health alerts: {a.rules} rules, {a.evaluations} evaluations measured "
            f"(nothing is added per event: the lines above are the events' own)"
        )
        requests = Counter((c.service, c.operation) for c in a.calls)
        say(
            "  requests per evaluation: "
            + ", ".join(
                f"{service} {operation} {count / a.evaluations:g}"
                for (service, operation), count in sorted(requests.items())
            )
        )
        alert_lines = alerts_lines(a)
        for name, quantity, price, note in alert_lines:
            say(
                f"  {name:<24}{quantity:>16,.2f}  {price.per:<16}"
                f"{quantity * price.usd:>9.4f}  {note}"
            )
        month = sum(q * p.usd for _, q, p, _ in alert_lines)
        say(
            f"  {'a month of evaluations':<24}{'':>16}  {'':<16}{month:>9.4f}  "
            f"${month / a.rules:.3f} per rule and month (each rule its own query)"
        )
        say("")
    say("Fixed monthly cost, whatever the volume")
    fixed = fixed_lines(m)
    for name, quantity, price, note in fixed:
        say(f"  {name:<32}{quantity:>14,.0f}  {price.per:<16}{quantity * price.usd:>9.2f}  {note}")
    say(f"  {'total':<32}{'':>14}  {'':<16}{sum(q * p.usd for _, q, p, _ in fixed):>9.2f}")
    say("")
    on_demand_tables, provisioned = provisioned_capacity(m)
    say(
        "DynamoDB capacity mode for a steady 1M events a month (TableCapacityMode, "
        "claims, deliveries and first-attempts tables)"
    )
    say(f"  {'table or index':<34}{'units/s':>9}{'provisioned':>13}{'$/month':>10}")
    for name, kind, rate, units_, usd in provisioned:
        say(f"  {name + ' ' + kind:<34}{rate:>9.2f}{units_:>13}{usd:>10.2f}")
    provisioned_usd = sum(row[4] for row in provisioned)
    say(
        f"  on demand, the same requests: ${on_demand_tables:.2f}; provisioned with auto "
        f"scaling at {100 * PROVISIONED_TARGET_UTILIZATION:.0f} % (at least 1 unit each): "
        f"${provisioned_usd:.2f}"
    )
    with_provisioned = total - on_demand_tables + provisioned_usd
    say(
        f"  {'total for 1M events/month, provisioned':<40}${with_provisioned:>9.2f}"
        "  (steady load: a burst above the provisioned rate is throttled until scaling follows)"
    )
    ten_on_demand, ten_rows = provisioned_capacity(m, 10 * MILLION)
    ten_provisioned = sum(row[4] for row in ten_rows)
    say(
        f"  at a steady 10M events a month: on demand ${ten_on_demand / 10:.2f}, provisioned "
        f"${ten_provisioned / 10:.2f} per million events for these tables"
    )
    say("")
    deliveries = m.subscriptions
    eventbridge = (
        PRICES["eventbridge_event"].usd * MILLION
        + deliveries * PRICES["api_destination"].usd * MILLION
    )
    fixed_total = sum(quantity * price.usd for _, quantity, price, _ in fixed)
    say(f"Per million events with {deliveries} deliveries each, compared")
    say(f"  {'jobhooks (this measurement)':<40}${total:>9.2f}")
    say(
        f"  {'jobhooks, 1M events/month + fixed':<40}${total + fixed_total:>9.2f}  "
        "(to compare with monthly plans)"
    )
    say(
        f"  {'EventBridge API destinations':<40}${eventbridge:>9.2f}  "
        f"($1.00 per million events + {deliveries} x $0.20 per million deliveries; no "
        "per-payload HMAC, no dedup)"
    )
    for name, monthly, note in HOSTED_SERVICES:
        say(f"  {name + ', 1M events/month':<40}${monthly:>9.2f}  list price: {note}")
    say("")
    month_of_rows = m.analytics.json_bytes / m.events * MILLION
    scanned = max(ATHENA_MINIMUM_BYTES, month_of_rows)
    say("Per analytics question asked (Athena, whatever the volume of webhooks)")
    say(
        f"  the 10 MB minimum: ${ATHENA_MINIMUM_BYTES / 1e12 * PRICES['athena_tb'].usd:.5f}; a "
        f"window of a million events' rows reads at most their {month_of_rows / 1e6:,.0f} MB "
        f"(JSON size, an upper bound of the Parquet columns read): "
        f"${scanned / 1e12 * PRICES['athena_tb'].usd:.4f}"
    )
    say("")
    say("Prices: us-east-1 list prices from stored copies of public pages (see PRICES in this")
    say("script for each source); hosted services as a third-party comparison reported them.")
    say("Re-check all of them before quoting.")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--subscriptions", type=int, default=2)
    parser.add_argument(
        "--copies", type=int, default=0, help="repairer re-emissions per event (deduplicated)"
    )
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument(
        "--rate",
        type=float,
        help="publish at this many events per second (a steady load); default: one burst",
    )
    parser.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="with --rate: run this many times faster, the batching windows and cache times "
        "divided by it (rate x window, the records a batch gathers, is unchanged)",
    )
    parser.add_argument(
        "--ingest-window",
        type=int,
        default=0,
        help="IngestBatchingWindowSeconds as deployed (whole seconds, 0-300; default 0)",
    )
    parser.add_argument(
        "--deliver-window",
        type=int,
        default=0,
        help="DeliverBatchingWindowSeconds as deployed (whole seconds, 0-300; default 0)",
    )
    parser.add_argument(
        "--alert-rules",
        type=int,
        default=0,
        help="job-health alert rules for the tenant (alerts on); their evaluations are priced "
        "as a fixed monthly cost per rule (default 0)",
    )
    parser.add_argument(
        "--receiver-ms",
        type=int,
        default=0,
        help="the receivers answer each POST after this many milliseconds (default 0: at once, "
        "on loopback); the functions' wait for them is priced unscaled",
    )
    args = parser.parse_args(argv)
    if not 0 <= args.receiver_ms <= 15_000:
        parser.error("--receiver-ms is 0 to 15000 (the POST timeout)")
    if args.rate is not None and args.rate <= 0:
        parser.error("--rate must be positive")
    if args.time_scale <= 0 or (args.time_scale != 1 and args.rate is None):
        parser.error("--time-scale must be positive and needs --rate (a burst has no time)")
    for window in (args.ingest_window, args.deliver_window):
        if not 0 <= window <= MAX_BATCHING_WINDOW_SECONDS:
            parser.error(f"a batching window is 0 to {MAX_BATCHING_WINDOW_SECONDS} seconds")
    load = Load(
        args.rate, args.time_scale, args.ingest_window, args.deliver_window, args.receiver_ms
    )
    measurement = measure(
        args.events, args.subscriptions, args.copies, args.warmup, load, args.alert_rules
    )
    print(report(measurement))
    return 0


if __name__ == "__main__":
    sys.exit(main())
