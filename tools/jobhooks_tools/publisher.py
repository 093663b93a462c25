"""Publishing sample Fetcher events to RabbitMQ exactly as the producer does.

A producer stand-in for `jobhooks publish-sample`, `jobhooks dev --demo`, the end-to-end tests
and the benchmarks. It has two halves, in the order an event goes through them:

1. `sample_traffic()` decides *what* to publish: signed job events for one or more tenants,
   completed and failed, each optionally followed by the copies the real producer emits (outbox
   relay, repairer, broker redelivery), plus tampered and unsigned messages that the bridge must
   quarantine, each with the reason code it must get.
2. `SamplePublisher` puts them on the wire: persistent, `application/json`, headers with the
   producer's AMQP types (byte arrays for `ce-*`, long strings for the signed headers, a signed
   32-bit `x-retry-count`), publisher confirms, `mandatory` so nothing vanishes unnoticed.

It declares nothing. The shovel owns the exchange, its queue and the bindings; publishing to a
missing exchange is an `ExchangeNotFoundError` that says so, and a message no queue is bound for
is an `UnroutableError` instead of the producer's silent drop.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

import pika
import pika.exceptions
from jobhooks.inbound.keys import HmacKey
from jobhooks.inbound.outcome import format_timestamp
from jobhooks.inbound.rejection import Reason

from jobhooks_tools.sample_events import (
    EXCHANGE,
    SampleEvent,
    completed_body,
    make_job_event,
    re_emit,
)

DEFAULT_AMQP_URL: Final = "amqp://guest:guest@localhost:5672/"
STATUSES: Final = ("completed", "failed")
# The producer's repairer re-emits an unpublished event every 30 s.
REPAIRER_INTERVAL_SECONDS: Final = 30
# Originals are stamped this far in the past so that their copies can carry later `t` values
# without ever being ahead of the receipt clock (the bridge rejects `t` > 30 s in the future).
_ORIGINAL_AGE_SECONDS: Final = 90


# ------------------------------------------------------------------------------ what to publish


class Copy(StrEnum):
    """How the producer comes to send one event again (docs/fetcher-job-events.md)."""

    # The outbox relay publishes again: new `t`, signature and X-Request-Id, same `ce-time`.
    OUTBOX = "outbox"
    # The repairer re-emits: like the outbox, and a new `ce-time` as well.
    REPAIRER = "repairer"
    # The broker hands the very same message over again (unacked delivery, shovel crash).
    REDELIVERY = "redelivery"


class Tampering(StrEnum):
    """A message the bridge must refuse, by what was done to a real event."""

    # Someone re-addressed a real event to another tenant: the signed X-Tenant-ID changed.
    TENANT = "tenant"
    # The body was edited after signing.
    BODY = "body"
    # Only the unsigned `ce-tenantid` was changed: the cross-check catches it.
    CE_TENANTID = "ce-tenantid"
    # The dedup key was pointed at another job: the cross-check catches it.
    CE_ID = "ce-id"
    # The signature headers were stripped.
    UNSIGNED = "unsigned"


# The reason code ingest must quarantine each kind of tampering with.
TAMPERING_REASONS: Final = {
    Tampering.TENANT: Reason.SIGNATURE_MISMATCH,
    Tampering.BODY: Reason.SIGNATURE_MISMATCH,
    Tampering.CE_TENANTID: Reason.TENANT_MISMATCH,
    Tampering.CE_ID: Reason.EVENT_MISMATCH,
    Tampering.UNSIGNED: Reason.MISSING_SIGNATURE,
}
_FORGED_TENANT: Final = "mallory"


@dataclass(frozen=True)
class SamplePublication:
    """One message to publish and what the bridge must do with it."""

    event: SampleEvent
    # The tenant's own vhost (multi-tenant producers), or None: the publisher URL's vhost.
    vhost: str | None
    # The event it is (the `ce-id` of the original, also for a tampered copy of it).
    event_id: str
    tenant_id: str
    event_type: str  # job.completed | job.failed
    # "original", a `Copy` value, or "tampered:<kind>".
    kind: str
    # None: a valid event (delivered once per matching subscription); else its reason code.
    expected_rejection: Reason | None = None

    @property
    def valid(self) -> bool:
        return self.expected_rejection is None

    def describe(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "tenant_id": self.tenant_id,
            "event_type": self.event_type,
            "routing_key": self.event.routing_key,
            "vhost": self.vhost,
            "kind": self.kind,
            "expected_rejection": self.expected_rejection.value
            if self.expected_rejection
            else None,
        }


def sample_traffic(
    key: HmacKey,
    *,
    count: int,
    tenants: Sequence[str] = ("single-tenant",),
    statuses: Sequence[str] = STATUSES,
    copies: Sequence[Copy] = (),
    tampered: Sequence[Tampering] = (),
    vhost_per_tenant: bool = False,
    exchange: str = EXCHANGE,
) -> Iterator[SamplePublication]:
    """`count` events, tenants and statuses taken in turn, each followed by `copies`; then one
    tampered message per entry of `tampered`, made from the last event of a tenant (in turn).

    Events are made as they are asked for, so a slow, rate-limited run still carries fresh
    timestamps. `vhost_per_tenant` puts each tenant's messages in a vhost of its name, as a
    multi-tenant producer does; otherwise everything goes to the publisher URL's vhost.
    """
    if count < 0:
        raise ValueError("count must not be negative")
    if not tenants:
        raise ValueError("at least one tenant is needed")
    unknown = sorted(set(statuses) - set(STATUSES))
    if unknown or not statuses:
        raise ValueError(f"statuses must be among {', '.join(STATUSES)}, got {unknown or 'none'}")
    latest: dict[str, SamplePublication] = {}
    for n in range(count):
        tenant = tenants[n % len(tenants)]
        status = statuses[(n // len(tenants)) % len(statuses)]
        original = _original(key, tenant, status, exchange, vhost_per_tenant)
        yield original
        for number, copy in enumerate(copies, start=1):
            yield _copy_of(original, copy, number, key)
        latest[tenant] = original
    for number, kind in enumerate(tampered):
        # Tampering with a real event of the run, as an attacker replaying it would; a fresh
        # event (never published valid) when the tenant had none.
        tenant = tenants[number % len(tenants)]
        base = latest.get(tenant) or _original(key, tenant, statuses[0], exchange, vhost_per_tenant)
        yield tamper(base, kind, key)


def _original(
    key: HmacKey, tenant: str, status: str, exchange: str, vhost_per_tenant: bool
) -> SamplePublication:
    stamped = int(time.time()) - _ORIGINAL_AGE_SECONDS
    job_id = str(uuid.uuid4())
    # Completed when it was emitted, as the producer stamps it: the outcome (and its analytics
    # row) falls in the window a user asks about, not on the fixed date of `completed_body`.
    body = (
        completed_body(job_id, completed_at=format_timestamp(datetime.fromtimestamp(stamped, UTC)))
        if status == "completed"
        else None
    )
    event = make_job_event(
        key,
        status=status,
        tenant_id=tenant,
        job_id=job_id,
        timestamp=stamped,
        body=body,
        exchange=exchange,
    )
    return SamplePublication(
        event=event,
        vhost=tenant if vhost_per_tenant else None,
        event_id=_text(event.headers["ce-id"]),
        tenant_id=tenant,
        event_type=f"job.{status}",
        kind="original",
    )


def _copy_of(
    original: SamplePublication, copy: Copy, number: int, key: HmacKey
) -> SamplePublication:
    if copy is Copy.REDELIVERY:
        event = original.event
    else:
        first_t = int(_text(original.event.headers["t"]))
        later = min(first_t + number * REPAIRER_INTERVAL_SECONDS // 3, int(time.time()))
        # The outbox relay keeps the emission time; the repairer stamps a new one.
        emitted_at = (
            datetime.fromisoformat(_text(original.event.headers["ce-time"]))
            if copy is Copy.OUTBOX
            else datetime.fromtimestamp(later, UTC)
        )
        event = re_emit(original.event, key, timestamp=later, emitted_at=emitted_at)
    return SamplePublication(
        event=event,
        vhost=original.vhost,
        event_id=original.event_id,
        tenant_id=original.tenant_id,
        event_type=original.event_type,
        kind=copy.value,
    )


def tamper(original: SamplePublication, kind: Tampering, key: HmacKey) -> SamplePublication:
    """A tampered version of `original`; its signature is not recomputed (except to forge)."""
    event = original.event
    if kind is Tampering.TENANT:
        event = event.with_headers(
            **{"X-Tenant-ID": _FORGED_TENANT, "ce-tenantid": _FORGED_TENANT.encode()}
        )
    elif kind is Tampering.BODY:
        edited = event.body.replace(b'"status"', b'"note":"edited","status"', 1)
        event = SampleEvent(event.exchange, event.routing_key, dict(event.headers), edited)
    elif kind is Tampering.CE_TENANTID:
        event = event.with_headers(**{"ce-tenantid": _FORGED_TENANT.encode()})
    elif kind is Tampering.CE_ID:
        status = original.event_type.removeprefix("job.")
        event = event.with_headers(**{"ce-id": f"fetcher.job.{status}.{uuid.uuid4()}".encode()})
    elif kind is Tampering.UNSIGNED:
        event = event.with_headers(**{"x-message-signature": None})
    # Every tampered message is a new publish attempt of its own.
    event = event.with_headers(**{"X-Request-Id": str(uuid.uuid4())})
    return SamplePublication(
        event=event,
        vhost=original.vhost,
        event_id=original.event_id,
        tenant_id=original.tenant_id,
        event_type=original.event_type,
        kind=f"tampered:{kind.value}",
        expected_rejection=TAMPERING_REASONS[kind],
    )


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# ------------------------------------------------------------------------------ on the wire


class PublishError(Exception):
    """A message could not be published; the message says why and what to do."""


class BrokerUnavailableError(PublishError):
    """The broker could not be reached or the connection broke."""


class ExchangeNotFoundError(PublishError):
    """The exchange does not exist in the vhost: nothing has declared it yet."""


class UnroutableError(PublishError):
    """The broker accepted the message but no queue is bound for its routing key."""


# The producer's AMQP properties: persistent JSON, nothing else set.
_PROPERTIES_TEMPLATE: Final = {"content_type": "application/json", "delivery_mode": 2}
_NOT_FOUND: Final = 404


class SamplePublisher:
    """Publishes `SampleEvent`s with confirms; one connection per vhost, opened on first use.

        with SamplePublisher("amqp://guest:guest@localhost:5672/") as publisher:
            publisher.publish(event)                     # to the URL's vhost
            publisher.publish(event, vhost="acme")       # a tenant's vhost

    `publish` returns once the broker confirmed the message. With `retry_for`, a lost connection
    is reopened and the message published again until that many seconds have passed, as a
    producer's outbox would; a copy the broker had already taken is then a duplicate, which the
    bridge deduplicates.
    """

    def __init__(self, amqp_url: str = DEFAULT_AMQP_URL, *, timeout: float = 10.0) -> None:
        try:
            self._parameters = pika.URLParameters(amqp_url)
        except (ValueError, pika.exceptions.AMQPError) as error:
            raise PublishError(f"the AMQP URL is not valid ({type(error).__name__})") from None
        self._parameters.socket_timeout = timeout
        self._parameters.blocked_connection_timeout = timeout
        self._parameters.connection_attempts = 1
        self._timeout = timeout
        self._connections: dict[str, Any] = {}
        self._channels: dict[str, Any] = {}
        self.published = 0

    @property
    def default_vhost(self) -> str:
        return str(self._parameters.virtual_host)

    def publish(
        self, event: SampleEvent, vhost: str | None = None, *, retry_for: float = 0
    ) -> None:
        vhost = vhost or self.default_vhost
        deadline = time.monotonic() + retry_for
        while True:
            try:
                self._publish_once(event, vhost)
            except BrokerUnavailableError:
                self._forget(vhost)
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)
                continue
            self.published += 1
            return

    def publish_sample(self, publication: SamplePublication, *, retry_for: float = 0) -> None:
        self.publish(publication.event, publication.vhost, retry_for=retry_for)

    def close(self) -> None:
        for vhost in list(self._connections):
            self._forget(vhost)

    def __enter__(self) -> SamplePublisher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------

    def _publish_once(self, event: SampleEvent, vhost: str) -> None:
        channel = self._channel(vhost, event.exchange)
        properties = pika.BasicProperties(headers=dict(event.headers), **_PROPERTIES_TEMPLATE)
        try:
            channel.basic_publish(
                exchange=event.exchange,
                routing_key=event.routing_key,
                body=event.body,
                properties=properties,
                mandatory=True,
            )
        except pika.exceptions.UnroutableError:
            raise UnroutableError(
                f"no queue is bound to exchange {event.exchange!r} for routing key "
                f"{event.routing_key!r} in vhost {vhost!r}: start the shovel first "
                "(jobhooks shovel or jobhooks dev), it binds its queue"
            ) from None
        except pika.exceptions.NackError:
            raise PublishError(
                f"the broker refused the message (nack) in vhost {vhost!r}; see its log"
            ) from None
        except pika.exceptions.ChannelClosedByBroker as error:
            self._forget(vhost)
            raise self._explain_channel_closed(error, event.exchange, vhost) from None
        except (
            pika.exceptions.AMQPConnectionError,
            pika.exceptions.AMQPChannelError,
            OSError,
        ) as error:
            raise BrokerUnavailableError(
                f"the connection to vhost {vhost!r} broke while publishing ({type(error).__name__})"
            ) from None

    def _channel(self, vhost: str, exchange: str) -> Any:
        channel = self._channels.get(vhost)
        if channel is not None and channel.is_open:
            return channel
        self._forget(vhost)
        # The URL's host, port, credentials and TLS, in the vhost asked for.
        connection_parameters = pika.ConnectionParameters(
            host=self._parameters.host,
            port=self._parameters.port,
            virtual_host=vhost,
            credentials=self._parameters.credentials,
            ssl_options=self._parameters.ssl_options,
            socket_timeout=self._timeout,
            blocked_connection_timeout=self._timeout,
            connection_attempts=1,
            # A sample publisher may idle between paced publishes; confirms catch a dead link.
            heartbeat=0,
        )
        try:
            connection = pika.BlockingConnection(connection_parameters)
        except pika.exceptions.ProbableAuthenticationError:
            raise PublishError(
                "the broker refused the AMQP user and password; check --amqp-url"
            ) from None
        except pika.exceptions.ProbableAccessDeniedError:
            raise PublishError(
                f"the AMQP user may not use vhost {vhost!r} (or it does not exist); create it "
                "and grant permissions, or pick another vhost"
            ) from None
        except (pika.exceptions.AMQPError, OSError) as error:
            raise BrokerUnavailableError(
                f"no RabbitMQ broker answers at {self._parameters.host}:{self._parameters.port} "
                f"({type(error).__name__}); start one, or run jobhooks dev"
            ) from None
        self._connections[vhost] = connection
        try:
            channel = connection.channel()
            channel.confirm_delivery()
            # Passive: only checks that the exchange exists; declaring it is the shovel's job.
            channel.exchange_declare(exchange, passive=True)
        except pika.exceptions.ChannelClosedByBroker as error:
            self._forget(vhost)
            raise self._explain_channel_closed(error, exchange, vhost) from None
        except (pika.exceptions.AMQPError, OSError) as error:
            self._forget(vhost)
            raise BrokerUnavailableError(
                f"the connection to vhost {vhost!r} broke ({type(error).__name__})"
            ) from None
        self._channels[vhost] = channel
        return channel

    @staticmethod
    def _explain_channel_closed(
        error: pika.exceptions.ChannelClosedByBroker, exchange: str, vhost: str
    ) -> PublishError:
        if error.reply_code == _NOT_FOUND:
            return ExchangeNotFoundError(
                f"exchange {exchange!r} does not exist in vhost {vhost!r}: start the shovel "
                "(jobhooks shovel or jobhooks dev), which declares it, or pass the right --exchange"
            )
        return PublishError(
            f"the broker closed the channel in vhost {vhost!r}: {error.reply_code} "
            f"{error.reply_text}"
        )

    def _forget(self, vhost: str) -> None:
        self._channels.pop(vhost, None)
        connection = self._connections.pop(vhost, None)
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.close()
