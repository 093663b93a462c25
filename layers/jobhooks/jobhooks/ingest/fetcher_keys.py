"""Where ingest gets the Fetcher external HMAC keys: a Secrets Manager secret, or the environment.

The secret string is the same list `JOBHOOKS_FETCHER_HMAC_KEYS` takes: 64 hex characters per
key, comma-separated, current first. Every listed key verifies, so a rotation is: add the new key,
switch the producer, drop the old key later (docs/ingest.md).

Powertools caches the secret (`POWERTOOLS_PARAMETERS_MAX_AGE`, 300 s by default). A message
signed with a key added to the secret after the cached read would then be rejected for up to
that long, so a signature mismatch may force one re-read, at most once per `refresh_interval`
per process: a flood of bad signatures cannot turn into a flood of GetSecretValue calls. A
cached value that is no key list (the stack's placeholder) or a failed read is retried the
same way, so a fixed secret counts within `refresh_interval`.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from jobhooks.inbound.keys import HmacKey, KeyConfigurationError, parse_key_list
from jobhooks.ingest.exceptions import FetcherKeysUnavailableError

DEFAULT_REFRESH_INTERVAL_SECONDS = 10.0


class FetcherKeySource(Protocol):
    def keys(self) -> tuple[HmacKey, ...]:
        """The keys that verify signatures now; raises `FetcherKeysUnavailableError`."""
        ...

    def refresh(self) -> bool:
        """Re-read the keys if allowed now; True when they changed."""
        ...


class StaticKeys:
    """Keys given directly (`JOBHOOKS_FETCHER_HMAC_KEYS`): never change while the process runs."""

    def __init__(self, keys: tuple[HmacKey, ...]) -> None:
        self._keys = keys

    def keys(self) -> tuple[HmacKey, ...]:
        return self._keys

    def refresh(self) -> bool:
        return False


class SecretKeys:
    """Keys from a Secrets Manager secret through a Powertools `SecretsProvider` (cached)."""

    def __init__(
        self,
        secret_id: str,
        provider: Any,
        *,
        max_age: int | None = None,
        refresh_interval: float = DEFAULT_REFRESH_INTERVAL_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.secret_id = secret_id
        self._provider = provider
        self._max_age = max_age
        self._refresh_interval = refresh_interval
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._last_forced: float | None = None

    def keys(self) -> tuple[HmacKey, ...]:
        try:
            return _parse(self._read(force=False))
        except FetcherKeysUnavailableError:
            # Unusable as cached (the placeholder, a denied read): once the operator fixes the
            # secret, the next invocation must verify at once, not after the cache expires.
            if not self._may_force_read():
                raise
        return _parse(self._read(force=True))

    def refresh(self) -> bool:
        if not self._may_force_read():
            return False
        before = self._read(force=False)
        return self._read(force=True) != before

    def _may_force_read(self) -> bool:
        """True at most once per `refresh_interval`: forced reads bypass the cache."""
        with self._lock:
            now = self._monotonic()
            if self._last_forced is not None and now - self._last_forced < self._refresh_interval:
                return False
            self._last_forced = now
            return True

    def _read(self, *, force: bool) -> str:
        from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

        try:
            value = self._provider.get(self.secret_id, max_age=self._max_age, force_fetch=force)
        except GetParameterError as error:
            raise FetcherKeysUnavailableError(
                f"GetSecretValue on the keys secret failed: {_aws_code(error)}"
            ) from None
        if isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        if not isinstance(value, str):
            raise FetcherKeysUnavailableError("the keys secret holds no secret string")
        return value


class SecretsManagerReader:
    """Powertools' `SecretsProvider` (its cache included) over one Secrets Manager client, made
    on the first read: importing Powertools' parameters utility and making the client are paid
    by the first invocation, not by the cold import of the function."""

    def __init__(self, session: Any = None) -> None:
        self._session = session
        self._provider: Any = None
        self._lock = threading.Lock()

    def get(self, name: str, **options: Any) -> Any:
        return self._secrets_provider().get(name, **options)

    def _secrets_provider(self) -> Any:
        if self._provider is None:
            with self._lock:
                if self._provider is None:
                    from aws_lambda_powertools.utilities.parameters import SecretsProvider

                    from jobhooks.storage.clients import aws_client

                    client = aws_client("secretsmanager", session=self._session)
                    self._provider = SecretsProvider(boto3_client=client)
        return self._provider


@functools.lru_cache(maxsize=8)
def _parse(text: str) -> tuple[HmacKey, ...]:
    try:
        return parse_key_list(text)
    except KeyConfigurationError as error:
        # The message names lengths and formats, never key material.
        raise FetcherKeysUnavailableError(f"the keys secret is not a key list: {error}") from None


def _aws_code(error: BaseException) -> str:
    cause = error.__cause__ or error.__context__
    response = getattr(cause, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", "Unknown"))
    return type(cause or error).__name__
