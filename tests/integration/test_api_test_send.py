"""Test sends: a signed `jobhooks.test` webhook to a loopback receiver, through a rotation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from jobhooks_tools.local.template import LocalResources
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from tests.integration.api_support import FakeClock, InProcessApi, Receiver, use_context

OUTCOME_SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs/schema/outcome.v1.json").read_text()
)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.stop()


def test_rotation_signs_with_both_secrets_until_the_grace_period_ends(
    stack: LocalResources, receiver: Receiver
) -> None:
    api, clock = InProcessApi(), FakeClock()
    with use_context(api.module, clock=clock, allow_private_webhooks=True):
        created = api.post("/v1/subscriptions", {"tenant_id": "acme", "url": receiver.url})
        assert created.status == 201, created.text
        subscription_id, old_secret = created.body["subscription_id"], created.body["secret"]
        path = f"/v1/subscriptions/{subscription_id}"

        first = api.post(f"{path}/test")
        assert first.status == 200, first.text
        assert first.body["delivered"] is True
        assert first.body["status_code"] == 200
        assert first.body["signatures"] == 1
        assert first.body["event_type"] == "jobhooks.test"

        # A grace period short enough that its end stays within the verifier's 5-minute
        # timestamp tolerance, so the same real verifier judges both sends.
        rotated = api.post(f"{path}/rotate-secret", {"grace_seconds": 120})
        new_secret = rotated.body["secret"]
        assert new_secret != old_secret
        clock.advance(seconds=1)
        during = api.post(f"{path}/test")
        assert during.body["signatures"] == 2
        clock.advance(seconds=120)
        after = api.post(f"{path}/test")
        assert after.body["delivered"] is True
        assert after.body["signatures"] == 1

    assert len(receiver.requests) == 3
    for webhook in receiver.requests:
        body = Webhook(new_secret if webhook is not receiver.requests[0] else old_secret).verify(
            webhook.body, webhook.headers
        )
        jsonschema.validate(body, OUTCOME_SCHEMA)
        assert body["type"] == "jobhooks.test"
        assert body["data"]["account_id"] == "acme"
        assert webhook.headers["content-type"] == "application/json"

    during_webhook, after_webhook = receiver.requests[1], receiver.requests[2]
    assert len(during_webhook.headers["webhook-signature"].split(" ")) == 2
    Webhook(old_secret).verify(during_webhook.body, during_webhook.headers)
    Webhook(new_secret).verify(during_webhook.body, during_webhook.headers)

    assert len(after_webhook.headers["webhook-signature"].split(" ")) == 1
    Webhook(new_secret).verify(after_webhook.body, after_webhook.headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(old_secret).verify(after_webhook.body, after_webhook.headers)


def test_a_failed_test_send_reports_the_receivers_answer(
    stack: LocalResources, receiver: Receiver
) -> None:
    api = InProcessApi()
    receiver.statuses = [503]
    with use_context(api.module, allow_private_webhooks=True):
        created = api.post("/v1/subscriptions", {"tenant_id": "acme", "url": receiver.url})
        subscription_id = created.body["subscription_id"]
        # Disabled subscriptions can be tested: a tenant checks an endpoint before enabling it.
        api.patch(f"/v1/subscriptions/{subscription_id}", {"status": "disabled"})
        failed = api.post(f"/v1/subscriptions/{subscription_id}/test")
        receiver.stop()
        unreachable = api.post(f"/v1/subscriptions/{subscription_id}/test")
        missing = api.post("/v1/subscriptions/sub_doesnotexist/test")

    assert failed.status == 200
    assert failed.body["delivered"] is False
    assert failed.body["status_code"] == 503
    assert failed.body["response_excerpt"] == "try again later"
    assert unreachable.body["delivered"] is False
    assert unreachable.body["status_code"] is None
    assert unreachable.body["error"] == "connect_error"
    assert unreachable.body["detail"]
    assert missing.status == 404
    assert missing.error["code"] == "subscription_not_found"
