"""The ingest function against moto's server, driven by the local SQS event source.

Every test runs `functions/ingest/app.py` unchanged through `SqsEventSource`, on the queues,
tables and keys secret that `stack` provisions from template.yaml. AWS is never mocked; errors
are injected into the handler's own boto3 clients through botocore's `before-call` event
(`Faults`), which is where a throttled or failing call surfaces in production.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError
from jobhooks.delivery_task import DeliveryTask, delivery_id_for
from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message
from jobhooks.inbound.keys import HmacKey
from jobhooks.inbound.outcome import webhook_payload
from jobhooks.inbound.rejection import Reason
from jobhooks.ingest.claim_retention import DELIVERY_RETENTION_SECONDS
from jobhooks.ingest.claims import ClaimStore
from jobhooks.ingest.fetcher_keys import DEFAULT_REFRESH_INTERVAL_SECONDS
from jobhooks.ingest.model import Duplicate, FanOutPlan, TakeOver
from jobhooks.ingest.settings import IngestSettings
from jobhooks.ingest.wiring import ingest_service
from jobhooks.management.context import get_management_context
from jobhooks.management.dlq import redrive_dlq
from jobhooks.management.models import DeadLetterQueue, RedriveRequest
from jobhooks.management.settings import ManagementSettings, RedriveMethod
from jobhooks.subscriptions import Subscription
from jobhooks.subscriptions.store import SubscriptionStore
from jobhooks_tools.local.event_source import BatchStats, SqsEventSource
from jobhooks_tools.local.moto_server import local_aws_environment
from jobhooks_tools.local.template import LocalResources, load_template, provision
from jobhooks_tools.sample_events import SOURCE, SampleEvent, demo_key, make_job_event, re_emit

from tests.fixtures.stack import ProvisionedStacks

APP = Path(__file__).resolve().parents[2] / "functions" / "ingest" / "app.py"
NEW_KEY = HmacKey(bytes.fromhex("11" * 32))
UNKNOWN_KEY = HmacKey(bytes.fromhex("22" * 32))


# -------------------------------------------------------------------------- harness


class SimulatedCrash(BaseException):
    """The process dies here: nothing after it runs, not even `except Exception` blocks."""


@dataclass
class _Rule:
    operation: str
    target: str | None
    times: int
    action: Callable[[], Any]
    hits: int = 0
    when: Callable[[dict[str, Any]], bool] | None = None


@dataclass
class Faults:
    """Injects errors into the clients of the handler (boto3's default session)."""

    calls: Counter[str] = field(default_factory=Counter)
    _rules: list[_Rule] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(
        self,
        operation: str,
        *,
        target: str | None = None,
        times: int = 1,
        code: str = "InternalServerError",
        when: Callable[[dict[str, Any]], bool] | None = None,
    ) -> _Rule:
        def raise_client_error() -> Any:
            raise ClientError({"Error": {"Code": code, "Message": "injected"}}, operation)

        return self.on(operation, raise_client_error, target=target, times=times, when=when)

    def crash(
        self,
        operation: str,
        *,
        target: str | None = None,
        when: Callable[[dict[str, Any]], bool] | None = None,
    ) -> _Rule:
        def crash() -> Any:
            raise SimulatedCrash(operation)

        return self.on(operation, crash, target=target, times=1, when=when)

    def on(
        self,
        operation: str,
        action: Callable[[], Any],
        *,
        target: str | None,
        times: int,
        when: Callable[[dict[str, Any]], bool] | None = None,
    ) -> _Rule:
        rule = _Rule(operation, target, times, action, when=when)
        with self._lock:
            self._rules.append(rule)
        return rule

    def before_call(self, model: Any, params: dict[str, Any], **_: Any) -> Any:
        body = json.loads(params.get("body") or b"{}")
        target = body.get("TableName") or body.get("QueueUrl")
        with self._lock:
            self.calls[model.name] += 1
            rule = next(
                (
                    rule
                    for rule in self._rules
                    if rule.operation == model.name
                    and rule.target in (None, target)
                    and (rule.when is None or rule.when(body))
                    and rule.hits < rule.times
                ),
                None,
            )
            if rule is not None:
                rule.hits += 1
        return rule.action() if rule is not None else None


@dataclass
class Bridge:
    stack: LocalResources
    app: ModuleType
    faults: Faults
    session: boto3.session.Session
    subscriptions: SubscriptionStore
    monkeypatch: pytest.MonkeyPatch

    def __post_init__(self) -> None:
        self.sqs = self.session.client("sqs")
        self.dynamodb = self.session.client("dynamodb")
        self.ingest_queue = self.stack.queue_url("IngestQueue")
        self.delivery_queue = self.stack.queue_url("DeliveryQueue")
        self.claims_table = self.stack.table_name("ClaimsTable")
        self.quarantine_table = self.stack.table_name("QuarantineTable")

    def send(self, *messages: SampleEvent | str) -> list[str]:
        bodies = [m if isinstance(m, str) else m.forwarded().to_json() for m in messages]
        ids: list[str] = []
        for start in range(0, len(bodies), 10):
            entries = [
                {"Id": str(n), "MessageBody": body}
                for n, body in enumerate(bodies[start : start + 10])
            ]
            response = self.sqs.send_message_batch(QueueUrl=self.ingest_queue, Entries=entries)
            assert not response.get("Failed")
            ordered = sorted(response["Successful"], key=lambda entry: int(entry["Id"]))
            ids.extend(entry["MessageId"] for entry in ordered)
        return ids

    def poller(self, **options: Any) -> SqsEventSource:
        options.setdefault("wait_time_seconds", 0)
        options.setdefault("function_timeout_seconds", 10)
        return SqsEventSource(
            self.ingest_queue,
            self.app.handler,
            sqs_client=self.sqs,
            strict_responses=True,
            **options,
        )

    def run(self, max_seconds: float = 20, **options: Any) -> BatchStats:
        """Process until the ingest queue is empty, retries included."""
        return self.poller(**options).run_until_idle(max_seconds, include_in_flight=True)

    def retry_quickly(self, *, lease_seconds: float = 0.5, visibility_seconds: int = 1) -> None:
        """Short leases and visibility, so that retries happen within a test."""
        self.sqs.set_queue_attributes(
            QueueUrl=self.ingest_queue, Attributes={"VisibilityTimeout": str(visibility_seconds)}
        )
        self.monkeypatch.setenv("JOBHOOKS_CLAIM_LEASE_MAX_SECONDS", str(lease_seconds))
        ingest_service.cache_clear()

    def take_deliveries(self) -> list[DeliveryTask]:
        """Every task on the delivery queue, removed from it."""
        tasks: list[DeliveryTask] = []
        while True:
            response = self.sqs.receive_message(
                QueueUrl=self.delivery_queue, MaxNumberOfMessages=10, WaitTimeSeconds=0
            )
            messages = response.get("Messages", [])
            if not messages:
                return tasks
            tasks.extend(DeliveryTask.from_json(message["Body"]) for message in messages)
            self.sqs.delete_message_batch(
                QueueUrl=self.delivery_queue,
                Entries=[
                    {"Id": str(n), "ReceiptHandle": message["ReceiptHandle"]}
                    for n, message in enumerate(messages)
                ],
            )

    def quarantined(self) -> list[dict[str, Any]]:
        items = self.dynamodb.scan(TableName=self.quarantine_table)["Items"]
        return [
            {name: next(iter(value.values())) for name, value in item.items()} for item in items
        ]

    def claim_item(self, event_id: str) -> dict[str, Any] | None:
        item = self.dynamodb.get_item(
            TableName=self.claims_table, Key={"event_id": {"S": event_id}}, ConsistentRead=True
        ).get("Item")
        if item is None:
            return None
        return {name: next(iter(value.values())) for name, value in item.items()}

    def claim_state(self, event_id: str) -> str | None:
        """The claim's state as the store reads it (done once its completion record lists it)."""
        record = self.claims().get(event_id)
        return None if record is None else record.state.value

    def claims(self) -> ClaimStore:
        return ClaimStore(self.claims_table, self.dynamodb, retention_seconds=7 * 86400)

    def subscribe(
        self, tenant_id: str, event_types: tuple[str, ...] = ("job.completed", "job.failed")
    ) -> Subscription:
        return self.subscriptions.create(
            tenant_id, f"https://{tenant_id}.example.com/hooks", event_types
        ).subscription

    def configure(self, **variables: str) -> None:
        """Set the handler's environment, as a stack parameter would, for the next invocation."""
        for name, value in variables.items():
            self.monkeypatch.setenv(name, value)
        ingest_service.cache_clear()

    def put_placeholder_keys(self) -> None:
        """The secret as template.yaml creates it, before docs/deploy.md step 3."""
        placeholder = load_template()["Resources"]["FetcherKeysSecret"]["Properties"]
        boto3.session.Session().client("secretsmanager").put_secret_value(
            SecretId=self.stack.refs["FetcherKeysSecret"],
            SecretString=placeholder["SecretString"],
        )

    def queue_depth(self, queue_url: str) -> int:
        """Visible plus in-flight messages."""
        attributes = self.sqs.get_queue_attributes(
            QueueUrl=queue_url,
            AttributeNames=[
                "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
            ],
        )["Attributes"]  # fmt: skip
        return int(attributes["ApproximateNumberOfMessages"]) + int(
            attributes["ApproximateNumberOfMessagesNotVisible"]
        )

    def peek(self, queue_url: str) -> list[dict[str, Any]]:
        """The queue's visible messages, handed straight back."""
        messages = self.sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
        ).get("Messages", [])
        for message in messages:
            self.sqs.change_message_visibility(
                QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
        return list(messages)

    def put_fetcher_keys(self, *keys: HmacKey) -> None:
        boto3.session.Session().client("secretsmanager").put_secret_value(
            SecretId=self.stack.refs["FetcherKeysSecret"],
            SecretString=",".join(key.hex for key in keys),
        )


@functools.cache
def ingest_app() -> ModuleType:
    """functions/ingest/app.py, imported once with the Powertools settings template.yaml sets."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        # Logger and Metrics read them when the module is imported.
        monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "jobhooks-test")
        monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "jobhooks")
        spec = importlib.util.spec_from_file_location("jobhooks_ingest_app", APP)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


# The stack these modules test ingest on: template.yaml's defaults and the demo key.
INGEST_STACK = "ingest"


def fresh_ingest_stack(stacks: ProvisionedStacks) -> LocalResources:
    """template.yaml's resources as a fresh provision leaves them (tests/fixtures/stack.py)."""
    return stacks.fresh(
        INGEST_STACK,
        lambda: provision(fetcher_keys=[demo_key().hex], endpoint_url=stacks.server.endpoint_url),
    )


@contextmanager
def provisioned_stack(stacks: ProvisionedStacks) -> Iterator[LocalResources]:
    """template.yaml's resources, for a test module; each test starts from them as they were
    provisioned (`open_bridge`)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name, value in local_aws_environment(stacks.server.endpoint_url).items():
            monkeypatch.setenv(name, value)
        yield fresh_ingest_stack(stacks)


@contextmanager
def open_bridge(
    stack: LocalResources,
    stacks: ProvisionedStacks,
    monkeypatch: pytest.MonkeyPatch,
    *,
    fresh: Callable[[ProvisionedStacks], LocalResources] = fresh_ingest_stack,
) -> Iterator[Bridge]:
    """An empty stack, its environment, and the handler on fresh clients with fault hooks.
    `fresh`: puts the stack back as provisioned (another stack than this module's, e.g. one
    with other template parameters)."""
    for name, value in local_aws_environment(stacks.server.endpoint_url).items():
        monkeypatch.setenv(name, value)
    # Empty tables and queues, the template's queue attributes, the demo key: moto put back as
    # the provision left it, whatever the last test changed.
    assert fresh(stacks) == stack
    for name, value in stack.environment().items():
        monkeypatch.setenv(name, value)
    # These tests are about the claim, the fan-out to the delivery queue and the completion:
    # first attempts off, so every task is on the queue as a test reads it. Ingest's first
    # attempts have their own tests (test_ingest_first_attempts.py).
    monkeypatch.setenv("JOBHOOKS_FIRST_ATTEMPT_SECONDS", "0")
    mine = boto3.session.Session()
    # The handler builds its clients from boto3's default session: a fresh one per test, with
    # the fault hook registered before any client exists.
    session = boto3.session.Session()
    faults = Faults()
    session.events.register("before-call", faults.before_call)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", session)
    ingest_service.cache_clear()
    store = SubscriptionStore(
        stack.table_name("SubscriptionsTable"),
        mine.client("dynamodb"),
        mine.client("kms"),
        kms_key_id=stack.refs["SubscriptionSecretsKey"],
    )
    try:
        yield Bridge(stack, ingest_app(), faults, mine, store, monkeypatch)
    finally:
        ingest_service.cache_clear()


@pytest.fixture(scope="module")
def ingest_stack(provisioned_stacks: ProvisionedStacks) -> Iterator[LocalResources]:
    with provisioned_stack(provisioned_stacks) as stack:
        yield stack


@pytest.fixture
def bridge(
    ingest_stack: LocalResources,
    provisioned_stacks: ProvisionedStacks,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Bridge]:
    with open_bridge(ingest_stack, provisioned_stacks, monkeypatch) as opened:
        yield opened


def event_for(tenant_id: str = "acme", **options: Any) -> SampleEvent:
    return make_job_event(demo_key(), tenant_id=tenant_id, **options)


def completion_record(body: dict[str, Any]) -> bool:
    """A request writing a completion record (`batch#…`), not a claim."""
    key = (body.get("Item") or {}).get("event_id", {}).get("S", "")
    return str(key).startswith("batch#")


def event_id_of(event: SampleEvent) -> str:
    value = event.headers["ce-id"]
    assert isinstance(value, bytes)
    return value.decode()


# -------------------------------------------------------------------------- fan-out


def test_fans_out_one_task_per_matching_subscription_with_the_webhook_payload(
    bridge: Bridge,
) -> None:
    first, second = bridge.subscribe("acme"), bridge.subscribe("acme")
    event = event_for()
    bridge.send(event)

    stats = bridge.run()

    assert (stats.succeeded, stats.failed) == (1, 0)
    tasks = bridge.take_deliveries()
    assert {task.subscription_id for task in tasks} == {
        first.subscription_id,
        second.subscription_id,
    }
    event_id = event_id_of(event)
    claim = bridge.claim_item(event_id)
    assert claim is not None
    assert bridge.claim_state(event_id) == "done"
    assert claim["matched"] == "2"
    assert claim["tenant_id"] == "acme"
    assert claim["event_type"] == "job.completed"
    # Done through its completion record: the claim item itself is written once.
    completion = bridge.claim_item(f"batch#{claim['batch_id']}")
    assert completion is not None and event_id in completion["done"]
    assert "unmatched_tenant" not in claim
    for task in tasks:
        assert task.event_id == event_id
        assert task.tenant_id == "acme"
        assert task.delivery_id == delivery_id_for(event_id, task.subscription_id)
        assert task.payload == zlib.decompress(claim["payload"]).decode()
    assert sorted(claim["subscription_ids"]) == sorted(
        [first.subscription_id, second.subscription_id]
    )
    body = json.loads(tasks[0].payload)
    assert body["type"] == "job.completed"
    assert body["data"]["event_id"] == event_id


def dynamodb_item_size(item: dict[str, Any]) -> int:
    """The size DynamoDB bills a write for (developer guide, "Item sizes"), for the types a
    claim uses: S, N, B, SS."""

    def value_size(value: dict[str, Any]) -> int:
        ((kind, content),) = value.items()
        if kind == "S":
            return len(content.encode())
        if kind == "N":
            digits = content.lstrip("-").replace(".", "").lstrip("0") or "0"
            return (len(digits) + 1) // 2 + 1
        if kind == "B":
            return len(content)
        if kind == "SS":
            return sum(len(member.encode()) for member in content)
        raise AssertionError(f"unexpected attribute type {kind}")

    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def test_a_completed_claim_is_one_write_unit(bridge: Bridge) -> None:
    # The claim PutItem and its completing UpdateItem are billed per started KB of the item.
    bridge.subscribe("acme")
    bridge.subscribe("acme")
    event = event_for()
    bridge.send(event)
    bridge.run()

    item = bridge.dynamodb.get_item(
        TableName=bridge.claims_table, Key={"event_id": {"S": event_id_of(event)}}
    )["Item"]
    print(f"completed claim item: {dynamodb_item_size(item)} B")
    assert dynamodb_item_size(item) <= 1024


def test_a_batch_of_events_is_one_claim_write_each_and_one_completion_record(
    bridge: Bridge,
) -> None:
    bridge.subscribe("acme")
    bridge.subscribe("acme")
    events = [event_for() for _ in range(10)]
    bridge.send(*events)

    stats = bridge.poller(batch_size=10).run_once()

    assert (stats.succeeded, stats.failed) == (10, 0)
    # No per-event completing update: ten claim puts and one completion record.
    assert (bridge.faults.calls["PutItem"], bridge.faults.calls["UpdateItem"]) == (11, 0)
    claims = [bridge.claim_item(event_id_of(event)) for event in events]
    (batch_id,) = {claim["batch_id"] for claim in claims if claim is not None}
    completion = bridge.dynamodb.get_item(
        TableName=bridge.claims_table, Key={"event_id": {"S": f"batch#{batch_id}"}}
    )["Item"]
    assert sorted(completion["done"]["SS"]) == sorted(event_id_of(e) for e in events)
    assert dynamodb_item_size(completion) <= 1024
    assert all(bridge.claim_state(event_id_of(event)) == "done" for event in events)


def test_a_completed_claim_whose_lease_ended_is_never_taken_over(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    bridge.retry_quickly(lease_seconds=0.5)
    event = event_for()
    bridge.send(event)
    bridge.run()
    assert len(bridge.take_deliveries()) == 1
    before = bridge.claim_item(event_id_of(event))
    time.sleep(0.6)  # the lease has ended; only the completion record says it is done

    bridge.send(event)
    stats = bridge.run()

    assert (stats.succeeded, stats.failed) == (1, 0)
    assert bridge.take_deliveries() == []
    assert bridge.claim_item(event_id_of(event)) == before


def test_the_payload_is_the_outcome_webhook_body(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    event = event_for()
    bridge.send(event)
    bridge.run()

    (task,) = bridge.take_deliveries()
    # The receipt clock only fills in what an event lacks; this one is complete, so any clock
    # within the freshness window reads the same outcome.
    job_event = read_forwarded_message(
        event.forwarded().to_json(), VerificationPolicy(keys=[demo_key()]), datetime.now(UTC)
    )
    release = IngestSettings.from_env().producer_release  # template.yaml's ProducerRelease
    assert task.payload == webhook_payload(job_event, release=release)


def test_more_than_ten_subscriptions_are_sent_in_batches_of_ten(bridge: Bridge) -> None:
    wanted = {bridge.subscribe("acme").subscription_id for _ in range(12)}
    bridge.send(event_for())

    bridge.run()

    assert {task.subscription_id for task in bridge.take_deliveries()} == wanted
    assert bridge.faults.calls["SendMessageBatch"] == 2


def test_the_events_of_one_invocation_share_send_message_batch_calls(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    bridge.subscribe("acme")
    events = [event_for() for _ in range(10)]
    bridge.send(*events)

    stats = bridge.poller(batch_size=10).run_once()

    assert (stats.batches, stats.succeeded, stats.failed) == (1, 10, 0)
    tasks = bridge.take_deliveries()
    assert len(tasks) == 20
    assert {task.event_id for task in tasks} == {event_id_of(event) for event in events}
    # 20 tasks in two calls, not one call per event.
    assert bridge.faults.calls["SendMessageBatch"] == 2


def test_a_refused_shared_batch_fails_only_the_events_whose_tasks_it_held(
    bridge: Bridge,
) -> None:
    bridge.subscribe("acme")
    bridge.subscribe("acme")
    bridge.retry_quickly(lease_seconds=60)  # a retry must not have to wait for this lease
    events = [event_for() for _ in range(6)]  # 12 tasks: the first call holds five events'
    bridge.faults.fail("SendMessageBatch", target=bridge.delivery_queue, code="InternalError")
    bridge.send(*events)
    poller = bridge.poller(batch_size=10)

    first = poller.run_once()

    assert (first.succeeded, first.failed) == (1, 5)
    for event in events[:5]:
        assert bridge.claim_item(event_id_of(event)) is None  # released at once
    assert bridge.claim_state(event_id_of(events[5])) == "done"
    retried = poller.run_until_idle(20, include_in_flight=True)
    assert (retried.succeeded, retried.failed) == (5, 0)
    tasks = bridge.take_deliveries()
    assert len(tasks) == 12
    assert len({task.delivery_id for task in tasks}) == 12


# -------------------------------------------------------------------------- deduplication


def test_same_ce_id_twice_in_one_batch_fans_out_once(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    event = event_for()
    bridge.send(event, event)

    stats = bridge.run()

    assert (stats.batches, stats.succeeded, stats.failed) == (1, 2, 0)
    assert len(bridge.take_deliveries()) == 1


def test_same_ce_id_in_two_batches_fans_out_once(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    event = event_for()
    bridge.send(event)
    bridge.run()
    bridge.send(event)

    stats = bridge.run()

    assert (stats.succeeded, stats.failed) == (1, 0)
    assert len(bridge.take_deliveries()) == 1


def test_same_ce_id_from_two_concurrent_pollers_fans_out_once(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    bridge.subscribe("acme")
    bridge.retry_quickly(lease_seconds=30)
    event = event_for()
    second_claim_tried = threading.Event()
    claims_tried: list[int] = []

    def note_claim() -> None:
        claims_tried.append(1)
        if len(claims_tried) == 2:
            second_claim_tried.set()

    bridge.faults.on("PutItem", note_claim, target=bridge.claims_table, times=10)

    def hold_fan_out() -> None:
        # The first owner stays between claim and fan-out until the other poller tried too.
        assert second_claim_tried.wait(10)

    bridge.faults.on("SendMessageBatch", hold_fan_out, target=bridge.delivery_queue, times=1)
    bridge.send(event, event)

    pollers = [bridge.poller(batch_size=1, wait_time_seconds=1) for _ in range(2)]
    for poller in pollers:
        poller.start()
    try:
        deadline = time.monotonic() + 20
        while sum(p.counters.records_deleted for p in pollers) < 2:
            assert time.monotonic() < deadline, [p.counters for p in pollers]
            time.sleep(0.05)
    finally:
        for poller in pollers:
            poller.stop()

    assert second_claim_tried.is_set()
    assert sum(p.counters.records_failed for p in pollers) >= 1  # the loser retried later
    assert len(bridge.take_deliveries()) == 2


def test_repairer_re_emission_produces_nothing_new(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    now = int(time.time())
    original = event_for(timestamp=now - 600)
    bridge.send(original)
    bridge.run()
    first = bridge.claim_item(event_id_of(original))
    copy = re_emit(original, demo_key(), timestamp=now)
    assert copy.headers["x-message-signature"] != original.headers["x-message-signature"]

    bridge.send(copy)
    stats = bridge.run()

    assert (stats.succeeded, stats.failed) == (1, 0)
    assert len(bridge.take_deliveries()) == 1
    assert bridge.claim_item(event_id_of(original)) == first
    assert bridge.quarantined() == []


def test_an_expired_claim_still_present_is_claimed_again(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    event = event_for()
    event_id = event_id_of(event)
    # Done long ago: TTL is lazy (and moto never deletes), so the item is still there.
    bridge.dynamodb.put_item(
        TableName=bridge.claims_table,
        Item={
            "event_id": {"S": event_id},
            "state": {"S": "done"},
            "matched": {"N": "0"},
            "expires_at": {"N": str(int(time.time()) - 60)},
        },
    )
    assert bridge.claims().get(event_id) is None  # expiry is checked in code on reads too

    bridge.send(event)
    bridge.run()

    assert len(bridge.take_deliveries()) == 1
    claim = bridge.claim_item(event_id)
    assert claim is not None and bridge.claim_state(event_id) == "done"
    assert int(claim["expires_at"]) > time.time() + 6 * 86400


def test_a_copy_accepted_at_the_very_end_of_its_window_still_finds_the_claim(
    bridge: Bridge,
) -> None:
    # docs/ingest.md, "The claim": the first copy is claimed on arrival; a copy of it (same t)
    # received when the freshness rule last accepts it and processed just before SQS would
    # delete it is a duplicate, not a second delivery. The claim lasts no longer than that, or
    # than the deliveries it resolves (claim_retention: 30 days, the longer with the defaults).
    settings = IngestSettings.from_env()
    window = settings.dedup_retention_seconds
    queue = settings.ingest_queue_retention_seconds
    assert (
        queue == load_template()["Resources"]["IngestQueue"]["Properties"]["MessageRetentionPeriod"]
    )
    t = int(time.time())
    clock = [datetime.fromtimestamp(t, UTC)]
    claims = ClaimStore(
        bridge.claims_table,
        bridge.dynamodb,
        retention_seconds=settings.claim_retention_seconds,
        clock=lambda: clock[0],
    )
    sample = event_for(timestamp=t)
    policy = settings.verification_policy(keys=(demo_key(),))
    body = sample.forwarded().to_json()
    first = read_forwarded_message(body, policy, datetime.fromtimestamp(t, UTC))
    plan = FanOutPlan("retention", "{}", ())
    claim = claims.claim_event(first, lease_ms=1000, plan=plan)
    assert not isinstance(claim, Duplicate)
    claims.complete_batch(plan.batch_id, [(claim, plan)])

    # The last receipt the freshness rule accepts, and the last moment SQS still holds it.
    late = read_forwarded_message(body, policy, datetime.fromtimestamp(t + window, UTC))
    clock[0] = datetime.fromtimestamp(t + window + queue, UTC)
    assert isinstance(claims.claim_event(late, lease_ms=1000), Duplicate)

    kept = max(window + queue, DELIVERY_RETENTION_SECONDS)
    assert settings.claim_retention_seconds == kept
    clock[0] = datetime.fromtimestamp(t + kept, UTC)
    assert isinstance(claims.claim_event(late, lease_ms=1000), Duplicate)
    clock[0] = datetime.fromtimestamp(t + kept + 1, UTC)
    again = claims.claim_event(late, lease_ms=1000)
    assert not isinstance(again, Duplicate) and again.took_over is TakeOver.EXPIRED


def test_an_in_progress_claim_whose_lease_ended_is_taken_over(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    event = event_for()
    bridge.dynamodb.put_item(
        TableName=bridge.claims_table,
        Item={
            "event_id": {"S": event_id_of(event)},
            "state": {"S": "in_progress"},
            "claim_token": {"S": "someone-who-died"},
            "lease_until": {"N": str(int(time.time() * 1000) - 1)},
            "expires_at": {"N": str(int(time.time()) + 86400)},
        },
    )
    bridge.send(event)

    stats = bridge.run()

    assert (stats.succeeded, stats.failed) == (1, 0)
    assert len(bridge.take_deliveries()) == 1


def test_a_live_in_progress_claim_fails_the_record_without_side_effects(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    event = event_for()
    held = {
        "event_id": {"S": event_id_of(event)},
        "state": {"S": "in_progress"},
        "claim_token": {"S": "another-invocation"},
        "lease_until": {"N": str(int(time.time() * 1000) + 60_000)},
        "expires_at": {"N": str(int(time.time()) + 86400)},
    }
    bridge.dynamodb.put_item(TableName=bridge.claims_table, Item=held)
    bridge.send(event, event_for())

    stats = bridge.poller().run_once()

    assert (stats.succeeded, stats.failed) == (1, 1)
    assert len(bridge.take_deliveries()) == 1  # only the other event's
    assert bridge.claim_item(event_id_of(event))["claim_token"] == "another-invocation"  # type: ignore[index]


# -------------------------------------------------------------------------- crashes and errors


def test_crash_after_the_claim_is_retried_after_the_lease_and_fans_out_once(
    bridge: Bridge,
) -> None:
    bridge.subscribe("acme")
    bridge.subscribe("acme")
    bridge.retry_quickly(lease_seconds=0.5, visibility_seconds=1)
    event = event_for()
    bridge.faults.crash("SendMessageBatch", target=bridge.delivery_queue)
    bridge.send(event)
    poller = bridge.poller()

    with pytest.raises(SimulatedCrash):
        poller.run_once()

    assert bridge.claim_state(event_id_of(event)) == "in_progress"  # nobody released it
    assert bridge.take_deliveries() == []
    stats = poller.run_until_idle(20, include_in_flight=True)
    # Exactly one successful take-over. The lease runs from the claim and the visibility from the
    # receive, so on a loaded machine a redelivery can still land inside the lease and be turned
    # away as busy (counted as failed) before the take-over: that is the lease working, not a loss.
    assert stats.succeeded == 1
    assert len(bridge.take_deliveries()) == 2
    assert bridge.claim_state(event_id_of(event)) == "done"


def test_crash_between_fan_out_and_completion_re_enqueues_the_same_delivery_ids(
    bridge: Bridge,
) -> None:
    bridge.subscribe("acme")
    bridge.retry_quickly(lease_seconds=0.5, visibility_seconds=1)
    event = event_for()
    bridge.faults.crash("PutItem", target=bridge.claims_table, when=completion_record)
    bridge.send(event)
    poller = bridge.poller()

    with pytest.raises(SimulatedCrash):
        poller.run_once()
    poller.run_until_idle(20, include_in_flight=True)

    # At-least-once enqueue: the deliver side drops the second task by its delivery id.
    tasks = bridge.take_deliveries()
    assert len(tasks) == 2
    assert len({task.delivery_id for task in tasks}) == 1


def test_dynamodb_error_on_the_claim_leaves_the_record_for_retry(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    bridge.retry_quickly()
    event = event_for()
    bridge.faults.fail(
        "PutItem", target=bridge.claims_table, code="ProvisionedThroughputExceededException"
    )
    bridge.send(event, event_for())
    poller = bridge.poller()

    first = poller.run_once()

    assert (first.succeeded, first.failed) == (1, 1)
    assert bridge.claim_item(event_id_of(event)) is None
    assert len(bridge.take_deliveries()) == 1
    retried = poller.run_until_idle(20, include_in_flight=True)
    assert (retried.succeeded, retried.failed) == (1, 0)
    assert len(bridge.take_deliveries()) == 1


def test_sqs_error_during_fan_out_releases_the_claim_and_the_retry_fans_out_once(
    bridge: Bridge,
) -> None:
    bridge.subscribe("acme")
    bridge.retry_quickly(lease_seconds=60)  # a retry must not have to wait for this lease
    event = event_for()
    bridge.faults.fail("SendMessageBatch", target=bridge.delivery_queue, code="InternalError")
    bridge.send(event)
    poller = bridge.poller()

    first = poller.run_once()

    assert first.failed == 1
    assert bridge.claim_item(event_id_of(event)) is None  # released at once
    retried = poller.run_until_idle(20, include_in_flight=True)
    assert (retried.succeeded, retried.failed) == (1, 0)
    assert len(bridge.take_deliveries()) == 1


def test_failed_send_message_batch_entries_are_sent_again(bridge: Bridge) -> None:
    subscriptions = {bridge.subscribe("acme").subscription_id for _ in range(3)}

    def all_entries_failed() -> Any:
        failed = [
            {"Id": str(n), "SenderFault": False, "Code": "InternalError", "Message": "injected"}
            for n in range(3)
        ]
        return AWSResponse(bridge.delivery_queue, 200, {}, None), {
            "Successful": [],
            "Failed": failed,
        }

    bridge.faults.on("SendMessageBatch", all_entries_failed, target=bridge.delivery_queue, times=1)
    bridge.send(event_for())

    stats = bridge.poller().run_once()

    assert (stats.succeeded, stats.failed) == (1, 0)
    assert {task.subscription_id for task in bridge.take_deliveries()} == subscriptions


def test_dynamodb_error_on_completion_releases_the_claim_and_retries(bridge: Bridge) -> None:
    subscription = bridge.subscribe("acme")
    bridge.retry_quickly(lease_seconds=60)
    event = event_for()
    bridge.faults.fail("PutItem", target=bridge.claims_table, when=completion_record)
    bridge.send(event)
    poller = bridge.poller()

    first = poller.run_once()

    assert first.failed == 1
    assert bridge.claim_item(event_id_of(event)) is None
    poller.run_until_idle(20, include_in_flight=True)
    assert bridge.claim_state(event_id_of(event)) == "done"
    tasks = bridge.take_deliveries()
    assert {task.delivery_id for task in tasks} == {
        delivery_id_for(event_id_of(event), subscription.subscription_id)
    }


def test_quarantine_write_failure_fails_the_record_and_never_acks_it(bridge: Bridge) -> None:
    bridge.retry_quickly()
    bridge.faults.fail("PutItem", target=bridge.quarantine_table)
    bridge.send("not a forwarded message")
    poller = bridge.poller()

    first = poller.run_once()

    assert first.failed == 1
    assert bridge.quarantined() == []
    retried = poller.run_until_idle(20, include_in_flight=True)
    assert retried.succeeded == 1
    assert [item["reason"] for item in bridge.quarantined()] == ["malformed_envelope"]


@pytest.mark.filterwarnings("ignore:No application metrics")
def test_unreadable_fetcher_keys_fail_the_invocation_instead_of_quarantining(
    bridge: Bridge,
) -> None:
    boto3.session.Session().client("secretsmanager").put_secret_value(
        SecretId=bridge.stack.refs["FetcherKeysSecret"],
        SecretString="REPLACE_ME_WITH_jobhooks_keys_derive_OUTPUT",
    )
    bridge.send(event_for(), event_for())

    stats = bridge.poller().run_once()

    # The whole batch fails (Lambda's Errors metric), nothing is quarantined as a bad signature.
    assert (stats.failed, stats.failed_batches) == (2, 1)
    assert stats.error is not None and "fetcher_keys_unavailable" in stats.error
    assert bridge.quarantined() == []


@pytest.mark.filterwarnings("ignore:No application metrics")
def test_a_placeholder_keys_secret_parks_events_in_the_ingest_dlq_until_fixed_and_redriven(
    bridge: Bridge,
) -> None:
    # docs/deploy.md step 3 and docs/operations.md "A DLQ alarm": before the real key is in
    # the secret, events are neither quarantined nor lost. Every invocation fails (Lambda's
    # Errors metric: IngestErrorsAlarm), the records return to the queue and, after
    # maxReceiveCount, wait in the ingest DLQ (IngestDeadLetterQueueAlarm) for a redrive.
    bridge.subscribe("acme")
    bridge.retry_quickly()
    bridge.put_placeholder_keys()
    event = event_for()
    body = event.forwarded().to_json()
    [message_id] = bridge.send(body)
    poller = bridge.poller()

    first = poller.run_once()

    assert first.failed_batches == 1 and first.deleted == 0
    assert bridge.queue_depth(bridge.ingest_queue) == 1  # back after its visibility timeout
    rest = poller.run_until_idle(30, include_in_flight=True)
    assert rest.succeeded == 0 and rest.deleted == 0
    max_receives = load_template()["Resources"]["IngestQueue"]["Properties"]["RedrivePolicy"][
        "maxReceiveCount"
    ]
    assert first.received + rest.received == max_receives
    assert bridge.quarantined() == []
    assert bridge.take_deliveries() == []
    [parked] = bridge.peek(bridge.stack.queue_url("IngestDeadLetterQueue"))
    assert parked["MessageId"] == message_id
    assert parked["Body"] == body

    # The fix: the real key, then a redrive. The warm function re-reads an unusable secret at
    # most every DEFAULT_REFRESH_INTERVAL_SECONDS (the deployed queue's visibility timeout,
    # 240 s, is far longer), so the first receive after that verifies with the fixed secret.
    bridge.put_fetcher_keys(demo_key())
    time.sleep(DEFAULT_REFRESH_INTERVAL_SECONDS)
    redriven = redrive_dlq(
        get_management_context(ManagementSettings.from_env()),
        RedriveRequest(queue=DeadLetterQueue.INGEST, method=RedriveMethod.RESEND),
    )
    assert redriven.moved == 1
    after = poller.run_until_idle(20, include_in_flight=True)

    assert (after.succeeded, after.failed) == (1, 0)
    assert [task.event_id for task in bridge.take_deliveries()] == [event_id_of(event)]
    assert bridge.quarantined() == []


@pytest.mark.filterwarnings("ignore:No application metrics")
def test_a_missing_setting_fails_the_invocation_naming_the_variable(bridge: Bridge) -> None:
    bridge.monkeypatch.delenv("JOBHOOKS_CLAIMS_TABLE")
    ingest_service.cache_clear()
    bridge.send(event_for())

    stats = bridge.poller().run_once()

    assert stats.failed_batches == 1
    assert stats.error is not None and "JOBHOOKS_CLAIMS_TABLE" in stats.error


# -------------------------------------------------------------------------- rejections


def rejected_messages() -> dict[Reason, str]:
    key = demo_key()
    now = int(time.time())
    good = make_job_event(key, tenant_id="acme")

    def body(event: SampleEvent) -> str:
        return event.forwarded().to_json()

    return {
        Reason.MALFORMED_ENVELOPE: '{"format": "jobhooks.amqp/0"}',
        Reason.UNSUPPORTED_EVENT: body(make_job_event(key, routing_key="job.started")),
        Reason.MISSING_SIGNATURE: body(good.with_headers(x_message_signature=None)),
        Reason.UNSUPPORTED_SIGNATURE_VERSION: body(good.with_headers(signature_version="v2")),
        Reason.BAD_TIMESTAMP: body(good.with_headers(t="soon")),
        Reason.STALE_TIMESTAMP: body(make_job_event(key, timestamp=now - 8 * 86400)),
        Reason.FUTURE_TIMESTAMP: body(make_job_event(key, timestamp=now + 3600)),
        Reason.SIGNATURE_MISMATCH: body(make_job_event(UNKNOWN_KEY)),
        Reason.TENANT_MISMATCH: body(good.with_headers(ce_tenantid=b"globex")),
        Reason.EVENT_MISMATCH: body(good.with_headers(ce_subject=b"another-job")),
        Reason.MALFORMED_BODY: body(make_job_event(key, body=b'["not", "an", "object"]')),
        Reason.UNTRUSTED_SOURCE: body(good.with_headers(ce_source=b"//mallory/worker")),
    }


def test_every_reason_code_is_quarantined_acknowledged_and_never_delivered(
    bridge: Bridge,
) -> None:
    bridge.subscribe("acme")
    bridge.subscribe("single-tenant")
    bridge.configure(JOBHOOKS_ALLOWED_SOURCES=SOURCE)
    messages = rejected_messages()
    assert set(messages) == set(Reason)
    message_ids = dict(zip(messages, bridge.send(*messages.values()), strict=True))

    stats = bridge.run()

    assert (stats.succeeded, stats.failed) == (len(Reason), 0)
    assert bridge.take_deliveries() == []
    by_reason = {Reason(item["reason"]): item for item in bridge.quarantined()}
    assert set(by_reason) == set(Reason)
    now = time.time()
    for reason, item in by_reason.items():
        assert item["message"] == messages[reason]  # the SQS body, verbatim
        assert item["sqs_message_id"] == message_ids[reason]
        assert item["status"] == "quarantined"
        assert item["detail"]
        assert abs(_epoch(item["sent_at"]) - now) < 60
        assert abs(_epoch(item["received_at"]) - now) < 60
        assert int(item["expires_at"]) > now + 29 * 86400
    assert "event_id" not in by_reason[Reason.MALFORMED_ENVELOPE]
    assert by_reason[Reason.TENANT_MISMATCH]["event_id"].startswith("fetcher.job.completed.")
    # Nothing was claimed for a rejected message.
    assert bridge.dynamodb.scan(TableName=bridge.claims_table)["Count"] == 0


def test_a_quarantined_message_is_kept_once_when_its_ack_is_lost(bridge: Bridge) -> None:
    bridge.retry_quickly()
    message_id = bridge.send("not a forwarded message")[0]

    def lose_the_ack(**_: Any) -> Any:
        raise ClientError({"Error": {"Code": "InternalError", "Message": "lost"}}, "Delete")

    # The poller's own client loses the delete: SQS delivers the message a second time.
    bridge.sqs.meta.events.register("before-call.sqs.DeleteMessageBatch", lose_the_ack)
    bridge.poller().run_once()
    bridge.sqs.meta.events.unregister("before-call.sqs.DeleteMessageBatch", lose_the_ack)
    bridge.run()

    assert [item["sqs_message_id"] for item in bridge.quarantined()] == [message_id]


def test_a_signature_by_the_previous_key_is_accepted_during_rotation(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    bridge.put_fetcher_keys(NEW_KEY, demo_key())  # current first, previous second
    by_new = make_job_event(NEW_KEY, tenant_id="acme")
    by_previous = make_job_event(demo_key(), tenant_id="acme")
    by_neither = make_job_event(UNKNOWN_KEY, tenant_id="acme")
    bridge.send(by_new, by_previous, by_neither)

    bridge.run()

    assert {task.event_id for task in bridge.take_deliveries()} == {
        event_id_of(by_new),
        event_id_of(by_previous),
    }
    assert [item["reason"] for item in bridge.quarantined()] == ["signature_mismatch"]


def test_a_key_added_after_the_cached_read_verifies_at_once(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    bridge.send(event_for())
    bridge.run()  # the secret (demo key only) is now cached for 300 s
    bridge.put_fetcher_keys(demo_key(), NEW_KEY)
    bridge.send(make_job_event(NEW_KEY, tenant_id="acme"))

    stats = bridge.run()

    assert (stats.succeeded, stats.failed) == (1, 0)
    assert len(bridge.take_deliveries()) == 2
    assert bridge.quarantined() == []


# -------------------------------------------------------------------------- tenancy


def test_events_reach_only_their_own_tenants_subscriptions(bridge: Bridge) -> None:
    acme_all = bridge.subscribe("acme")
    acme_failed = bridge.subscribe("acme", ("job.failed",))
    acme_disabled = bridge.subscribe("acme")
    bridge.subscriptions.update(acme_disabled.subscription_id, status="disabled")
    globex_all = bridge.subscribe("globex")
    acme_completed = event_for("acme", status="completed")
    acme_failure = event_for("acme", status="failed")
    globex_completed = event_for("globex", status="completed")
    bridge.send(acme_completed, acme_failure, globex_completed)

    bridge.run()

    delivered = {
        (task.event_id, task.subscription_id, task.tenant_id) for task in bridge.take_deliveries()
    }
    assert delivered == {
        (event_id_of(acme_completed), acme_all.subscription_id, "acme"),
        (event_id_of(acme_failure), acme_all.subscription_id, "acme"),
        (event_id_of(acme_failure), acme_failed.subscription_id, "acme"),
        (event_id_of(globex_completed), globex_all.subscription_id, "globex"),
        # A disabled subscription gets its tasks too: deliver records them `skipped`, so that
        # `recover` can send them once it is active again (jobhooks.delivery.skipped).
        (event_id_of(acme_completed), acme_disabled.subscription_id, "acme"),
        (event_id_of(acme_failure), acme_disabled.subscription_id, "acme"),
    }


def test_an_event_nothing_matched_is_recorded_as_unmatched(bridge: Bridge) -> None:
    bridge.subscribe("acme", ("job.completed",))
    unmatched = event_for("acme", status="failed")
    other_tenant = event_for("initech")
    bridge.send(unmatched, other_tenant)

    stats = bridge.run()

    assert (stats.succeeded, stats.failed) == (2, 0)
    assert bridge.take_deliveries() == []
    for tenant, event in (("acme", unmatched), ("initech", other_tenant)):
        response = bridge.dynamodb.query(
            TableName=bridge.claims_table,
            IndexName="unmatched",
            KeyConditionExpression="unmatched_tenant = :t",
            ExpressionAttributeValues={":t": {"S": tenant}},
        )
        assert [item["event_id"]["S"] for item in response["Items"]] == [event_id_of(event)]
        listed = bridge.claims().list_unmatched(tenant)
        assert [record.event_id for record in listed.events] == [event_id_of(event)]
        assert listed.events[0].matched == 0


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_a_legacy_signature_naming_another_tenant_is_quarantined_not_delivered(
    bridge: Bridge,
) -> None:
    bridge.configure(JOBHOOKS_ALLOW_LEGACY_SIGNATURES="true")  # AllowLegacySignatures=true
    other = bridge.subscribe("other")
    single = bridge.subscribe("single-tenant")
    legacy = event_for("single-tenant", legacy=True)
    # The body-only form signs `<t>.<body>` only: the added tenant header verifies as well.
    retargeted = event_for("single-tenant", legacy=True).with_headers(X_Tenant_ID="other")
    retargeted_body = retargeted.forwarded().to_json()
    bridge.send(legacy, retargeted_body)

    stats = bridge.run()

    assert (stats.succeeded, stats.failed) == (2, 0)
    (task,) = bridge.take_deliveries()
    assert (task.subscription_id, task.tenant_id) == (single.subscription_id, "single-tenant")
    assert json.loads(task.payload)["data"]["account_id"] == "single-tenant"
    assert task.subscription_id != other.subscription_id
    (rejected,) = bridge.quarantined()
    assert rejected["reason"] == "tenant_mismatch"
    assert "legacy" in rejected["detail"] and "does not sign the tenant" in rejected["detail"]
    assert rejected["message"] == retargeted_body


def test_a_ce_source_outside_the_configured_allowlist_is_quarantined(bridge: Bridge) -> None:
    bridge.configure(JOBHOOKS_ALLOWED_SOURCES=f" {SOURCE} , //other/worker")  # AllowedSources
    bridge.subscribe("acme")
    inside = event_for()
    outside = event_for().with_headers(ce_source=b"//mallory/worker")
    without = event_for().with_headers(ce_source=None)
    bridge.send(inside, outside, without)

    bridge.run()

    delivered = {task.event_id: json.loads(task.payload) for task in bridge.take_deliveries()}
    assert set(delivered) == {event_id_of(inside), event_id_of(without)}
    assert delivered[event_id_of(inside)]["data"]["queue_name"] == SOURCE
    assert delivered[event_id_of(without)]["data"]["queue_name"] == "fetcher.job.events"
    (rejected,) = bridge.quarantined()
    assert (rejected["reason"], rejected["event_id"]) == ("untrusted_source", event_id_of(outside))


def test_without_an_allowlist_any_ce_source_is_delivered(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    event = event_for().with_headers(ce_source=b"//mallory/worker")
    bridge.send(event)

    bridge.run()

    (task,) = bridge.take_deliveries()
    assert json.loads(task.payload)["data"]["queue_name"] == "//mallory/worker"
    assert bridge.quarantined() == []


def test_a_copy_with_a_rewritten_ce_time_that_arrives_first_is_timed_by_t(bridge: Bridge) -> None:
    bridge.subscribe("acme")
    t = int(time.time()) - 60
    original = event_for(status="failed", timestamp=t)
    rewritten = original.with_headers(ce_time=b"2001-01-01T00:00:00Z")
    bridge.send(rewritten)
    bridge.run()
    bridge.send(original)
    bridge.run()

    (task,) = bridge.take_deliveries()  # the original is a duplicate of the copy
    data = json.loads(task.payload)["data"]
    assert data["timestamp_utc"] == datetime.fromtimestamp(t, UTC).strftime(
        "%Y-%m-%dT%H:%M:%S.000Z"
    )
    assert data["unmeasured"][0] == "timestamp_utc"
