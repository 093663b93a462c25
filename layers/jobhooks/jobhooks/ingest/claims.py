"""The claim on a `ce-id` (`ClaimsTable`): how ingest deduplicates events and never loses one.

One item per event id. An invocation *claims* the id with one conditional PutItem that carries
a lease and the event's whole record: the fan-out decided before the claim (matched count and
subscription ids, webhook payload, tenant) and the id of the invocation's *completion record*.
Once the deliveries are enqueued and the rows written, one PutItem of that record
(`batch#<id>`, listing the events done) completes every claim of the batch: the event is done
when the record its claim names lists it. DynamoDB bills a write per item, so this is one write
unit per event plus about one per ten events, instead of a put and an update per event.

The claim can be taken when nobody holds it, when it expired (`expires_at`, seconds; DynamoDB's
TTL deletes late, so expiry is checked here on every write and read, never left to TTL), or when
it is still in progress but its lease (`lease_until`, milliseconds) ran out and its completion
record does not list it: the owner died before finishing. That record is read (strongly
consistent) before a take-over, which is a second conditional put on the dead owner's token,
so a finished event is never fanned out again. An owner that fails cleanly releases its claim
at once, conditional on its token, so a retry need not wait for the lease. Claims written by
earlier versions (completed with `state` done by an update, no `batch_id`) read as before.

The claim item is kept under 1 KB, because DynamoDB bills it per started KB: the webhook payload
is stored zlib-compressed (a body of about 950 B shrinks to about 460 B), and the matched
subscription ids are a string set, from which the management API derives the event's delivery
ids instead of querying an index of the deliveries table (docs/architecture.md).
"""

from __future__ import annotations

import secrets
import zlib
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from jobhooks.frozen_record import replace
from jobhooks.ingest.claim_retention import claim_expires_at
from jobhooks.ingest.exceptions import (
    ClaimInProgressError,
    EventInProgressError,
    EventNotFoundError,
)
from jobhooks.ingest.inbound import MAX_EVENT_ID_CHARS
from jobhooks.ingest.model import (
    MAX_EVENTS_PER_BATCH_RECORD,
    Claim,
    ClaimState,
    Duplicate,
    EventRecord,
    FanOutPlan,
    TakeOver,
)
from jobhooks.storage.claim_reader import batch_key, is_batch_key, payload_of, subscription_ids_of
from jobhooks.storage.conditions import is_condition_failure
from jobhooks.storage.cursors import decode_cursor, encode_cursor, printable_text, stored_time
from jobhooks.storage.exceptions import AwsServiceError
from jobhooks.storage.pages import DEFAULT_PAGE_SIZE, check_page_size, cut_page
from jobhooks.storage.times import (
    epoch_millis,
    epoch_seconds,
    format_time,
    from_epoch_seconds,
    parse_time,
    utc_now,
)
from jobhooks.storage.updates import ItemUpdate

if TYPE_CHECKING:
    from jobhooks.inbound.event import JobEvent
    from jobhooks.ingest.reads import EventPage

UNMATCHED_INDEX: Final = "unmatched"

# `state` is a DynamoDB reserved word.
_NAMES: Final = {"#state": "state"}
# A claim's event id is its ce-id, at most as long as ingest keeps one.
_EVENT_ID: Final = printable_text(MAX_EVENT_ID_CHARS)


