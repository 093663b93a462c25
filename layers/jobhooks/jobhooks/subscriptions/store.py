"""Subscriptions in DynamoDB (`SubscriptionsTable`, GSI `by_tenant`; docs/architecture.md).

The one place that reads and writes subscription items. Writes replace the whole item under an
optimistic-concurrency condition on `revision`, so a rotation racing an update or a 410-disable
never loses either change: the loser re-reads and re-applies. Every tenant-scoped read goes
through the `by_tenant` index with the tenant as its partition key, never a Scan, so one tenant's
query cannot return another tenant's subscription.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from jobhooks.endpoint_health.owed import OwedNotification
from jobhooks.endpoint_health.store import health_attributes, health_from_item
from jobhooks.moved_names import moved_name
from jobhooks.storage.conditions import is_condition_failure
from jobhooks.storage.cursors import decode_cursor, encode_cursor, shaped
from jobhooks.storage.pages import DEFAULT_PAGE_SIZE, check_page_size, cut_page
from jobhooks.storage.reads import every_item, every_page
from jobhooks.storage.times import format_time, parse_time, to_stored_precision, utc_now
from jobhooks.subscriptions.exceptions import (
    SubscriptionConflictError,
    SubscriptionLimitError,
    SubscriptionNotFoundError,
)
from jobhooks.subscriptions.model import (
    DEFAULT_EVENT_TYPES,
    DEFAULT_GRACE,
    MAX_PREVIOUS_SECRETS,
    SUBSCRIPTION_ID_PATTERN,
    EventType,
    SecretVersion,
    Subscription,
    SubscriptionStatus,
    bounded_reason,
    new_secret_id,
    new_subscription_id,
    parse_event_types,
    parse_job_names,
    parse_status,
    validate_description,
    validate_grace,
    validate_tenant_id,
    validate_url,
)
from jobhooks.subscriptions.secrets import DEFAULT_DATA_KEY_CACHE_SIZE, SecretVault, open_secret
from jobhooks.webhook_signature import generate_secret

if TYPE_CHECKING:
    from jobhooks.subscriptions.results import IssuedSecret as IssuedSecret
    from jobhooks.subscriptions.results import SubscriptionPage as SubscriptionPage

BY_TENANT_INDEX: Final = "by_tenant"
# Cursors of `list_by_tenant` are bound to the tenant they were issued for.
CURSOR_SCOPE: Final = "for this tenant"
DISABLED_BY_TENANT: Final = "disabled by the tenant"

_WRITE_ATTEMPTS: Final = 5
_MATCHING_CACHE_ENTRIES: Final = 1024
_SUBSCRIPTION_ID: Final = shaped(SUBSCRIPTION_ID_PATTERN)


# Names that live in `results` (the management operations' results), so that the event
# functions' cold start does not define them, still importable from here.
_MOVED: Final = {
    "IssuedSecret": "jobhooks.subscriptions.results",
    "SubscriptionPage": "jobhooks.subscriptions.results",
}


def __getattr__(name: str) -> Any:
    return moved_name(__name__, name, _MOVED)


class _RevisionConflictError(Exception):
    """The stored revision moved (or the item vanished) between our read and our write."""


class SubscriptionStore:
    """Create, read, change and match subscriptions; seal and open their signing secrets.

    `dynamodb` and `kms` are boto3 clients (low-level). `kms_key_id` is needed to create and
    rotate; reading and `signing_secrets` need only `kms:Decrypt`. `matching_cache_seconds`
    turns on a per-process cache of `matching()` results for the Lambda hot path: a change made
    by another process is then seen up to that many seconds late. `match_disabled`: `matching()`
    returns the disabled subscriptions too (ingest's store: their deliveries are recorded
    `skipped`, `jobhooks.delivery.skipped`).
    """

    def __init__(
        self,
        table_name: str,
        dynamodb: Any,
        kms: Any,
        *,
        kms_key_id: str | None = None,
        allow_http_urls: bool = False,
        matching_cache_seconds: float | None = None,
        max_per_tenant: int | None = None,
        data_key_cache_size: int = DEFAULT_DATA_KEY_CACHE_SIZE,
        clock: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
        match_disabled: bool = False,
    ) -> None:
        self.table_name = table_name
        self.match_disabled = match_disabled
        self._dynamodb = dynamodb
        self._vault = SecretVault(kms, kms_key_id, cache_size=data_key_cache_size)
        self._allow_http_urls = allow_http_urls
        self.max_per_tenant = max_per_tenant
        self._clock = clock
        self._matching_cache = (
            _MatchingCache(matching_cache_seconds, monotonic)
            if matching_cache_seconds and matching_cache_seconds > 0
            else None
        )

    # -- create and read -------------------------------------------------------------------

    def create(
        self,
        tenant_id: str,
        url: str,
        event_types: Iterable[str] = DEFAULT_EVENT_TYPES,
        *,
        description: str | None = None,
        job_names: Iterable[str] = (),
    ) -> IssuedSecret:
        """A new active subscription with one signing secret, returned in plaintext only here.

        Raises `SubscriptionLimitError` when the tenant already has `max_per_tenant`: every
        endpoint adds to what the tenant's events cost the bridge to deliver (docs/delivery.md,
        "What keeps tenants apart"). The count is read before the write, so two creates racing
        at the limit may both pass: the cap is a bound on growth, not an exact quota.
        """
        tenant_id = validate_tenant_id(tenant_id)
        url = validate_url(url, allow_http=self._allow_http_urls)
        wanted = parse_event_types(event_types)
        patterns = parse_job_names(job_names)
        description = validate_description(description)
        if self.max_per_tenant is not None and self.count(tenant_id) >= self.max_per_tenant:
            raise SubscriptionLimitError(tenant_id, self.max_per_tenant)
        now = self._now()
        subscription_id = new_subscription_id()
        data_key = self._vault.new_data_key(subscription_id)
        secret, secret_id = generate_secret(), new_secret_id()
        subscription = Subscription(
            subscription_id=subscription_id,
            tenant_id=tenant_id,
            url=url,
            event_types=wanted,
            job_names=patterns,
            description=description,
            created_at=now,
            updated_at=now,
            secrets=(
                SecretVersion(
                    secret_id=secret_id,
                    created_at=now,
                    ciphertext=self._vault.seal(data_key, subscription_id, secret_id, secret),
                ),
            ),
            data_key=data_key.encrypted,
            revision=1,
        )
        try:
            self._put(subscription, expected_revision=None)
        except _RevisionConflictError:
            # 128 random bits collided: astronomically unlikely, but never overwrite.
            raise SubscriptionConflictError(subscription_id) from None
        from jobhooks.subscriptions.results import IssuedSecret

        return IssuedSecret(subscription, secret)

    def get(self, subscription_id: str, *, tenant_id: str | None = None) -> Subscription:
        """The subscription; with `tenant_id`, another tenant's subscription is "not found"."""
        response = self._dynamodb.get_item(
            TableName=self.table_name,
            Key={"subscription_id": {"S": subscription_id}},
            ConsistentRead=True,
        )
        item = response.get("Item")
        if item is None:
            raise SubscriptionNotFoundError(subscription_id)
        subscription = _from_item(item)
        if tenant_id is not None and subscription.tenant_id != tenant_id:
            raise SubscriptionNotFoundError(subscription_id)
        return subscription

    def count(self, tenant_id: str) -> int:
        """How many subscriptions the tenant has, any status (COUNT queries: no item is read)."""
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": BY_TENANT_INDEX,
            "KeyConditionExpression": "tenant_id = :tenant",
            "ExpressionAttributeValues": {":tenant": {"S": validate_tenant_id(tenant_id)}},
            "Select": "COUNT",
        }
        return sum(
            int(response.get("Count", 0)) for response in every_page(self._dynamodb.query, request)
        )

    def list_by_tenant(
        self, tenant_id: str, *, limit: int = DEFAULT_PAGE_SIZE, cursor: str | None = None
    ) -> SubscriptionPage:
        """One page of the tenant's subscriptions; pass `next_cursor` back for the next page."""
        tenant_id = validate_tenant_id(tenant_id)
        check_page_size(limit)
        start_key = _start_key(cursor, tenant_id) if cursor else None
        found: list[Subscription] = []
        # One more than asked, so the last page says so instead of handing out a dead cursor.
        while len(found) <= limit:
            request: dict[str, Any] = {
                "TableName": self.table_name,
                "IndexName": BY_TENANT_INDEX,
                "KeyConditionExpression": "tenant_id = :tenant",
                "ExpressionAttributeValues": {":tenant": {"S": tenant_id}},
                "Limit": limit + 1 - len(found),
            }
            if start_key:
                request["ExclusiveStartKey"] = start_key
            response = self._dynamodb.query(**request)
            found.extend(_from_item(item) for item in response.get("Items", []))
            start_key = response.get("LastEvaluatedKey")
            if not start_key:
                break
        page, next_cursor = cut_page(
            found, limit, lambda last: encode_cursor({"t": tenant_id, "s": last.subscription_id})
        )
        from jobhooks.subscriptions.results import SubscriptionPage

        return SubscriptionPage(page, next_cursor)

    def matching(self, tenant_id: str, event_type: str) -> tuple[Subscription, ...]:
        """The active subscriptions of exactly `tenant_id` that want `event_type` (with
        `match_disabled`, the disabled ones too: the same Query reads them either way, since
        a filter saves no read units)."""
        wanted = parse_event_types([event_type])[0]
        cache_key = (tenant_id, wanted.value)
        if self._matching_cache is not None:
            cached = self._matching_cache.get(cache_key)
            if cached is not None:
                return cached
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": BY_TENANT_INDEX,
            "KeyConditionExpression": "tenant_id = :tenant",
            "FilterExpression": "contains(event_types, :event_type)",
            "ExpressionAttributeValues": {
                ":tenant": {"S": tenant_id},
                ":event_type": {"S": wanted.value},
            },
        }
        if not self.match_disabled:
            request["FilterExpression"] += " AND #status = :active"
            request["ExpressionAttributeNames"] = {"#status": "status"}
            request["ExpressionAttributeValues"][":active"] = {"S": SubscriptionStatus.ACTIVE.value}
        # The filter already did this; checking again in code keeps the tenant rule local.
        matches = [
            subscription
            for subscription in map(_from_item, every_item(self._dynamodb.query, request))
            if subscription.wants(tenant_id, wanted.value)
            or (
                self.match_disabled
                and subscription.tenant_id == tenant_id
                and wanted in subscription.event_types
            )
        ]
        result = tuple(sorted(matches, key=lambda subscription: subscription.created_at))
        if self._matching_cache is not None:
            self._matching_cache.put(cache_key, result)
        return result

    # -- secrets ---------------------------------------------------------------------------

    def signing_secrets(self, subscription: Subscription, now: datetime | None = None) -> list[str]:
        """The plaintext `whsec_` secrets that still sign at `now`, newest first."""
        moment = to_stored_precision(now) if now is not None else self._now()
        valid = subscription.valid_secrets(moment)
        if not valid:
            return []
        data_key = self._vault.open_data_key(subscription.subscription_id, subscription.data_key)
        return [
            open_secret(
                data_key, subscription.subscription_id, version.secret_id, version.ciphertext
            )
            for version in valid
        ]

    def rotate_secret(
        self,
        subscription_id: str,
        *,
        tenant_id: str | None = None,
        grace_seconds: float = DEFAULT_GRACE.total_seconds(),
    ) -> IssuedSecret:
        """A new current secret; the previous ones keep signing for `grace_seconds` (0 to 7 days).

        The secrets are re-sealed under a fresh data key, so rotating with grace 0 also recovers a
        subscription whose stored secrets became unreadable.
        """
        grace = validate_grace(grace_seconds)
        secret = generate_secret()

        def rotate(current: Subscription, now: datetime) -> Subscription:
            retiring = []
            for version in current.valid_secrets(now):
                end = now + grace
                if version.expires_at is not None:
                    end = min(end, version.expires_at)
                if end > now:
                    retiring.append((version, end))
            retiring = retiring[:MAX_PREVIOUS_SECRETS]
            old_key = (
                self._vault.open_data_key(current.subscription_id, current.data_key)
                if retiring
                else None
            )
            data_key = self._vault.new_data_key(current.subscription_id)
            secret_id = new_secret_id()
            versions = [
                SecretVersion(
                    secret_id=secret_id,
                    created_at=now,
                    ciphertext=self._vault.seal(data_key, subscription_id, secret_id, secret),
                )
            ]
            for version, end in retiring:
                assert old_key is not None
                plaintext = open_secret(
                    old_key, subscription_id, version.secret_id, version.ciphertext
                )
                versions.append(
                    version.model_copy(
                        update={
                            "expires_at": end,
                            "ciphertext": self._vault.seal(
                                data_key, subscription_id, version.secret_id, plaintext
                            ),
                        }
                    )
                )
            return current.model_copy(
                update={"secrets": tuple(versions), "data_key": data_key.encrypted}
            )

        from jobhooks.subscriptions.results import IssuedSecret

        return IssuedSecret(self._mutate(subscription_id, tenant_id, rotate), secret)

    # -- change ----------------------------------------------------------------------------

    def update(
        self,
        subscription_id: str,
        *,
        tenant_id: str | None = None,
        url: str | None = None,
        event_types: Iterable[str] | None = None,
        description: str | None = None,
        status: str | None = None,
        job_names: Iterable[str] | None = None,
    ) -> Subscription:
        """Change the given fields; `None` leaves a field as it is, `description=""` clears it,
        `job_names=[]` removes the job filter."""
        changes: dict[str, Any] = {}
        if job_names is not None:
            changes["job_names"] = parse_job_names(job_names)
        if url is not None:
            changes["url"] = validate_url(url, allow_http=self._allow_http_urls)
        if event_types is not None:
            changes["event_types"] = parse_event_types(event_types)
        if description is not None:
            changes["description"] = validate_description(description)
        new_status = parse_status(status) if status is not None else None

        def apply(current: Subscription, now: datetime) -> Subscription:
            update = {
                key: value for key, value in changes.items() if getattr(current, key) != value
            }
            if new_status is not None and new_status is not current.status:
                update["status"] = new_status
                update["disabled_reason"] = (
                    DISABLED_BY_TENANT if new_status is SubscriptionStatus.DISABLED else None
                )
                if new_status is SubscriptionStatus.ACTIVE:
                    # Re-enabled: its past failures no longer count (nor toward auto-disable);
                    # a notification it owes is still sent (`endpoint_health.owed`).
                    update["health"] = current.health.re_enabled()
            return current.model_copy(update=update) if update else current

        return self._mutate(subscription_id, tenant_id, apply)

    def disable(
        self, subscription_id: str, reason: str, *, tenant_id: str | None = None
    ) -> Subscription:
        """Stop deliveries (e.g. the receiver answered 410). The first reason given is kept."""
        disabled = self.disable_once(subscription_id, reason, tenant_id=tenant_id)
        return disabled if disabled is not None else self.get(subscription_id, tenant_id=tenant_id)

    def disable_once(
        self,
        subscription_id: str,
        reason: str,
        *,
        tenant_id: str | None = None,
        while_failing_since: datetime | None = None,
    ) -> Subscription | None:
        """Disable an active subscription: the disabled subscription when this call disabled
        it, None when it was disabled already (a concurrent 410, an operator), so exactly one
        caller notifies `endpoint.disabled`. `while_failing_since`: only while its endpoint's
        run of failures is still the one that began then (the sustained-failure rule)."""
        stored_reason = bounded_reason(reason) or "disabled"
        made: list[bool] = [False]

        def apply(current: Subscription, now: datetime) -> Subscription:
            made[0] = False
            if current.status is SubscriptionStatus.DISABLED:
                return current
            if (
                while_failing_since is not None
                and current.health.failing_since != while_failing_since
            ):
                return current  # a success ended that run meanwhile
            made[0] = True
            return current.model_copy(
                update={"status": SubscriptionStatus.DISABLED, "disabled_reason": stored_reason}
            )

        subscription = self._mutate(subscription_id, tenant_id, apply)
        return subscription if made[0] else None

    def owe(self, subscription_id: str, notification: OwedNotification) -> bool:
        """Keep a notification that could not be sent on the subscription's item
        (`endpoint_health.owed`), as `HealthRecords.owe` does, with the whole-item write the
        management functions are granted; False when the subscription no longer exists."""

        def apply(current: Subscription, now: datetime) -> Subscription:
            return current.model_copy(update={"health": current.health.owing(notification)})

        try:
            self._mutate(subscription_id, None, apply, touch=False)
        except SubscriptionNotFoundError:
            return False
        return True

    def sent_owed(self, subscription_id: str, notification: OwedNotification) -> bool:
        """Remove a notification sent at last; False when it was not kept (any more)."""
        removed = [False]

        def apply(current: Subscription, now: datetime) -> Subscription:
            removed[0] = notification in current.health.owed
            if not removed[0]:
                return current
            return current.model_copy(update={"health": current.health.sent(notification)})

        try:
            self._mutate(subscription_id, None, apply, touch=False)
        except SubscriptionNotFoundError:
            return False
        return removed[0]

    def enable(self, subscription_id: str, *, tenant_id: str | None = None) -> Subscription:
        return self.update(
            subscription_id, tenant_id=tenant_id, status=SubscriptionStatus.ACTIVE.value
        )

    def delete(self, subscription_id: str, *, tenant_id: str | None = None) -> None:
        condition = "attribute_exists(subscription_id)"
        values: dict[str, Any] = {}
        if tenant_id is not None:
            condition += " AND tenant_id = :tenant"
            values[":tenant"] = {"S": tenant_id}
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": {"subscription_id": {"S": subscription_id}},
            "ConditionExpression": condition,
        }
        if values:
            request["ExpressionAttributeValues"] = values
        try:
            self._dynamodb.delete_item(**request)
        except ClientError as error:
            if is_condition_failure(error):
                raise SubscriptionNotFoundError(subscription_id) from None
            raise
        self._forget_matches()

    # -- internals -------------------------------------------------------------------------

    def _now(self) -> datetime:
        return to_stored_precision(self._clock())

    def _mutate(
        self,
        subscription_id: str,
        tenant_id: str | None,
        change: Callable[[Subscription, datetime], Subscription],
        *,
        touch: bool = True,
    ) -> Subscription:
        """`touch=False`: a write of the endpoint's health, not of the subscription: its
        `updated_at` stays."""
        for _ in range(_WRITE_ATTEMPTS):
            current = self.get(subscription_id, tenant_id=tenant_id)
            now = self._now()
            changed = change(current, now)
            if changed is current:
                return current
            changed = changed.model_copy(
                update={
                    # Expired secrets are dropped by whichever write comes next.
                    "secrets": tuple(s for s in changed.secrets if s.is_valid_at(now)),
                    "updated_at": max(now, current.updated_at) if touch else current.updated_at,
                    "revision": current.revision + 1,
                }
            )
            try:
                self._put(changed, expected_revision=current.revision)
            except _RevisionConflictError:
                continue
            self._forget_matches()
            return changed
        raise SubscriptionConflictError(subscription_id)

    def _put(self, subscription: Subscription, *, expected_revision: int | None) -> None:
        request: dict[str, Any] = {"TableName": self.table_name, "Item": _to_item(subscription)}
        if expected_revision is None:
            request["ConditionExpression"] = "attribute_not_exists(subscription_id)"
        else:
            request["ConditionExpression"] = "revision = :expected"
            request["ExpressionAttributeValues"] = {":expected": {"N": str(expected_revision)}}
        try:
            self._dynamodb.put_item(**request)
        except ClientError as error:
            if is_condition_failure(error):
                raise _RevisionConflictError() from None
            raise

    def _forget_matches(self) -> None:
        if self._matching_cache is not None:
            self._matching_cache.clear()


