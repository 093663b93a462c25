"""Keyed pseudonyms for `account_id` and `job_id`, so analysts never see raw tenant or job ids.

`event_id` is pseudonymized with them: Fetcher's `ce-id` is `fetcher.job.<status>.<job id>`, so
the raw event id would show the job id. A pseudonymized `event_id` is as unique and as stable as
the raw one, so the outcomes view deduplicates on it all the same.

A pseudonym is `p1_` followed by the 64 lower-case hex digits of

    HMAC-SHA256(key, <column name> + "\\x00" + <value as UTF-8>)

`p1_` names this format (a later one gets another prefix). The column name separates the two
domains: a tenant and a job that share an id get different pseudonyms. The same key always
gives the same pseudonym, so counts, joins and `GROUP BY` work on pseudonyms as on raw ids;
whoever holds the key can compute the pseudonym of a known id (to find one tenant's rows) but
nobody can reverse one. Replacing the key starts new pseudonyms: rows written before and after
no longer match on those two columns.

The key is the UTF-8 text of a Secrets Manager secret (the stack generates 64 random letters
and digits) read through Powertools Parameters with its cache, as the Fetcher keys are
(`jobhooks.ingest.fetcher_keys`); at least `MIN_KEY_CHARS` characters.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, Final, Protocol

from jobhooks.analytics.exceptions import PseudonymizationKeyError, aws_error_code

PSEUDONYM_PREFIX: Final = "p1_"
PSEUDONYMIZED_COLUMNS: Final = ("event_id", "account_id", "job_id")
MIN_KEY_CHARS: Final = 32


class Pseudonymizer(Protocol):
    def pseudonym(self, column: str, value: str) -> str: ...


def pseudonym(key: bytes, column: str, value: str) -> str:
    """The documented pseudonym of `value` in `column` under `key`."""
    if column not in PSEUDONYMIZED_COLUMNS:
        raise ValueError(f"{column} is not a pseudonymized column")
    message = column.encode("ascii") + b"\x00" + value.encode("utf-8")
    return PSEUDONYM_PREFIX + hmac.new(key, message, hashlib.sha256).hexdigest()


def key_from_text(text: str) -> bytes:
    key = text.strip()
    if len(key) < MIN_KEY_CHARS:
        # Says how long it is, never what it is.
        raise PseudonymizationKeyError(
            f"the key has {len(key)} characters; at least {MIN_KEY_CHARS} are needed"
        )
    return key.encode("utf-8")


class StaticKeyPseudonymizer:
    """A key given directly (local use: `JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_KEY`)."""

    def __init__(self, key_text: str) -> None:
        self._key = key_from_text(key_text)

    def pseudonym(self, column: str, value: str) -> str:
        return pseudonym(self._key, column, value)


class SecretKeyPseudonymizer:
    """The key from a Secrets Manager secret through a Powertools `SecretsProvider` (cached)."""

    def __init__(self, secret_id: str, provider: Any, *, max_age: int | None = None) -> None:
        self.secret_id = secret_id
        self._provider = provider
        self._max_age = max_age

    def pseudonym(self, column: str, value: str) -> str:
        return pseudonym(self._key(), column, value)

    def _key(self) -> bytes:
        from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

        try:
            text = self._provider.get(self.secret_id, max_age=self._max_age)
        except GetParameterError as error:
            raise PseudonymizationKeyError(
                f"GetSecretValue on the key's secret failed: {aws_error_code(error)}"
            ) from None
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        if not isinstance(text, str):
            raise PseudonymizationKeyError("the key's secret holds no secret string")
        return key_from_text(text)
