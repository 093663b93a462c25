"""The delivery task: one (event, subscription) pair on the delivery queue (`jobhooks.delivery/1`).

Ingest writes one per matching subscription; deliver reads it. The payload is the exact webhook
body, built once at ingest, so every attempt and every subscription POSTs the same bytes. The
ids are derived, not random: a repeated fan-out of one event yields the same `delivery_id`, which
is what lets the deliver side drop a duplicate task after a recorded success. A delivery id names
its event and subscription (`parse_delivery_id`): a first attempt that succeeded has no record of
its own, and the id is how the management API finds the page that holds it
(`jobhooks.delivery.first_attempts`). Ids made before that (`dlv_` and 32 hex digits, a hash:
`legacy_delivery_id_for`) still name their records.
"""

import base64
import binascii
import functools
import hashlib
import json
import re
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jobhooks.delivery.limits import DELIVERY_ID_PATTERN as DELIVERY_ID_PATTERN
from jobhooks.moved_names import moved_name
from jobhooks.webhook_signature import webhook_id_for

if TYPE_CHECKING:
    from jobhooks.named_delivery import NamedDelivery

FORMAT: Final = "jobhooks.delivery/1"


class InvalidDeliveryTaskError(ValueError):
    """A delivery-queue message is not a `jobhooks.delivery/1` task (a poison message)."""


