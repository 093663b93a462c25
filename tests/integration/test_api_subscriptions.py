"""The management API's subscription routes, in process, against moto's server (`stack`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import datetime, timedelta
from types import ModuleType

import boto3
import pytest
from jobhooks.management.context import ManagementContext
from jobhooks.storage.times import to_stored_precision
from jobhooks.subscriptions.store import SubscriptionStore
from jobhooks_tools.local.template import LocalResources

from tests.integration.api_support import (
    PUBLIC_ADDRESS,
    FakeClock,
    FakeResolver,
    InProcessApi,
    use_context,
)

HOSTILE_URLS = [
    "https://127.0.0.1",
    "https://localhost",
    "https://10.0.0.1",
    "https://172.16.0.1",
    "https://192.168.1.1",
    "https://169.254.169.254",
    "https://100.64.0.1",
    "https://0.0.0.0",
    "https://[::1]",
    "https://[fd00::1]",
    "https://[fe80::1]",
    "https://[::ffff:127.0.0.1]",
    "https://[64:ff9b::a9fe:a9fe]",
    "https://2130706433",
    "https://0x7f.0.0.1",
    "http://example.com",
]


@pytest.fixture
def api() -> InProcessApi:
    return InProcessApi()


@pytest.fixture
def resolver() -> FakeResolver:
    return FakeResolver({"rebind.example.net": [PUBLIC_ADDRESS, "10.1.2.3"]})


@pytest.fixture
def context(
    stack: LocalResources, api: InProcessApi, resolver: FakeResolver
) -> Iterator[ManagementContext]:
    with use_context(api.module, resolver=resolver) as context:
        yield context


@pytest.fixture
def offline_context(
    api: InProcessApi, resolver: FakeResolver, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ManagementContext]:
    """A context whose AWS resources do not exist: for requests refused before any AWS call."""
    for name in (
        "SUBSCRIPTIONS_TABLE",
        "DELIVERIES_TABLE",
        "FIRST_ATTEMPTS_TABLE",
        "CLAIMS_TABLE",
        "QUARANTINE_TABLE",
        "DELIVERY_QUEUE_URL",
        "DELIVERY_DLQ_URL",
        "INGEST_QUEUE_URL",
        "INGEST_DLQ_URL",
    ):
        monkeypatch.setenv(f"JOBHOOKS_{name}", f"unused-{name.lower()}")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    with use_context(api.module, resolver=resolver, grants=()) as context:
        yield context


def create(api: InProcessApi, **fields: object) -> dict[str, object]:
    body = {"tenant_id": "acme", "url": "https://hooks.example.com/fetcher", **fields}
    answer = api.post("/v1/subscriptions", body)
    assert answer.status == 201, answer.text
    assert isinstance(answer.body, dict)
    return answer.body


def test_create_list_get_update_delete_round_trip(
    api: InProcessApi, context: ManagementContext
) -> None:
    created = create(api, event_types=["job.failed"], description="payments team")
    subscription_id = created["subscription_id"]
    assert str(created["secret"]).startswith("whsec_")
    assert created["event_types"] == ["job.failed"]
    assert created["status"] == "active"
    assert created["description"] == "payments team"
    other = create(api)
    assert other["event_types"] == ["job.completed", "job.failed"]

    listed = api.get("/v1/subscriptions", tenant_id="acme")
    assert listed.status == 200
    assert {item["subscription_id"] for item in listed.body["subscriptions"]} == {
        subscription_id,
        other["subscription_id"],
    }
    assert listed.body["next_cursor"] is None

    shown = api.get(f"/v1/subscriptions/{subscription_id}")
    assert shown.status == 200
    assert shown.body["url"] == "https://hooks.example.com/fetcher"
    assert [secret["expires_at"] for secret in shown.body["secrets"]] == [None]

    updated = api.patch(
        f"/v1/subscriptions/{subscription_id}",
        {
            "url": "https://new.example.com/in",
            "event_types": ["job.completed"],
            "status": "disabled",
        },
    )
    assert updated.status == 200, updated.text
    assert updated.body["url"] == "https://new.example.com/in"
    assert updated.body["event_types"] == ["job.completed"]
    assert updated.body["status"] == "disabled"
    assert updated.body["disabled_reason"] == "disabled by the tenant"
    enabled = api.patch(f"/v1/subscriptions/{subscription_id}", {"status": "active"})
    assert enabled.body["status"] == "active"
    cleared = api.patch(f"/v1/subscriptions/{subscription_id}", {"description": ""})
    assert cleared.body["description"] is None

    deleted = api.delete(f"/v1/subscriptions/{subscription_id}")
    assert deleted.status == 204
    assert deleted.text == ""
    gone = api.get(f"/v1/subscriptions/{subscription_id}")
    assert gone.status == 404
    assert gone.error["code"] == "subscription_not_found"
    assert api.delete(f"/v1/subscriptions/{subscription_id}").status == 404


def test_lists_page_by_page(api: InProcessApi, context: ManagementContext) -> None:
    created = {str(create(api)["subscription_id"]) for _ in range(3)}
    first = api.get("/v1/subscriptions", tenant_id="acme", limit=2)
    assert len(first.body["subscriptions"]) == 2
    second = api.get(
        "/v1/subscriptions", tenant_id="acme", limit=2, cursor=first.body["next_cursor"]
    )
    assert second.body["next_cursor"] is None
    seen = [item["subscription_id"] for item in first.body["subscriptions"]]
    seen += [item["subscription_id"] for item in second.body["subscriptions"]]
    assert sorted(seen) == sorted(created)
    bad = api.get("/v1/subscriptions", tenant_id="acme", cursor="not-a-cursor")
    assert bad.status == 422
    assert bad.error["code"] == "invalid_cursor"
    assert bad.error["field"] == "cursor"


def test_another_tenants_subscription_is_not_found(
    api: InProcessApi, context: ManagementContext
) -> None:
    subscription_id = create(api)["subscription_id"]
    path = f"/v1/subscriptions/{subscription_id}"
    assert api.get(path, tenant_id="acme").status == 200
    assert api.get(path, tenant_id="globex").status == 404
    assert api.patch(path, {"status": "disabled"}, tenant_id="globex").status == 404
    assert api.post(f"{path}/rotate-secret", tenant_id="globex").status == 404
    assert api.delete(path, tenant_id="globex").status == 404
    assert api.get("/v1/subscriptions", tenant_id="globex").body["subscriptions"] == []


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_create_refuses_hostile_url(
    api: InProcessApi, offline_context: ManagementContext, url: str
) -> None:
    answer = api.post("/v1/subscriptions", {"tenant_id": "acme", "url": url})
    assert answer.status == 422, answer.text
    assert answer.error["field"] == "url"
    assert answer.error["message"].startswith("url: ")
    assert answer.error["code"] in {
        "address_not_public",
        "url_scheme_not_allowed",
        "url_host_not_canonical",
    }


def test_create_refuses_a_name_that_resolves_to_a_private_address(
    api: InProcessApi, offline_context: ManagementContext, resolver: FakeResolver
) -> None:
    answer = api.post(
        "/v1/subscriptions", {"tenant_id": "acme", "url": "https://rebind.example.net/in"}
    )
    assert answer.status == 422
    assert answer.error["code"] == "address_not_public"
    assert "10.1.2.3" in answer.error["message"]
    assert "rebind.example.net" in resolver.asked


def test_update_refuses_hostile_url(api: InProcessApi, context: ManagementContext) -> None:
    subscription_id = create(api)["subscription_id"]
    answer = api.patch(f"/v1/subscriptions/{subscription_id}", {"url": "https://10.0.0.1/in"})
    assert answer.status == 422
    assert answer.error == {
        "code": "address_not_public",
        "message": answer.error["message"],
        "field": "url",
    }
    assert api.get(f"/v1/subscriptions/{subscription_id}").body["url"].startswith("https://hooks")


def test_create_refuses_unknown_event_type_naming_the_field(
    api: InProcessApi, offline_context: ManagementContext
) -> None:
    answer = api.post(
        "/v1/subscriptions",
        {"tenant_id": "acme", "url": "https://hooks.example.com", "event_types": ["job.started"]},
    )
    assert answer.status == 422
    assert answer.error["code"] == "invalid_request"
    assert answer.error["field"] == "event_types"
    assert answer.error["message"].startswith("event_types.0: ")
    assert "job.completed" in answer.error["message"]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"url": "https://hooks.example.com"}, "tenant_id", "Field required"),
        ({"tenant_id": "acme"}, "url", "Field required"),
        ({"tenant_id": "", "url": "https://a.example"}, "tenant_id", "at least 1"),
        ({"tenant_id": "acme", "url": "https://a.example", "color": "red"}, "color", "Extra"),
        ({"tenant_id": "acme", "url": "https://a.example", "event_types": []}, "event_types", "1"),
        ({"tenant_id": "a\x00b", "url": "https://a.example"}, "tenant_id", "control"),
    ],
)
def test_validation_errors_name_the_field_and_why(
    api: InProcessApi,
    offline_context: ManagementContext,
    body: dict[str, object],
    field: str,
    words: str,
) -> None:
    answer = api.post("/v1/subscriptions", body)
    assert answer.status == 422, answer.text
    assert answer.error["field"] == field
    assert answer.error["message"].startswith(f"{field}")
    assert words in answer.error["message"]


def test_malformed_requests_get_the_error_shape(
    api: InProcessApi, offline_context: ManagementContext
) -> None:
    not_json = api.call("POST", "/v1/subscriptions", raw_body=b"{nope")
    assert not_json.status == 400
    assert not_json.error["code"] == "invalid_json"
    assert not_json.error["field"] == "body"
    assert "not valid JSON" in not_json.error["message"]
    unknown = api.get("/v1/nothing-here")
    assert unknown.status == 404
    assert unknown.error["code"] == "not_found"
    bad_id = api.get("/v1/subscriptions/not-an-id")
    assert bad_id.status == 422
    assert bad_id.error["field"] == "subscription_id"
    too_big = api.get("/v1/subscriptions", tenant_id="acme", limit=1000)
    assert too_big.status == 422
    assert too_big.error["field"] == "limit"


def test_secret_is_shown_at_creation_only_and_never_logged(
    api: InProcessApi, context: ManagementContext, caplog: pytest.LogCaptureFixture
) -> None:
    module: ModuleType = api.module
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    collector = Collect()
    collector.setFormatter(module.logger.registered_formatter)
    module.logger.addHandler(collector)
    caplog.set_level(logging.DEBUG)
    try:
        created = create(api)
        secret = str(created["secret"])
        subscription_id = created["subscription_id"]
        path = f"/v1/subscriptions/{subscription_id}"
        later = [
            api.get(path),
            api.get("/v1/subscriptions", tenant_id="acme"),
            api.patch(path, {"description": "changed"}),
        ]
        rotated = api.post(f"{path}/rotate-secret", {"grace_seconds": 60})
        new_secret = rotated.body["secret"]
        later += [api.get(path), api.get("/v1/subscriptions", tenant_id="acme")]
    finally:
        module.logger.removeHandler(collector)

    assert rotated.status == 200
    assert secret not in rotated.text
    for answer in later:
        assert answer.status == 200
        assert secret not in answer.text
        assert new_secret not in answer.text
        assert "whsec_" not in answer.text
    assert [s["expires_at"] is None for s in later[-2].body["secrets"]] == [True, False]
    logged = "\n".join(lines) + "\n".join(record.getMessage() for record in caplog.records)
    logged += json.dumps(
        [getattr(record, "__dict__", {}) for record in caplog.records], default=str
    )
    assert lines, "the API logs its changes"
    assert secret not in logged
    assert new_secret not in logged
    assert "whsec_" not in logged


def test_rotation_grace_defaults_to_a_day_and_is_bounded(
    api: InProcessApi, stack: LocalResources
) -> None:
    clock = FakeClock()
    with use_context(api.module, clock=clock):
        subscription_id = create(api)["subscription_id"]
        path = f"/v1/subscriptions/{subscription_id}/rotate-secret"
        rotated = api.post(path)
        assert rotated.status == 200, rotated.text
        previous = rotated.body["secrets"][1]
        expires_at = datetime.fromisoformat(previous["expires_at"])
        assert expires_at == to_stored_precision(clock.now) + timedelta(hours=24)
        too_long = api.post(path, {"grace_seconds": 7 * 86400 + 1})
        assert too_long.status == 422
        assert too_long.error["field"] == "grace_seconds"
        assert api.post(path, {"grace_seconds": 7 * 86400}).status == 200


def test_a_rotation_on_another_instance_opens_the_data_key_with_kms_and_keeps_the_old_secret(
    api: InProcessApi, stack: LocalResources
) -> None:
    # On AWS the create and the rotation rarely run in the same instance: the rotation's
    # instance has never seen the subscription's data key and asks KMS to decrypt it (ApiRole's
    # kms:Decrypt), to seal the previous secret again for its grace period. A context of its
    # own is such an instance.
    with use_context(api.module):
        created = create(api)
    subscription_id = str(created["subscription_id"])
    with use_context(api.module):
        rotated = api.post(
            f"/v1/subscriptions/{subscription_id}/rotate-secret", {"grace_seconds": 60}
        )
    assert rotated.status == 200, rotated.text
    store = SubscriptionStore(
        stack.table_name("SubscriptionsTable"),
        boto3.client("dynamodb"),
        boto3.client("kms"),
        kms_key_id=stack.refs["SubscriptionSecretsKey"],
    )
    subscription = store.get(subscription_id)
    assert store.signing_secrets(subscription) == [rotated.body["secret"], created["secret"]]


def test_an_aws_failure_is_a_5xx_answer_and_counts_api_errors(
    stack: LocalResources,
    api: InProcessApi,
    resolver: FakeResolver,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # template.yaml's Api5xxAlarm watches API Gateway's 5xx count: it sees this answer because
    # the function returns it as its status code (Lambda's Errors metric never would).
    # The table the role may query is gone (not another table: IAM would refuse that first).
    boto3.client("dynamodb").delete_table(TableName=stack.table_name("SubscriptionsTable"))
    with use_context(api.module, resolver=resolver):
        answer = api.get("/v1/subscriptions", tenant_id="acme")

    assert answer.status >= 500, answer.text
    assert answer.error["code"]
    blobs = [
        json.loads(line)
        for line in capsys.readouterr().out.splitlines()
        if line.startswith('{"_aws"')
    ]
    [blob] = [blob for blob in blobs if "ApiErrors" in blob]
    [directive] = blob["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "jobhooks"
    assert [metric["Name"] for metric in directive["Metrics"]] == ["ApiErrors"]