class _MatchingCache:
    """`matching()` results for a few seconds: most fan-outs hit the same tenant and type."""

    def __init__(self, ttl_seconds: float, monotonic: Callable[[], float]) -> None:
        self._ttl = ttl_seconds
        self._monotonic = monotonic
        self._entries: dict[tuple[str, str], tuple[float, tuple[Subscription, ...]]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> tuple[Subscription, ...] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires, value = entry
            if self._monotonic() >= expires:
                del self._entries[key]
                return None
            return value

    def put(self, key: tuple[str, str], value: tuple[Subscription, ...]) -> None:
        with self._lock:
            if len(self._entries) >= _MATCHING_CACHE_ENTRIES:
                self._entries.clear()
            self._entries[key] = (self._monotonic() + self._ttl, value)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


# -- item codec --------------------------------------------------------------------------------


def _to_item(subscription: Subscription) -> dict[str, Any]:
    item: dict[str, Any] = {
        "subscription_id": {"S": subscription.subscription_id},
        "tenant_id": {"S": subscription.tenant_id},
        "url": {"S": subscription.url},
        "event_types": {"L": [{"S": event_type.value} for event_type in subscription.event_types]},
        "status": {"S": subscription.status.value},
        "data_key": {"B": subscription.data_key},
        "secrets": {"L": [{"M": _secret_to_map(secret)} for secret in subscription.secrets]},
        "created_at": {"S": format_time(subscription.created_at)},
        "updated_at": {"S": format_time(subscription.updated_at)},
        "revision": {"N": str(subscription.revision)},
    }
    if subscription.job_names:
        item["job_names"] = {"L": [{"S": pattern} for pattern in subscription.job_names]}
    if subscription.description is not None:
        item["description"] = {"S": subscription.description}
    if subscription.disabled_reason is not None:
        item["disabled_reason"] = {"S": subscription.disabled_reason}
    # Written back as read: `_mutate`'s revision check keeps a concurrent health write.
    item.update(health_attributes(subscription.health))
    return item


def _secret_to_map(secret: SecretVersion) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "secret_id": {"S": secret.secret_id},
        "ciphertext": {"B": secret.ciphertext},
        "created_at": {"S": format_time(secret.created_at)},
    }
    if secret.expires_at is not None:
        attributes["expires_at"] = {"S": format_time(secret.expires_at)}
    return attributes