class ClaimStore:
    """Claims, completes, releases and reads event claims. `dynamodb` is a boto3 client.

    `retention_seconds` is how long a claim is kept after its copy's signed `t` or after the
    claim, whichever is later: the freshness window plus the ingest queue's retention
    (`claim_retention`), so that no copy the freshness rule accepts outlives it.
    """

    def __init__(
        self,
        table_name: str,
        dynamodb: Any,
        *,
        retention_seconds: int,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.table_name = table_name
        self._dynamodb = dynamodb
        self._retention_seconds = retention_seconds
        self._clock = clock

    # -- the ingest path -------------------------------------------------------------------

    def claim_event(
        self, event: JobEvent, *, lease_ms: int, plan: FanOutPlan | None = None
    ) -> Claim | Duplicate:
        """Claim `event.event_id` for `lease_ms`; `Duplicate` when it was already ingested.

        With a `plan`, the claim carries the event's fan-out (payload, subscription ids) and the
        id of the completion record that will list it (`complete_batch`): the event is done
        when that record lists it, with no second write to its own item. Raises
        `ClaimInProgressError` while another invocation's lease is live.
        """
        now = self._clock()
        now_ms = epoch_millis(now)
        claim = Claim(
            event_id=event.event_id,
            tenant_id=event.tenant_id,
            event_type=event.event_type,
            job_id=event.job_id,
            token=secrets.token_hex(16),
            lease_until_ms=now_ms + max(lease_ms, 1),
            signed_at=event.signed_timestamp,
        )
        item = {
            "event_id": {"S": claim.event_id},
            "state": {"S": ClaimState.IN_PROGRESS.value},
            "claim_token": {"S": claim.token},
            "lease_until": {"N": str(claim.lease_until_ms)},
            "tenant_id": {"S": claim.tenant_id},
            "event_type": {"S": claim.event_type},
            "job_id": {"S": claim.job_id},
            "claimed_at": {"S": format_time(now)},
            # An abandoned claim still disappears one retention period later.
            "expires_at": {"N": str(self._expires_at(now, claim.signed_at))},
        }
        if plan is not None:
            item.update(_planned_fan_out(plan, claim.tenant_id, now))
        try:
            response = self._dynamodb.put_item(
                TableName=self.table_name,
                Item=item,
                # A claim with a completion record is taken over only after reading that record
                # (`_take_over`): its owner may have finished, with nothing on the item to say so.
                ConditionExpression=(
                    "attribute_not_exists(event_id) OR expires_at < :now "
                    "OR (#state = :in_progress AND lease_until < :now_ms "
                    "AND attribute_not_exists(batch_id))"
                ),
                ExpressionAttributeNames=_NAMES,
                ExpressionAttributeValues={
                    ":now": {"N": str(epoch_seconds(now))},
                    ":now_ms": {"N": str(now_ms)},
                    ":in_progress": {"S": ClaimState.IN_PROGRESS.value},
                },
                # On success: what we replaced (a takeover); on failure: who holds it, for free.
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if not is_condition_failure(error):
                raise AwsServiceError.from_client_error("PutItem (claim)", error) from error
            existing = error.response.get("Item")
            if existing is None:
                # Not expected from DynamoDB; treat it as held so the record is simply retried.
                raise ClaimInProgressError(event.event_id, now_ms) from None
            record = self._resolve(existing)
            if record.state is ClaimState.DONE:
                return Duplicate(record)
            if "batch_id" in existing and (record.lease_until_ms or 0) < now_ms:
                return self._take_over(claim, item, existing, now_ms)
            raise ClaimInProgressError(event.event_id, record.lease_until_ms or now_ms) from None
        replaced = response.get("Attributes")
        if replaced:
            old = _record_from_item(replaced)
            reason = TakeOver.LEASE_EXPIRED if old.expires_at > now else TakeOver.EXPIRED
            return replace(claim, took_over=reason)
        return claim

    def _take_over(
        self, claim: Claim, item: dict[str, Any], existing: dict[str, Any], now_ms: int
    ) -> Claim:
        """Replace a claim whose owner stopped before its completion record listed it."""
        try:
            self._dynamodb.put_item(
                TableName=self.table_name,
                Item=item,
                # Still the dead owner's claim: another taker may have been faster.
                ConditionExpression=(
                    "claim_token = :token AND #state = :in_progress AND lease_until < :now_ms"
                ),
                ExpressionAttributeNames=_NAMES,
                ExpressionAttributeValues={
                    ":token": existing.get("claim_token", {"S": ""}),
                    ":in_progress": {"S": ClaimState.IN_PROGRESS.value},
                    ":now_ms": {"N": str(now_ms)},
                },
            )
        except ClientError as error:
            if not is_condition_failure(error):
                raise AwsServiceError.from_client_error("PutItem (take over)", error) from error
            raise ClaimInProgressError(claim.event_id, now_ms) from None
        return replace(claim, took_over=TakeOver.LEASE_EXPIRED)

    def complete_batch(
        self, batch_id: str, claimed: Sequence[tuple[Claim, FanOutPlan]]
    ) -> list[EventRecord]:
        """Complete claims made with `plan.batch_id == batch_id` with one write for them all.

        The completion record (`batch#<id>`) lists the events whose fan-out is done; it lives
        as long as the longest-lived of their claims. One PutItem of up to about 1 KB for ten
        events, instead of one UpdateItem per event.
        """
        if not claimed:
            return []
        if len(claimed) > MAX_EVENTS_PER_BATCH_RECORD:
            raise ValueError(f"at most {MAX_EVENTS_PER_BATCH_RECORD} claims per completion record")
        now = self._clock()
        expires_at = max(self._expires_at(now, claim.signed_at) for claim, _ in claimed)
        try:
            self._dynamodb.put_item(
                TableName=self.table_name,
                Item={
                    "event_id": {"S": batch_key(batch_id)},
                    "done": {"SS": sorted({claim.event_id for claim, _ in claimed})},
                    "done_at": {"S": format_time(now)},
                    "expires_at": {"N": str(expires_at)},
                },
            )
        except ClientError as error:
            raise AwsServiceError.from_client_error("PutItem (completion record)", error) from error
        return [
            EventRecord(
                event_id=claim.event_id,
                state=ClaimState.DONE,
                tenant_id=claim.tenant_id,
                event_type=claim.event_type,
                job_id=claim.job_id,
                claimed_at=None,
                expires_at=from_epoch_seconds(self._expires_at(now, claim.signed_at)),
                done_at=now,
                matched=plan.matched,
                payload=plan.payload,
                unmatched=plan.matched == 0,
                subscription_ids=tuple(sorted(set(plan.subscription_ids))),
            )
            for claim, plan in claimed
        ]

    def release(self, claim: Claim) -> bool:
        """Give the claim up so a retry can take it at once; False when it was not ours."""
        try:
            self._dynamodb.delete_item(
                TableName=self.table_name,
                Key={"event_id": {"S": claim.event_id}},
                ConditionExpression="claim_token = :token AND #state = :in_progress",
                ExpressionAttributeNames=_NAMES,
                ExpressionAttributeValues={
                    ":token": {"S": claim.token},
                    ":in_progress": {"S": ClaimState.IN_PROGRESS.value},
                },
            )
        except ClientError as error:
            if is_condition_failure(error):
                return False
            raise AwsServiceError.from_client_error("DeleteItem (release claim)", error) from error
        return True

    def _expires_at(self, now: datetime, signed_at: int | None) -> int:
        return claim_expires_at(
            now_seconds=epoch_seconds(now),
            signed_at=signed_at,
            retention_seconds=self._retention_seconds,
        )

    # -- reading and re-fan-out (management) -----------------------------------------------

    def get(self, event_id: str) -> EventRecord | None:
        """The event's record, or None when absent or expired (but not yet deleted by TTL)."""
        try:
            response = self._dynamodb.get_item(
                TableName=self.table_name, Key={"event_id": {"S": event_id}}, ConsistentRead=True
            )
        except ClientError as error:
            raise AwsServiceError.from_client_error("GetItem (claim)", error) from error
        item = response.get("Item")
        if item is None or is_batch_key(event_id):
            return None
        record = self._resolve(item)
        return None if record.expires_at <= self._clock() else record

    def _resolve(self, item: dict[str, Any]) -> EventRecord:
        """The record of a claim item; done when its completion record lists it."""
        record = _record_from_item(item)
        batch_id = _s(item, "batch_id")
        if record.state is not ClaimState.IN_PROGRESS or batch_id is None:
            return record
        done_at = self._completed_at(batch_id, record.event_id)
        if done_at is None:
            return record
        # An unmatched claim keeps its own `done_at`: the `unmatched` index's sort key (cursors).
        return replace(
            record, state=ClaimState.DONE, done_at=record.done_at or done_at, lease_until_ms=None
        )

    def _completed_at(self, batch_id: str, event_id: str) -> datetime | None:
        try:
            response = self._dynamodb.get_item(
                TableName=self.table_name,
                Key={"event_id": {"S": batch_key(batch_id)}},
                # Strongly consistent: a take-over decided on a stale read would fan out again.
                ConsistentRead=True,
            )
        except ClientError as error:
            raise AwsServiceError.from_client_error("GetItem (completion record)", error) from error
        item = response.get("Item")
        if item is None or event_id not in item.get("done", {}).get("SS", []):
            return None
        return _time(_s(item, "done_at"))

    def get_done(self, event_id: str) -> EventRecord:
        """The record of an event that was fully ingested; raises otherwise."""
        record = self.get(event_id)
        if record is None:
            raise EventNotFoundError(event_id)
        if record.state is not ClaimState.DONE:
            raise EventInProgressError(event_id)
        return record

    def list_unmatched(
        self, tenant_id: str, *, limit: int = DEFAULT_PAGE_SIZE, cursor: str | None = None
    ) -> EventPage:
        """The tenant's events no subscription matched, newest first."""
        check_page_size(limit)
        start_key = _start_key(cursor, tenant_id) if cursor else None
        now = self._clock()
        found: list[EventRecord] = []
        # One more than asked, so that the last page says so instead of handing out a cursor.
        while len(found) <= limit:
            request: dict[str, Any] = {
                "TableName": self.table_name,
                "IndexName": UNMATCHED_INDEX,
                "KeyConditionExpression": "unmatched_tenant = :tenant",
                "FilterExpression": "expires_at > :now",
                "ExpressionAttributeValues": {
                    ":tenant": {"S": tenant_id},
                    ":now": {"N": str(epoch_seconds(now))},
                },
                "ScanIndexForward": False,
                "Limit": limit + 1 - len(found),
            }
            if start_key:
                request["ExclusiveStartKey"] = start_key
            try:
                response = self._dynamodb.query(**request)
            except ClientError as error:
                raise AwsServiceError.from_client_error(
                    "Query (unmatched events)", error
                ) from error
            for item in response.get("Items", []):
                record = self._resolve(item)
                # A claim whose completion record does not list it yet is not done.
                if record.expires_at > now and record.unmatched and record.state is ClaimState.DONE:
                    found.append(record)
            start_key = response.get("LastEvaluatedKey")
            if not start_key:
                break
        page, next_cursor = cut_page(found, limit, _cursor_after)
        from jobhooks.ingest.reads import EventPage  # the management API's read only

        return EventPage(page, next_cursor)

    def record_fan_out(
        self, record: EventRecord, *, matched: int, subscription_ids: Iterable[str] = ()
    ) -> EventRecord:
        """After a re-fan-out: the new matched count, and out of (or into) `unmatched`.

        `subscription_ids` join the recorded ones (a set union): a subscription that received
        the event before and no longer matches still has its delivery listed under the event.
        """
        now = self._clock()
        # A claim completed before subscription ids were recorded gets none now: a partial set
        # would hide its earlier deliveries, which the management API finds without one.
        recorded = record.subscription_ids
        added = tuple(sorted(set(subscription_ids))) if recorded is not None else ()
        update = (
            ItemUpdate()
            .set("matched", {"N": str(matched)})
            .set("refanned_out_at", {"S": format_time(now)})
        )
        if matched == 0:
            update.set("unmatched_tenant", {"S": record.tenant_id})
        else:
            update.remove("unmatched_tenant")
        if added:
            update.add("subscription_ids", {"SS": list(added)})
        # The caller read it done (`get_done`), perhaps through its completion record: say so
        # on the item too. A claim its completion record lists is never taken over.
        update.set("state", {"S": ClaimState.DONE.value})
        update.remove("lease_until")
        done = update.value("done", {"S": ClaimState.DONE.value})
        now_value = update.value("now", {"N": str(epoch_seconds(now))})
        update.condition(
            f"({update.name('state')} = {done} OR attribute_exists({update.name('batch_id')})) "
            f"AND {update.name('expires_at')} > {now_value}"
        )
        try:
            self._dynamodb.update_item(
                **update.request(self.table_name, {"event_id": {"S": record.event_id}})
            )
        except ClientError as error:
            if is_condition_failure(error):
                raise EventNotFoundError(record.event_id) from None
            raise AwsServiceError.from_client_error("UpdateItem (re-fan-out)", error) from error
        return replace(
            record,
            matched=matched,
            unmatched=matched == 0,
            subscription_ids=None if recorded is None else tuple(sorted({*recorded, *added})),
        )


def _record_from_item(item: dict[str, Any]) -> EventRecord:
    return EventRecord(
        event_id=item["event_id"]["S"],
        state=ClaimState(item.get("state", {}).get("S", ClaimState.IN_PROGRESS.value)),
        tenant_id=_s(item, "tenant_id") or "",
        event_type=_s(item, "event_type") or "",
        job_id=_s(item, "job_id") or "",
        claimed_at=_time(_s(item, "claimed_at")),
        expires_at=from_epoch_seconds(_n(item, "expires_at") or 0),
        lease_until_ms=_n(item, "lease_until"),
        done_at=_time(_s(item, "done_at")),
        matched=_n(item, "matched"),
        payload=payload_of(item),
        unmatched="unmatched_tenant" in item,
        subscription_ids=subscription_ids_of(item),
        batch_id=_s(item, "batch_id"),
    )


def _planned_fan_out(plan: FanOutPlan, tenant_id: str, now: datetime) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "batch_id": {"S": plan.batch_id},
        "matched": {"N": str(plan.matched)},
        "payload": {"B": _compress(plan.payload)},
    }
    if plan.subscription_ids:
        # DynamoDB refuses an empty set: no subscription, no attribute.
        attributes["subscription_ids"] = {"SS": sorted(set(plan.subscription_ids))}
    else:
        # The sparse `unmatched` index lists it (its sort key is `done_at`: the decision's
        # time); the listing shows it once its completion record lists it.
        attributes["unmatched_tenant"] = {"S": tenant_id}
        attributes["done_at"] = {"S": format_time(now)}
    return attributes


def _compress(payload: str) -> bytes:
    return zlib.compress(payload.encode("utf-8"), 9)


def _s(item: dict[str, Any], name: str) -> str | None:
    value = item.get(name)
    return str(value["S"]) if value and "S" in value else None


def _n(item: dict[str, Any], name: str) -> int | None:
    value = item.get(name)
    return int(value["N"]) if value and "N" in value else None


def _time(text: str | None) -> datetime | None:
    return parse_time(text) if text else None


def _text(moment: datetime | None) -> str | None:
    return format_time(moment) if moment is not None else None


def _cursor_after(record: EventRecord) -> str:
    return encode_cursor({"t": record.tenant_id, "e": record.event_id, "d": _text(record.done_at)})


def _start_key(cursor: str, tenant_id: str) -> dict[str, Any]:
    document = decode_cursor(
        cursor, bound={"t": tenant_id}, fields={"e": _EVENT_ID, "d": stored_time}
    )
    return {
        "event_id": {"S": document["e"]},
        "unmatched_tenant": {"S": tenant_id},
        "done_at": {"S": document["d"]},
    }
