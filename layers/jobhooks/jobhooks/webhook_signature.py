"""Standard Webhooks signing (v1, HMAC-SHA256), as any Standard Webhooks or Svix verifier expects.

`webhook-signature` carries one `v1,<base64>` entry per unexpired secret of a subscription, so a
receiver that still holds the old secret keeps verifying during a rotation.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from collections.abc import Sequence

from jobhooks import __version__

SECRET_PREFIX = "whsec_"  # noqa: S105 - the format prefix, not a secret
SECRET_BYTES = 32
USER_AGENT = f"jobhooks/{__version__}"


class InvalidWebhookSecretError(ValueError):
    """A signing secret is not `whsec_` followed by standard base64."""


def generate_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def secret_key(secret: str) -> bytes:
    encoded = secret.removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise InvalidWebhookSecretError("a webhook secret must be whsec_ + base64") from None
    if len(key) < 24:
        raise InvalidWebhookSecretError("a webhook secret must carry at least 24 random bytes")
    return key


def webhook_id_for(event_id: str) -> str:
    """The `webhook-id` of an event: stable across retries and subscriptions, free of dots.

    The signed string joins id, timestamp and body with dots, and `ce-id` itself contains dots,
    so the id is a digest of `ce-id` rather than `ce-id` with its dots replaced (which could make
    two ids collide).
    """
    return "msg_" + hashlib.sha256(event_id.encode("utf-8")).hexdigest()[:32]


def sign(webhook_id: str, timestamp: int, body: bytes, signing_secrets: Sequence[str]) -> str:
    """The `webhook-signature` header value: one `v1,<sig>` per secret, space-separated."""
    if not signing_secrets:
        raise InvalidWebhookSecretError("a webhook needs at least one signing secret")
    signed = f"{webhook_id}.{timestamp}.".encode() + body
    entries = []
    for secret in signing_secrets:
        digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
        entries.append("v1," + base64.b64encode(digest).decode("ascii"))
    return " ".join(entries)


def webhook_headers(
    webhook_id: str, timestamp: int, body: bytes, signing_secrets: Sequence[str]
) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(webhook_id, timestamp, body, signing_secrets),
    }
