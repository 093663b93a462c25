"""What the end-to-end tests drive and observe: the whole bridge, its receivers, its traffic.

`Bridge` wraps one `DevStack` (RabbitMQ -> shovel process -> SQS -> ingest -> deliver, AWS behind
a TCP proxy that can refuse connections) and one `DemoReceiver` holding an endpoint per
subscription. Tests register subscriptions through the management API, publish signed sample
events through RabbitMQ exactly as the producer does, inject faults, and compare what every
endpoint received with what it should have received.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobhooks.analytics.local_backend import LocalBackend
from jobhooks.analytics.row import AnalyticsRow
from jobhooks.analytics.sink import AnalyticsSink
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.local.analytics.duckdb_engine import DuckDBEngine
from jobhooks_tools.local.analytics.files import LocalFileSink
from jobhooks_tools.local.demo_receiver import DemoReceiver, ReceivedWebhook
from jobhooks_tools.local.dev_stack import DevStack
from jobhooks_tools.publisher import SamplePublication, SamplePublisher

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "schema" / "outcome.v1.json"


@dataclass(frozen=True)
class Subscription:
    subscription_id: str
    tenant_id: str
    endpoint: str
    event_types: tuple[str, ...]
    secret: str = field(repr=False)


@dataclass
class SinkFaults:
    """What the bridge's analytics sink does to each row before it writes it: `change` returns
    the row to write instead, or None to drop it silently (None: rows are written as they are).
    A stack whose sink loses or alters rows, for the tests of `jobhooks analytics check`."""

    change: Callable[[AnalyticsRow], AnalyticsRow | None] | None = None

    def backend(self) -> LocalBackend:
        """The local files and DuckDB, with these faults on the way in."""
        return LocalBackend(
            sink=lambda directory: _FaultySink(LocalFileSink(directory), self),
            engine=DuckDBEngine,
        )


class _FaultySink(AnalyticsSink):
    def __init__(self, sink: AnalyticsSink, faults: SinkFaults) -> None:
        self._sink = sink
        self._faults = faults

    def put_rows(self, rows: Sequence[AnalyticsRow]) -> None:
        change = self._faults.change
        if change is not None:
            rows = [changed for changed in map(change, rows) if changed is not None]
        self._sink.put_rows(rows)


@dataclass
class Bridge:
    stack: DevStack
    receiver: DemoReceiver
    sink_faults: SinkFaults = field(default_factory=SinkFaults)

    # -- the management API ------------------------------------------------------------------

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        assert self.stack.api_url, "the management API is not running"
        request = urllib.request.Request(
            self.stack.api_url + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"content-type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raise AssertionError(
                f"{method} {path} answered {error.code}: {error.read()[:500]!r}"
            ) from None

    def subscribe(
        self,
        tenant_id: str,
        *,
        event_types: Sequence[str] = ("job.completed", "job.failed"),
        job_names: Sequence[str] = (),
    ) -> Subscription:
        """A subscription of `tenant_id` pointing at an endpoint of its own on the receiver."""
        endpoint = f"{tenant_id}-{uuid.uuid4().hex[:6]}"
        url = self.receiver.add_endpoint(endpoint)
        body: dict[str, Any] = {
            "tenant_id": tenant_id,
            "url": url,
            "event_types": list(event_types),
        }
        if job_names:
            body["job_names"] = list(job_names)
        created = self.api("POST", "/v1/subscriptions", body)
        self.receiver.trust(endpoint, created["secret"])
        return Subscription(
            created["subscription_id"], tenant_id, endpoint, tuple(event_types), created["secret"]
        )

    def deliveries(self, subscription: Subscription) -> list[dict[str, Any]]:
        """The subscription's deliveries as the API lists them (status, attempt_count, ...)."""
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            query = f"?subscription_id={subscription.subscription_id}&limit=100"
            page = self.api(
                "GET", "/v1/deliveries" + query + (f"&cursor={cursor}" if cursor else "")
            )
            found.extend(page["deliveries"])
            cursor = page.get("next_cursor")
            if not cursor:
                return found

    def quarantined(self, reason: str | None = None) -> list[dict[str, Any]]:
        """Every quarantine record (with the original message), newest pages included."""
        records: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            query = "?limit=100" + (f"&reason={reason}" if reason else "")
            query += f"&cursor={cursor}" if cursor else ""
            page = self.api("GET", "/v1/quarantine" + query)
            for summary in page["messages"]:
                records.append(self.api("GET", f"/v1/quarantine/{summary['quarantine_id']}"))
            cursor = page.get("next_cursor")
            if not cursor:
                return records

    # -- traffic -----------------------------------------------------------------------------

    def publish(self, publications: Iterable[SamplePublication]) -> list[SamplePublication]:
        published = list(publications)
        with SamplePublisher(self.stack.amqp_url) as publisher:
            for publication in published:
                publisher.publish_sample(publication, retry_for=30)
        return published

    def publish_in_background(
        self, publications: Sequence[SamplePublication], rate: float
    ) -> Traffic:
        return Traffic(self.stack.amqp_url, list(publications), rate).start()

    # -- what arrived ------------------------------------------------------------------------

    def successes(self, subscription: Subscription) -> list[ReceivedWebhook]:
        return [
            webhook
            for webhook in self.receiver.received(subscription.endpoint)
            if 200 <= webhook.answered < 300
        ]

    def wait_for_deliveries(
        self, expected: dict[str, set[str]], timeout: float
    ) -> dict[str, Counter[str]]:
        """Wait until every endpoint had a successful POST for each expected `webhook-id`;
        return, per endpoint, how many successful POSTs each webhook-id got."""

        def delivered() -> dict[str, Counter[str]]:
            return {
                endpoint: Counter(
                    webhook.webhook_id
                    for webhook in self.receiver.received(endpoint)
                    if 200 <= webhook.answered < 300
                )
                for endpoint in expected
            }

        def complete(_: DemoReceiver) -> bool:
            counts = delivered()
            return all(ids <= set(counts[endpoint]) for endpoint, ids in expected.items())

        try:
            self.receiver.wait_for(complete, timeout, what="every expected delivery")
        except TimeoutError:
            counts = delivered()
            missing = {
                endpoint: sorted(ids - set(counts[endpoint]))
                for endpoint, ids in expected.items()
                if ids - set(counts[endpoint])
            }
            raise AssertionError(
                f"deliveries missing after {timeout} s: {missing}; log: {self.stack.log_path}"
            ) from None
        return delivered()


