"""Outbound signatures verify with the `standardwebhooks` package, including a rotation."""

from __future__ import annotations

import time

import pytest
from jobhooks.webhook_signature import generate_secret, webhook_headers, webhook_id_for
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

BODY = b'{"type":"job.completed","timestamp":"2026-07-13T18:04:11.204Z","data":{}}'


def test_one_secret_verifies() -> None:
    secret = generate_secret()
    headers = webhook_headers(
        webhook_id_for("fetcher.job.completed.j"), int(time.time()), BODY, [secret]
    )
    assert Webhook(secret).verify(BODY, headers) == {
        "type": "job.completed",
        "timestamp": "2026-07-13T18:04:11.204Z",
        "data": {},
    }
    assert headers["user-agent"].startswith("jobhooks/")


def test_rotation_signs_with_both_secrets_and_each_verifies() -> None:
    old, new = generate_secret(), generate_secret()
    headers = webhook_headers("msg_1", int(time.time()), BODY, [new, old])
    assert len(headers["webhook-signature"].split(" ")) == 2
    Webhook(old).verify(BODY, headers)
    Webhook(new).verify(BODY, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(generate_secret()).verify(BODY, headers)


def test_a_changed_body_does_not_verify() -> None:
    secret = generate_secret()
    headers = webhook_headers("msg_1", int(time.time()), BODY, [secret])
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(BODY.replace(b"completed", b"failed"), headers)


def test_webhook_id_is_stable_dot_free_and_distinct() -> None:
    first = webhook_id_for("fetcher.job.completed.abc")
    assert first == webhook_id_for("fetcher.job.completed.abc")
    assert "." not in first and first.startswith("msg_")
    assert first != webhook_id_for("fetcher.job.failed.abc")
    assert webhook_id_for("a_b.c") != webhook_id_for("a.b_c")


def test_secrets_are_whsec_with_32_random_bytes() -> None:
    secret = generate_secret()
    assert secret.startswith("whsec_") and secret != generate_secret()
    import base64

    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
