"""The portal key ring: the keys that MAC links and sessions, from the stack's secret.

The `PortalTokenKey` secret (template.yaml) holds one key, or several separated by commas,
current first: the current key signs, every key verifies, so a new key can be put in front of
the old one and the old one dropped once its sessions are over (docs/portal.md, "Rotating the
token key"). Each key is at least `MIN_KEY_CHARS` characters; the stack generates 64 random
letters and digits.

The secret is read once per `cache_seconds` per process (the authorizer runs before every
portal request: one Secrets Manager call per request would cost latency and money). boto3 is
imported on first use, so the functions' cold imports stay light.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Final, Protocol

from jobhooks.access.exceptions import PortalKeyError

MIN_KEY_CHARS: Final = 32
DEFAULT_CACHE_SECONDS: Final = 300.0


class KeyRing(Protocol):
    def keys(self) -> tuple[bytes, ...]:
        """Every key that verifies, the signing key first."""
        ...


def parse_keys(text: str) -> tuple[bytes, ...]:
    keys = tuple(part.strip() for part in text.split(",") if part.strip())
    if not keys:
        raise PortalKeyError("the secret holds no key")
    for number, key in enumerate(keys, start=1):
        if len(key) < MIN_KEY_CHARS:
            # How long it is, never what it is.
            raise PortalKeyError(
                f"key {number} has {len(key)} characters; at least {MIN_KEY_CHARS} are needed"
            )
    return tuple(key.encode("utf-8") for key in keys)


class StaticKeyRing:
    """Keys given directly (tests, and `JOBHOOKS_PORTAL_KEY` for a local API)."""

    def __init__(self, text: str) -> None:
        self._keys = parse_keys(text)

    def keys(self) -> tuple[bytes, ...]:
        return self._keys


class SecretKeyRing:
    """The keys in a Secrets Manager secret, cached for `cache_seconds`."""

    def __init__(
        self,
        secret_id: str,
        *,
        client: Any = None,
        cache_seconds: float = DEFAULT_CACHE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.secret_id = secret_id
        self._client = client
        self._cache_seconds = cache_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._keys: tuple[bytes, ...] = ()
        self._read_at = float("-inf")

    def keys(self) -> tuple[bytes, ...]:
        with self._lock:
            if not self._keys or self._monotonic() - self._read_at >= self._cache_seconds:
                self._keys = parse_keys(self._read())
                self._read_at = self._monotonic()
            return self._keys

    def _read(self) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        if self._client is None:
            import boto3

            self._client = boto3.client("secretsmanager")
        try:
            answer = self._client.get_secret_value(SecretId=self.secret_id)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "Unknown")
            raise PortalKeyError(f"GetSecretValue failed with {code}") from None
        except BotoCoreError as error:
            raise PortalKeyError(
                f"Secrets Manager is unreachable ({type(error).__name__})"
            ) from None
        text = answer.get("SecretString")
        if not isinstance(text, str):
            raise PortalKeyError("the secret holds no secret string")
        return text