class DeliveryTask(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    format: Literal["jobhooks.delivery/1"] = FORMAT
    delivery_id: str
    event_id: str
    webhook_id: str
    subscription_id: str
    tenant_id: str
    event_type: str
    payload: str
    """The webhook body JSON: the exact text that is signed and POSTed."""
    replay: bool = False
    """An operator asked for this delivery again: deliver even after a recorded success."""
    attempts_made: int = Field(default=0, ge=0)
    """Attempts made before the task was enqueued: 1 when ingest's first attempt failed
    (`jobhooks.delivery.first_attempt`), so the deliver function's first receive is attempt 2.
    Optional on the wire: a task without it (older, or enqueued without a first attempt) is 0."""

    def to_json(self) -> str:
        """The SQS message body: JSON with every character beyond ASCII escaped.

        SQS refuses a body holding U+FFFE, U+FFFF or control characters, and a producer's
        metadata or error text may carry them into the payload. Escaped, they pass any queue;
        decoding gives the payload text back unchanged, so the POSTed bytes are the same.
        """
        document = self.model_dump(mode="json")
        if not self.attempts_made:
            # Absent means 0: a task with no attempt made reads exactly as before the field.
            del document["attempts_made"]
        return json.dumps(document, separators=(",", ":"), ensure_ascii=True)

    @classmethod
    def from_json(cls, text: str) -> "DeliveryTask":
        try:
            return cls.model_validate_json(text)
        except ValidationError as error:
            raise InvalidDeliveryTaskError(
                f"not a {FORMAT} task: {error.error_count()} problem(s), first: "
                f"{error.errors()[0]['msg']}"
            ) from None


# SQS's limit on a message's DelaySeconds (15 minutes).
MAX_DELAY_SECONDS: Final = 900


DELIVERY_ID_PREFIX: Final = "dlv_"
# The subscription is named by a tag: 6 bytes of its id's SHA-256 in base64url. The event's claim
# lists its subscriptions, and the tag tells which (48 bits: no two of an event's subscriptions
# share one in practice, and the whole derived id is compared to be sure).
_SUBSCRIPTION_TAG: Final = re.compile(r"[A-Za-z0-9_-]{8}")
_TAG_BYTES: Final = 6
# A Fetcher ce-id with a UUID job id is carried in 23 characters: its status's initial, then the
# UUID's 16 bytes in base64url. Any other ce-id is carried whole, in base64url, after `e`. Only
# the canonical text of a UUID (lower case, hyphens at 8-4-4-4-12), so that it comes back equal:
# the one form `str(uuid.UUID(...))` gives.
_FETCHER_CE_ID: Final = re.compile(
    r"fetcher\.job\.(completed|failed)\."
    r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
)
_STATUS_MARKS: Final = {"completed": "c", "failed": "f"}
_MARKED_STATUSES: Final = {mark: status for status, mark in _STATUS_MARKS.items()}
_WHOLE_EVENT_ID_MARK: Final = "e"


def delivery_id_for(event_id: str, subscription_id: str) -> str:
    """`dlv_<event part>.<subscription tag>`: URL-safe, and the event readable back
    (`parse_delivery_id`); 36 characters for a Fetcher ce-id, like the hashed ids before.

    The event part is a mark and base64url, the tag base64url: neither has a `.`, which splits
    the id.
    """
    return _delivery_id(_event_part(event_id), subscription_id)


def _delivery_id(event_part: str, subscription_id: str) -> str:
    return f"{DELIVERY_ID_PREFIX}{event_part}.{subscription_tag(subscription_id)}"


# Cached: a tenant's few subscriptions recur in every event of a warm function, and the hash is
# most of a delivery id's cost once the event's part is shared by its tasks. Bounded, so that a
# function serving many tenants keeps a few hundred kilobytes of tags at most.
@functools.lru_cache(maxsize=4096)
def subscription_tag(subscription_id: str) -> str:
    return _base64url(hashlib.sha256(subscription_id.encode("utf-8")).digest()[:_TAG_BYTES])


def parse_delivery_id(delivery_id: str) -> "NamedDelivery | None":
    """The event and subscription tag of a delivery id; None for a hashed (older) or foreign
    id. Which subscription the tag names, the event's claim says (its subscription ids)."""
    if not delivery_id.startswith(DELIVERY_ID_PREFIX):
        return None
    event_part, dot, tag = delivery_id[len(DELIVERY_ID_PREFIX) :].partition(".")
    if not dot or not _SUBSCRIPTION_TAG.fullmatch(tag):
        return None
    event_id = _event_id_of(event_part)
    if event_id is None or _event_part(event_id) != event_part:
        return None  # not the canonical form (padding, stray characters): not ours
    # Imported by the first id read back: only a delivery's history reads ids
    # (`jobhooks.delivery.history`); ingest makes them and reads none.
    from jobhooks.named_delivery import NamedDelivery

    return NamedDelivery(event_id, tag)


def legacy_delivery_id_for(event_id: str, subscription_id: str) -> str:
    """The id deliveries were given before ids named their event: `dlv_` and 32 hex digits.

    For reading only: records written under it are kept for the attempt log's retention after
    an upgrade, and an event's listing looks for them too (`jobhooks.delivery.history`). No
    delivery is given this id any more.
    """
    digest = hashlib.sha256(f"{event_id}\n{subscription_id}".encode()).hexdigest()
    return DELIVERY_ID_PREFIX + digest[:32]


def _event_part(event_id: str) -> str:
    match = _FETCHER_CE_ID.fullmatch(event_id)
    if match is not None:
        status, job_id = match.groups()
        return _STATUS_MARKS[status] + _base64url(bytes.fromhex(job_id.replace("-", "")))
    return _WHOLE_EVENT_ID_MARK + _base64url(event_id.encode("utf-8"))


def _event_id_of(event_part: str) -> str | None:
    mark, encoded = event_part[:1], event_part[1:]
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        if mark in _MARKED_STATUSES:
            return f"fetcher.job.{_MARKED_STATUSES[mark]}.{uuid.UUID(bytes=raw)}"
        if mark == _WHOLE_EVENT_ID_MARK and raw:
            return raw.decode("utf-8")
    except (binascii.Error, ValueError):
        pass
    return None


def _base64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def delivery_task_for(
    *, event_id: str, tenant_id: str, event_type: str, payload: str, subscription_id: str
) -> DeliveryTask:
    (task,) = delivery_tasks_for_subscriptions(
        event_id=event_id,
        tenant_id=tenant_id,
        event_type=event_type,
        payload=payload,
        subscription_ids=(subscription_id,),
    )
    return task


def delivery_tasks_for_subscriptions(
    *,
    event_id: str,
    tenant_id: str,
    event_type: str,
    payload: str,
    subscription_ids: Iterable[str],
) -> tuple[DeliveryTask, ...]:
    """One event's task for each subscription, in order.

    The event's share of the ids (its part of the delivery id, its webhook id) is derived once:
    per subscription it cost more than the rest of the task together, on every event ingest
    fans out.
    """
    event_part = _event_part(event_id)
    webhook_id = webhook_id_for(event_id)
    return tuple(
        DeliveryTask(
            delivery_id=_delivery_id(event_part, subscription_id),
            event_id=event_id,
            webhook_id=webhook_id,
            subscription_id=subscription_id,
            tenant_id=tenant_id,
            event_type=event_type,
            payload=payload,
        )
        for subscription_id in subscription_ids
    )


# `DelayedTask` and `QueuedTask` on first use: only ingest enqueues (`jobhooks.queued_task`),
# and the deliver function, which imports this module for the task it reads, builds neither.
# `NamedDelivery` likewise: what an id read back says (`parse_delivery_id`), ingest reads none.
_MOVED: Final = {
    "DelayedTask": "jobhooks.queued_task",
    "QueuedTask": "jobhooks.queued_task",
    "NamedDelivery": "jobhooks.named_delivery",
}


def __getattr__(name: str) -> Any:
    return moved_name(__name__, name, _MOVED)