def expected_deliveries(
    publications: Iterable[SamplePublication], subscriptions: Iterable[Subscription]
) -> dict[str, set[str]]:
    """Per endpoint, the `webhook-id` of every valid event its subscription matches."""
    subscriptions = list(subscriptions)
    expected: dict[str, set[str]] = {subscription.endpoint: set() for subscription in subscriptions}
    for publication in publications:
        if not publication.valid:
            continue
        for subscription in subscriptions:
            if (
                subscription.tenant_id == publication.tenant_id
                and publication.event_type in subscription.event_types
            ):
                expected[subscription.endpoint].add(webhook_id_for(publication.event_id))
    return expected


def unique_tenant(name: str) -> str:
    """Tests share one bridge: their tenants never meet."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Poll `condition` until it holds; a failure names what never happened."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not seen within {timeout} s")
        time.sleep(0.1)


class Traffic:
    """Publishes at a steady rate in a thread, retrying through broker outages as a producer's
    outbox does (a copy the broker already had is then a duplicate: ingest deduplicates it)."""

    def __init__(self, amqp_url: str, publications: list[SamplePublication], rate: float) -> None:
        self.publications = publications
        self.published: list[SamplePublication] = []
        self.error: BaseException | None = None
        self._amqp_url = amqp_url
        self._interval = 1.0 / rate
        self._thread = threading.Thread(target=self._run, name="e2e-traffic", daemon=True)

    def start(self) -> Traffic:
        self._thread.start()
        return self

    def wait_until_published(self, count: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.published) < count:
            if self.error is not None or time.monotonic() > deadline:
                raise AssertionError(f"only {len(self.published)} published: {self.error}")
            time.sleep(0.05)

    def join(self, timeout: float = 180.0) -> list[SamplePublication]:
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError(f"publishing did not finish in {timeout} s")
        if self.error is not None:
            raise AssertionError(f"publishing failed: {self.error}")
        return self.published

    def _run(self) -> None:
        started = time.monotonic()
        try:
            with SamplePublisher(self._amqp_url) as publisher:
                for n, publication in enumerate(self.publications):
                    time.sleep(max(0.0, started + n * self._interval - time.monotonic()))
                    publisher.publish_sample(publication, retry_for=120)
                    self.published.append(publication)
        except BaseException as error:  # reported by join()
            self.error = error