def subscription_from_item(item: dict[str, Any]) -> Subscription:
    """A whole subscription item (as GetItem, or an UpdateItem's ALL_NEW, returns it)."""
    return _from_item(item)


def _from_item(item: dict[str, Any]) -> Subscription:
    return Subscription(
        subscription_id=item["subscription_id"]["S"],
        tenant_id=item["tenant_id"]["S"],
        url=item["url"]["S"],
        event_types=tuple(EventType(value["S"]) for value in item["event_types"]["L"]),
        job_names=tuple(value["S"] for value in item.get("job_names", {}).get("L", [])),
        status=SubscriptionStatus(item["status"]["S"]),
        description=item["description"]["S"] if "description" in item else None,
        created_at=parse_time(item["created_at"]["S"]),
        updated_at=parse_time(item["updated_at"]["S"]),
        disabled_reason=item["disabled_reason"]["S"] if "disabled_reason" in item else None,
        secrets=tuple(_secret_from_map(value["M"]) for value in item["secrets"]["L"]),
        data_key=bytes(item["data_key"]["B"]),
        revision=int(item["revision"]["N"]),
        health=health_from_item(item),
    )


def _secret_from_map(attributes: dict[str, Any]) -> SecretVersion:
    return SecretVersion(
        secret_id=attributes["secret_id"]["S"],
        ciphertext=bytes(attributes["ciphertext"]["B"]),
        created_at=parse_time(attributes["created_at"]["S"]),
        expires_at=(
            parse_time(attributes["expires_at"]["S"]) if "expires_at" in attributes else None
        ),
    )


def _start_key(cursor: str, tenant_id: str) -> dict[str, Any]:
    document = decode_cursor(
        cursor, bound={"t": tenant_id}, fields={"s": _SUBSCRIPTION_ID}, scope=CURSOR_SCOPE
    )
    return {"tenant_id": {"S": tenant_id}, "subscription_id": {"S": document["s"]}}
