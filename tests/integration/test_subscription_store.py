"""The subscription store against moto's server: DynamoDB (SubscriptionsTable) and KMS."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from jobhooks.storage.exceptions import InvalidCursorError, InvalidPageSizeError
from jobhooks.subscriptions import (
    EventType,
    InvalidDescriptionError,
    InvalidEventTypeError,
    InvalidGracePeriodError,
    InvalidJobNamePatternError,
    InvalidStatusError,
    InvalidTenantIdError,
    InvalidUrlError,
    SecretDecryptionError,
    Subscription,
    SubscriptionNotFoundError,
    SubscriptionStatus,
)
from jobhooks.subscriptions.store import IssuedSecret, SubscriptionStore
from jobhooks.webhook_signature import webhook_headers
from jobhooks_tools.local.moto_server import MotoServer
from standardwebhooks.webhooks import Webhook

TABLE = "jobhooks-test-subscriptions"
T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def create_subscriptions_table(dynamodb: Any, table_name: str = TABLE) -> None:
    """SubscriptionsTable as docs/architecture.md fixes it; template.yaml owns the real one."""
    dynamodb.create_table(
        TableName=table_name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "subscription_id", "AttributeType": "S"},
            {"AttributeName": "tenant_id", "AttributeType": "S"},
        ],
        KeySchema=[{"AttributeName": "subscription_id", "KeyType": "HASH"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_tenant",
                "KeySchema": [
                    {"AttributeName": "tenant_id", "KeyType": "HASH"},
                    {"AttributeName": "subscription_id", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )


class FakeClock:
    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@dataclass
class Local:
    dynamodb: Any
    kms: Any
    kms_key_id: str
    clock: FakeClock

    def store(self, **options: Any) -> SubscriptionStore:
        options.setdefault("kms_key_id", self.kms_key_id)
        options.setdefault("clock", self.clock)
        return SubscriptionStore(TABLE, self.dynamodb, self.kms, **options)

    def raw_item(self, subscription_id: str) -> dict[str, Any]:
        item: dict[str, Any] = self.dynamodb.get_item(
            TableName=TABLE, Key={"subscription_id": {"S": subscription_id}}
        )["Item"]
        return item

    def put_raw_item(self, item: dict[str, Any]) -> None:
        self.dynamodb.put_item(TableName=TABLE, Item=item)


@pytest.fixture
def local(aws: MotoServer) -> Local:
    dynamodb = boto3.client("dynamodb")
    kms = boto3.client("kms")
    create_subscriptions_table(dynamodb)
    key_id = kms.create_key(Description="jobhooks subscription secrets")["KeyMetadata"]["KeyId"]
    return Local(dynamodb, kms, key_id, FakeClock())


@pytest.fixture
def store(local: Local) -> SubscriptionStore:
    return local.store()


def _add(store: SubscriptionStore, tenant: str = "acme", **fields: Any) -> IssuedSecret:
    fields.setdefault("url", "https://hooks.example.com/fetcher")
    return store.create(tenant, **fields)


# -- round trip ----------------------------------------------------------------------------


def test_create_get_list_update_delete_round_trip(store: SubscriptionStore, local: Local) -> None:
    issued = store.create(
        "acme",
        "https://hooks.example.com/fetcher",
        ["job.failed"],
        description="pager alerts",
    )
    created = issued.subscription
    assert created.subscription_id.startswith("sub_")
    assert created.tenant_id == "acme"
    assert created.event_types == (EventType.JOB_FAILED,)
    assert created.status is SubscriptionStatus.ACTIVE
    assert created.created_at == created.updated_at == T0
    assert created.disabled_reason is None
    assert store.get(created.subscription_id) == created

    listed = store.list_by_tenant("acme")
    assert listed.subscriptions == (created,)
    assert listed.next_cursor is None

    local.clock.advance(minutes=5)
    updated = store.update(
        created.subscription_id,
        tenant_id="acme",
        url="https://hooks.example.com/v2",
        event_types=["job.completed", "job.failed"],
        description="",
    )
    assert updated.url == "https://hooks.example.com/v2"
    assert updated.event_types == (EventType.JOB_COMPLETED, EventType.JOB_FAILED)
    assert updated.description is None
    assert updated.updated_at == T0 + timedelta(minutes=5)
    assert updated.created_at == T0
    assert store.get(created.subscription_id) == updated

    store.delete(created.subscription_id, tenant_id="acme")
    with pytest.raises(SubscriptionNotFoundError) as caught:
        store.get(created.subscription_id)
    assert caught.value.code == "subscription_not_found"
    assert store.list_by_tenant("acme").subscriptions == ()


def test_subscription_ids_are_url_safe_and_distinct(store: SubscriptionStore) -> None:
    ids = {_add(store).subscription.subscription_id for _ in range(5)}
    assert len(ids) == 5
    for subscription_id in ids:
        suffix = subscription_id.removeprefix("sub_")
        assert suffix and all(char.isalnum() or char in "-_" for char in suffix)


def test_create_wants_every_event_type_by_default(store: SubscriptionStore) -> None:
    assert _add(store).subscription.event_types == (EventType.JOB_COMPLETED, EventType.JOB_FAILED)


def test_create_returns_a_secret_that_later_signs(store: SubscriptionStore) -> None:
    issued = _add(store)
    assert issued.secret.startswith("whsec_")
    assert len(base64.b64decode(issued.secret.removeprefix("whsec_"))) == 32
    stored = store.get(issued.subscription.subscription_id)
    assert store.signing_secrets(stored) == [issued.secret]


def test_reading_secrets_needs_no_kms_key_id(store: SubscriptionStore, local: Local) -> None:
    issued = _add(store)
    deliver_side = local.store(kms_key_id=None)
    subscription = deliver_side.get(issued.subscription.subscription_id)
    assert deliver_side.signing_secrets(subscription) == [issued.secret]


def test_another_tenant_sees_not_found(store: SubscriptionStore) -> None:
    subscription_id = _add(store, "acme").subscription.subscription_id
    with pytest.raises(SubscriptionNotFoundError):
        store.get(subscription_id, tenant_id="globex")
    with pytest.raises(SubscriptionNotFoundError):
        store.update(subscription_id, tenant_id="globex", description="mine now")
    with pytest.raises(SubscriptionNotFoundError):
        store.rotate_secret(subscription_id, tenant_id="globex")
    with pytest.raises(SubscriptionNotFoundError):
        store.delete(subscription_id, tenant_id="globex")
    assert store.get(subscription_id, tenant_id="acme").description is None


def test_unknown_subscription_is_not_found(store: SubscriptionStore) -> None:
    for operation in (
        lambda: store.get("sub_missing"),
        lambda: store.update("sub_missing", description="x"),
        lambda: store.disable("sub_missing", "gone"),
        lambda: store.rotate_secret("sub_missing"),
        lambda: store.delete("sub_missing"),
    ):
        with pytest.raises(SubscriptionNotFoundError):
            operation()


# -- pagination ----------------------------------------------------------------------------


def test_lists_a_tenant_page_by_page(store: SubscriptionStore) -> None:
    mine = {_add(store, "acme").subscription.subscription_id for _ in range(5)}
    _add(store, "globex")
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = store.list_by_tenant("acme", limit=2, cursor=cursor)
        pages += 1
        assert len(page.subscriptions) <= 2
        seen.extend(subscription.subscription_id for subscription in page.subscriptions)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == 3
    assert sorted(seen) == sorted(mine)


def test_the_last_full_page_has_no_cursor(store: SubscriptionStore) -> None:
    for _ in range(2):
        _add(store)
    page = store.list_by_tenant("acme", limit=2)
    assert len(page.subscriptions) == 2
    assert page.next_cursor is None


def test_rejects_a_cursor_of_another_tenant_or_garbage(store: SubscriptionStore) -> None:
    for _ in range(3):
        _add(store, "acme")
    cursor = store.list_by_tenant("acme", limit=1).next_cursor
    assert cursor is not None
    for bad in (cursor, "not-a-cursor", "e30"):
        with pytest.raises(InvalidCursorError) as caught:
            store.list_by_tenant("globex", cursor=bad)
        assert caught.value.code == "invalid_cursor"


@pytest.mark.parametrize("limit", [0, 101, -1])
def test_rejects_out_of_range_page_size(store: SubscriptionStore, limit: int) -> None:
    with pytest.raises(InvalidPageSizeError):
        store.list_by_tenant("acme", limit=limit)


# -- secrets never leak --------------------------------------------------------------------


def _secret_forms(secret: str) -> list[bytes]:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    return [secret.encode(), secret.removeprefix("whsec_").encode(), key]


def test_plaintext_secret_is_not_in_the_stored_item(store: SubscriptionStore, local: Local) -> None:
    issued = _add(store)
    rotated = store.rotate_secret(issued.subscription.subscription_id)
    raw_items = local.dynamodb.scan(TableName=TABLE)["Items"]
    assert len(raw_items) == 1
    dumped = repr(raw_items).encode()
    blobs = [raw_items[0]["data_key"]["B"]] + [
        secret["M"]["ciphertext"]["B"] for secret in raw_items[0]["secrets"]["L"]
    ]
    for secret in (issued.secret, rotated.secret):
        for form in _secret_forms(secret):
            assert form not in dumped
            assert all(form not in blob for blob in blobs)


def test_plaintext_secret_is_not_in_repr_or_dump(store: SubscriptionStore) -> None:
    issued = _add(store)
    subscription = store.get(issued.subscription.subscription_id)
    texts = [
        repr(issued),
        str(issued),
        repr(subscription),
        repr(subscription.model_dump()),
        subscription.model_dump_json(),
        repr(store.list_by_tenant("acme")),
    ]
    for text in texts:
        for form in _secret_forms(issued.secret):
            assert form.decode("latin-1") not in text
    dumped = subscription.model_dump()
    assert "data_key" not in dumped
    assert "revision" not in dumped
    assert all(
        set(secret) == {"secret_id", "created_at", "expires_at"} for secret in dumped["secrets"]
    )


def test_tampered_ciphertext_fails_to_decrypt(store: SubscriptionStore, local: Local) -> None:
    issued = _add(store)
    item = local.raw_item(issued.subscription.subscription_id)
    ciphertext = bytearray(item["secrets"]["L"][0]["M"]["ciphertext"]["B"])
    ciphertext[-1] ^= 0x80
    item["secrets"]["L"][0]["M"]["ciphertext"]["B"] = bytes(ciphertext)
    local.put_raw_item(item)
    tampered = store.get(issued.subscription.subscription_id)
    with pytest.raises(SecretDecryptionError) as caught:
        store.signing_secrets(tampered)
    assert caught.value.code == "secret_unreadable"
    assert issued.secret not in str(caught.value)


def test_ciphertext_moved_to_another_subscription_fails_to_decrypt(
    store: SubscriptionStore, local: Local
) -> None:
    victim = _add(store, "acme").subscription.subscription_id
    attacker = _add(store, "globex").subscription.subscription_id
    victim_item, attacker_item = local.raw_item(victim), local.raw_item(attacker)

    # The ciphertext alone, under the attacker's own data key.
    moved = dict(attacker_item, secrets=victim_item["secrets"])
    local.put_raw_item(moved)
    with pytest.raises(SecretDecryptionError):
        store.signing_secrets(store.get(attacker))

    # The ciphertext together with the victim's data key: KMS's encryption context refuses it,
    # in a process whose cache has never seen the key and in this one, whose cache has.
    moved = dict(attacker_item, secrets=victim_item["secrets"], data_key=victim_item["data_key"])
    local.put_raw_item(moved)
    for reader in (local.store(), store):
        with pytest.raises(SecretDecryptionError):
            reader.signing_secrets(reader.get(attacker))


# -- rotation ------------------------------------------------------------------------------


def test_rotation_signs_with_both_secrets_until_the_grace_period_ends(
    store: SubscriptionStore, local: Local
) -> None:
    issued = _add(store)
    subscription_id = issued.subscription.subscription_id
    local.clock.advance(hours=1)
    rotated = store.rotate_secret(subscription_id, grace_seconds=3600)
    assert rotated.secret != issued.secret
    subscription = store.get(subscription_id)
    assert subscription == rotated.subscription

    rotated_at = T0 + timedelta(hours=1)
    just_before_end = rotated_at + timedelta(seconds=3599)
    assert store.signing_secrets(subscription, rotated_at) == [rotated.secret, issued.secret]
    assert store.signing_secrets(subscription, just_before_end) == [rotated.secret, issued.secret]
    assert store.signing_secrets(subscription, rotated_at + timedelta(seconds=3600)) == [
        rotated.secret
    ]
    assert store.signing_secrets(subscription, rotated_at + timedelta(days=3)) == [rotated.secret]


def test_receivers_holding_either_secret_verify_during_the_grace_period(
    store: SubscriptionStore,
) -> None:
    issued = _add(store)
    rotated = store.rotate_secret(issued.subscription.subscription_id, grace_seconds=3600)
    body = b'{"type":"job.completed"}'
    timestamp = int(datetime.now(UTC).timestamp())
    signing = store.signing_secrets(rotated.subscription, T0 + timedelta(minutes=1))
    headers = webhook_headers("msg_1", timestamp, body, signing)
    for secret in (issued.secret, rotated.secret):
        Webhook(secret).verify(body, headers)


def test_rotation_grace_defaults_to_a_day(store: SubscriptionStore) -> None:
    issued = _add(store)
    rotated = store.rotate_secret(issued.subscription.subscription_id)
    old = [s for s in rotated.subscription.secrets if s.expires_at is not None]
    assert [s.expires_at for s in old] == [T0 + timedelta(hours=24)]


def test_rotation_with_zero_grace_retires_the_old_secret_at_once(store: SubscriptionStore) -> None:
    issued = _add(store)
    rotated = store.rotate_secret(issued.subscription.subscription_id, grace_seconds=0)
    assert len(rotated.subscription.secrets) == 1
    assert store.signing_secrets(rotated.subscription, T0) == [rotated.secret]


def test_rotation_never_extends_an_earlier_expiry(store: SubscriptionStore, local: Local) -> None:
    first = _add(store)
    subscription_id = first.subscription.subscription_id
    second = store.rotate_secret(subscription_id, grace_seconds=600)
    local.clock.advance(seconds=60)
    third = store.rotate_secret(subscription_id, grace_seconds=7 * 86400)
    expiry = {s.secret_id: s.expires_at for s in third.subscription.secrets}
    assert sorted(expiry.values(), key=str) == sorted(
        [None, T0 + timedelta(seconds=600), T0 + timedelta(seconds=60, days=7)], key=str
    )
    at = T0 + timedelta(seconds=601)
    assert store.signing_secrets(third.subscription, at) == [third.secret, second.secret]


def test_expired_secrets_are_pruned_on_the_next_write(
    store: SubscriptionStore, local: Local
) -> None:
    issued = _add(store)
    subscription_id = issued.subscription.subscription_id
    store.rotate_secret(subscription_id, grace_seconds=60)
    assert len(local.raw_item(subscription_id)["secrets"]["L"]) == 2
    local.clock.advance(seconds=61)
    store.update(subscription_id, description="after the grace period")
    assert len(local.raw_item(subscription_id)["secrets"]["L"]) == 1


def test_rotation_keeps_at_most_ten_previous_secrets(store: SubscriptionStore) -> None:
    issued = _add(store)
    for _ in range(12):
        latest = store.rotate_secret(issued.subscription.subscription_id)
    assert len(latest.subscription.secrets) == 11
    secrets = store.signing_secrets(latest.subscription)
    assert secrets[0] == latest.secret
    assert issued.secret not in secrets


@pytest.mark.parametrize("grace", [-1, 7 * 86400 + 1, float("nan"), True])
def test_rejects_invalid_grace_period(store: SubscriptionStore, grace: float) -> None:
    issued = _add(store)
    with pytest.raises(InvalidGracePeriodError) as caught:
        store.rotate_secret(issued.subscription.subscription_id, grace_seconds=grace)
    assert caught.value.code == "invalid_grace_period"
    assert (
        "between 0 and 604800 seconds" in caught.value.message or "number" in caught.value.message
    )


def test_rotation_accepts_the_full_seven_days(store: SubscriptionStore) -> None:
    issued = _add(store)
    store.rotate_secret(issued.subscription.subscription_id, grace_seconds=7 * 86400)


def test_rotation_with_zero_grace_recovers_unreadable_secrets(
    store: SubscriptionStore, local: Local
) -> None:
    issued = _add(store)
    subscription_id = issued.subscription.subscription_id
    item = local.raw_item(subscription_id)
    item["secrets"]["L"][0]["M"]["ciphertext"]["B"] = b"\x01" + b"\x00" * 60
    local.put_raw_item(item)
    with pytest.raises(SecretDecryptionError):
        store.rotate_secret(subscription_id, grace_seconds=60)
    rotated = store.rotate_secret(subscription_id, grace_seconds=0)
    assert store.signing_secrets(store.get(subscription_id)) == [rotated.secret]


# -- status --------------------------------------------------------------------------------


def test_disable_records_the_first_reason_and_enable_clears_it(
    store: SubscriptionStore, local: Local
) -> None:
    subscription_id = _add(store).subscription.subscription_id
    disabled = store.disable(subscription_id, "receiver answered 410 Gone")
    assert disabled.status is SubscriptionStatus.DISABLED
    assert disabled.disabled_reason == "receiver answered 410 Gone"
    again = store.disable(subscription_id, "another 410")
    assert again.disabled_reason == "receiver answered 410 Gone"
    assert again.revision == disabled.revision

    enabled = store.enable(subscription_id)
    assert enabled.status is SubscriptionStatus.ACTIVE
    assert enabled.disabled_reason is None
    assert "disabled_reason" not in local.raw_item(subscription_id)


def test_update_can_disable_and_enable(store: SubscriptionStore) -> None:
    subscription_id = _add(store).subscription.subscription_id
    disabled = store.update(subscription_id, status="disabled")
    assert disabled.status is SubscriptionStatus.DISABLED
    assert disabled.disabled_reason == "disabled by the tenant"
    assert store.update(subscription_id, status="active").status is SubscriptionStatus.ACTIVE


def test_a_long_disable_reason_is_cut(store: SubscriptionStore) -> None:
    subscription_id = _add(store).subscription.subscription_id
    disabled = store.disable(subscription_id, "x" * 5000)
    assert disabled.disabled_reason is not None
    assert len(disabled.disabled_reason) == 512


# -- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "error", "code"),
    [
        ({"event_types": ["job.started"]}, InvalidEventTypeError, "invalid_event_type"),
        ({"event_types": []}, InvalidEventTypeError, "invalid_event_type"),
        ({"url": "http://hooks.example.com/"}, InvalidUrlError, "invalid_url"),
        ({"url": "ftp://hooks.example.com/"}, InvalidUrlError, "invalid_url"),
        ({"url": "https://user:pw@hooks.example.com/"}, InvalidUrlError, "invalid_url"),
        ({"url": "https:///path"}, InvalidUrlError, "invalid_url"),
        ({"url": "https://hooks.example.com/a b"}, InvalidUrlError, "invalid_url"),
        ({"url": "https://hooks.example.com:99999/"}, InvalidUrlError, "invalid_url"),
        ({"url": "https://hooks.example.com/#frag"}, InvalidUrlError, "invalid_url"),
        ({"url": "https://h.example.com/" + "a" * 2048}, InvalidUrlError, "invalid_url"),
        ({"description": "d" * 513}, InvalidDescriptionError, "invalid_description"),
    ],
)
def test_create_rejects_invalid_input_with_a_stable_code(
    store: SubscriptionStore, fields: dict[str, Any], error: type[Exception], code: str
) -> None:
    with pytest.raises(error) as caught:
        _add(store, **fields)
    assert getattr(caught.value, "code", None) == code
    assert store.list_by_tenant("acme").subscriptions == ()


def test_unknown_event_type_error_names_the_allowed_ones(store: SubscriptionStore) -> None:
    with pytest.raises(InvalidEventTypeError) as caught:
        _add(store, event_types=["job.completed", "job.started"])
    assert "'job.started'" in caught.value.message
    assert "job.completed, job.failed" in caught.value.message


@pytest.mark.parametrize("tenant", ["", "a" * 257, "acme\n"])
def test_create_rejects_invalid_tenant_id(store: SubscriptionStore, tenant: str) -> None:
    with pytest.raises(InvalidTenantIdError):
        _add(store, tenant)


def test_update_validates_before_writing(store: SubscriptionStore) -> None:
    created = _add(store).subscription
    with pytest.raises(InvalidEventTypeError):
        store.update(created.subscription_id, url="https://new.example.com/", event_types=["x"])
    with pytest.raises(InvalidStatusError) as caught:
        store.update(created.subscription_id, status="paused")
    assert caught.value.code == "invalid_status"
    assert store.get(created.subscription_id) == created


def test_a_local_store_may_allow_http_urls(local: Local) -> None:
    local_store = local.store(allow_http_urls=True)
    issued = local_store.create("acme", "http://127.0.0.1:8080/hooks")
    assert issued.subscription.url == "http://127.0.0.1:8080/hooks"


# -- concurrency ---------------------------------------------------------------------------


class InterleavingDynamoDB:
    """A DynamoDB client that runs `interloper` once, just before the first PutItem."""

    def __init__(self, client: Any, interloper: Callable[[], object]) -> None:
        self._client = client
        self._interloper: Callable[[], object] | None = interloper
        self.put_calls = 0

    def put_item(self, **request: Any) -> Any:
        self.put_calls += 1
        if self._interloper is not None:
            interloper, self._interloper = self._interloper, None
            interloper()
        return self._client.put_item(**request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def test_a_change_racing_another_is_reapplied_not_lost(
    store: SubscriptionStore, local: Local
) -> None:
    subscription_id = _add(store).subscription.subscription_id
    other_process = local.store()
    racing = InterleavingDynamoDB(
        local.dynamodb, lambda: other_process.disable(subscription_id, "receiver answered 410")
    )
    rotating = SubscriptionStore(
        TABLE, racing, local.kms, kms_key_id=local.kms_key_id, clock=local.clock
    )
    rotated = rotating.rotate_secret(subscription_id, grace_seconds=60)
    assert racing.put_calls == 2
    final = store.get(subscription_id)
    assert final.status is SubscriptionStatus.DISABLED
    assert final.disabled_reason == "receiver answered 410"
    assert store.signing_secrets(final)[0] == rotated.secret
    assert final.revision == 3  # created, disabled, rotated


# -- matching ------------------------------------------------------------------------------


def _ids(subscriptions: tuple[Subscription, ...]) -> set[str]:
    return {subscription.subscription_id for subscription in subscriptions}


def test_matching_respects_tenant_event_type_and_status(store: SubscriptionStore) -> None:
    both = _add(store, "acme").subscription.subscription_id
    completed = _add(store, "acme", event_types=["job.completed"]).subscription.subscription_id
    failed = _add(store, "acme", event_types=["job.failed"]).subscription.subscription_id
    disabled = _add(store, "acme").subscription.subscription_id
    store.disable(disabled, "receiver answered 410")
    _add(store, "globex")

    assert _ids(store.matching("acme", "job.completed")) == {both, completed}
    assert _ids(store.matching("acme", "job.failed")) == {both, failed}
    assert store.matching("initech", "job.completed") == ()


def test_ingests_matching_finds_disabled_subscriptions_too_and_only_the_tenants(
    store: SubscriptionStore, local: Local
) -> None:
    active = _add(store, "acme").subscription.subscription_id
    disabled = _add(store, "acme").subscription.subscription_id
    store.disable(disabled, "receiver answered 410")
    unwanted = _add(store, "acme", event_types=["job.failed"]).subscription.subscription_id
    store.disable(unwanted, "disabled by the tenant")
    _add(store, "globex")
    ingests = local.store(match_disabled=True)

    matched = ingests.matching("acme", "job.completed")

    assert _ids(matched) == {active, disabled}
    assert {s.subscription_id: s.is_active for s in matched} == {active: True, disabled: False}
    assert _ids(ingests.matching("acme", "job.failed")) == {active, disabled, unwanted}
    assert _ids(store.matching("acme", "job.failed")) == {active}


def test_matching_for_one_tenant_never_returns_another_tenants(store: SubscriptionStore) -> None:
    tenants = ["acme", "acme2", "Acme", "acme ", "globex", "single-tenant"]
    owned = {tenant: _add(store, tenant).subscription.subscription_id for tenant in tenants}
    for tenant in tenants:
        for event_type in ("job.completed", "job.failed"):
            matched = store.matching(tenant, event_type)
            assert _ids(matched) == {owned[tenant]}
            assert all(subscription.tenant_id == tenant for subscription in matched)


def test_matching_rejects_an_unknown_event_type(store: SubscriptionStore) -> None:
    with pytest.raises(InvalidEventTypeError):
        store.matching("acme", "job.started")


def test_matching_cache_is_off_by_default(store: SubscriptionStore, local: Local) -> None:
    assert store.matching("acme", "job.failed") == ()
    _add(local.store(), "acme")
    assert len(store.matching("acme", "job.failed")) == 1


def test_matching_cache_serves_for_its_ttl(local: Local) -> None:
    ticks = [0.0]
    cached = local.store(matching_cache_seconds=30, monotonic=lambda: ticks[0])
    writer = local.store()
    assert cached.matching("acme", "job.failed") == ()
    _add(writer, "acme")
    ticks[0] = 29.9
    assert cached.matching("acme", "job.failed") == ()
    ticks[0] = 30.0
    assert len(cached.matching("acme", "job.failed")) == 1


def test_matching_cache_forgets_after_its_own_writes(local: Local) -> None:
    cached = local.store(matching_cache_seconds=30, monotonic=lambda: 0.0)
    subscription_id = _add(cached, "acme").subscription.subscription_id
    assert len(cached.matching("acme", "job.failed")) == 1
    cached.disable(subscription_id, "receiver answered 410")
    assert cached.matching("acme", "job.failed") == ()


# -- job filters and notification types ------------------------------------------------------


def test_job_name_patterns_round_trip_and_clear(store: SubscriptionStore) -> None:
    created = _add(store, job_names=["billing-*", "audit", "billing-*", ""]).subscription
    assert created.job_names == ("billing-*", "audit")
    assert store.get(created.subscription_id).job_names == ("billing-*", "audit")
    assert store.list_by_tenant("acme").subscriptions[0].job_names == ("billing-*", "audit")

    changed = store.update(created.subscription_id, job_names=["nightly-?"])
    assert store.get(created.subscription_id).job_names == changed.job_names == ("nightly-?",)
    untouched = store.update(created.subscription_id, description="kept filter")
    assert untouched.job_names == ("nightly-?",)
    cleared = store.update(created.subscription_id, job_names=[])
    assert store.get(created.subscription_id).job_names == cleared.job_names == ()


@pytest.mark.parametrize(
    "patterns",
    [["x" * 129], ["bad\nname"], [f"job-{n}" for n in range(21)]],
    ids=["too-long", "control-character", "too-many"],
)
def test_rejects_bad_job_name_patterns_with_a_stable_code(
    store: SubscriptionStore, patterns: list[str]
) -> None:
    with pytest.raises(InvalidJobNamePatternError) as caught:
        _add(store, job_names=patterns)
    assert caught.value.code == "invalid_job_name_pattern"
    assert caught.value.field == "job_names"
    assert store.list_by_tenant("acme").subscriptions == ()


def test_notification_types_are_asked_for_never_given_by_default(
    store: SubscriptionStore,
) -> None:
    default = _add(store).subscription
    notified = _add(store, event_types=["job_health.degraded", "endpoint.disabled"]).subscription
    assert default.event_types == (EventType.JOB_COMPLETED, EventType.JOB_FAILED)
    assert notified.event_types == (EventType.ENDPOINT_DISABLED, EventType.JOB_HEALTH_DEGRADED)
    assert store.matching("acme", "job_health.degraded") == (notified,)
    assert store.matching("acme", "job.completed") == (default,)
