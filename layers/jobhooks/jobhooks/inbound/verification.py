"""Verify a Fetcher job event's HMAC signature (docs/fetcher-job-events.md).

The checks run in the producer's own order (presence, version, timestamp syntax, freshness,
HMAC), so a message gets the same verdict here as in the producer's verifier, except for the
freshness window, which is the bridge's (see freshness.py).
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Sequence
from typing import NamedTuple

from jobhooks.inbound.envelope import Headers, HeaderValue, OutOfRangeTimestamp, header_text
from jobhooks.inbound.freshness import DEFAULT_FUTURE_SKEW_SECONDS, check_freshness
from jobhooks.inbound.keys import HmacKey
from jobhooks.inbound.rejection import Reason, RejectedMessageError
from jobhooks.inbound.signed_bytes import bound_job_id, canonical_signed_bytes, legacy_signed_bytes

SIGNATURE_HEADER = "x-message-signature"
TIMESTAMP_HEADER = "t"
VERSION_HEADER = "signature-version"
TENANT_HEADER = "X-Tenant-ID"
SUPPORTED_VERSION = "v1"

# Go's strconv.ParseInt(s, 10, 64): optional sign, ASCII digits, nothing else (no spaces).
_DECIMAL_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class VerifiedSignature(NamedTuple):
    """What a verified signature authenticates. A named tuple: immutable like a frozen
    dataclass, whose `__init__` sets each field through `object.__setattr__` at more than
    twice the cost, once per message."""

    timestamp: int
    tenant_id: str
    """The signed `X-Tenant-ID` value: "" when the producer sent none, and always "" for a
    legacy signature, which signs no tenant (cross_checks.attributed_tenant decides)."""
    key_fingerprint: str
    legacy: bool


def verify_signature(
    *,
    headers: Headers,
    exchange: str,
    routing_key: str,
    body: bytes,
    keys: Sequence[HmacKey],
    received_at: float,
    max_age_seconds: float,
    max_future_seconds: float = DEFAULT_FUTURE_SKEW_SECONDS,
    allow_legacy: bool = False,
    job_id: str | None = None,
) -> VerifiedSignature:
    """Verify one message; `job_id` is the body's bound job id when the caller already parsed it."""
    signature = header_text(headers.get(SIGNATURE_HEADER))
    raw_timestamp = headers.get(TIMESTAMP_HEADER)
    version = header_text(headers.get(VERSION_HEADER))
    if not signature or not version or raw_timestamp is None or raw_timestamp == "":
        missing = [
            name
            for name, value in (
                (SIGNATURE_HEADER, signature),
                (TIMESTAMP_HEADER, raw_timestamp),
                (VERSION_HEADER, version),
            )
            if value is None or value == ""
        ]
        raise RejectedMessageError(
            Reason.MISSING_SIGNATURE,
            f"the message is unsigned: header {', '.join(missing)} is missing",
        )
    if version != SUPPORTED_VERSION:
        raise RejectedMessageError(
            Reason.UNSUPPORTED_SIGNATURE_VERSION,
            f"signature-version {version[:20]!r} is not supported (only {SUPPORTED_VERSION!r})",
        )
    timestamp = parse_timestamp(raw_timestamp)
    check_freshness(
        timestamp,
        received_at=received_at,
        max_age_seconds=max_age_seconds,
        max_future_seconds=max_future_seconds,
    )
    tenant_id = header_text(headers.get(TENANT_HEADER)) or ""
    provided = signature.encode("utf-8")
    canonical = canonical_signed_bytes(
        timestamp=timestamp,
        version=version,
        tenant_id=tenant_id,
        job_id=bound_job_id(body) if job_id is None else job_id,
        exchange=exchange,
        routing_key=routing_key,
        body=body,
    )
    for key in keys:
        if _matches(key, canonical, provided):
            return VerifiedSignature(timestamp, tenant_id, key.fingerprint, False)
    # The body-only form binds neither tenant, exchange nor routing key: only ever a fallback.
    if allow_legacy:
        legacy = legacy_signed_bytes(timestamp=timestamp, body=body)
        for key in keys:
            if _matches(key, legacy, provided):
                return VerifiedSignature(timestamp, "", key.fingerprint, True)  # legacy
    raise RejectedMessageError(
        Reason.SIGNATURE_MISMATCH,
        f"the HMAC does not verify under any of the {len(keys)} configured key(s); check the "
        "key, and that nothing re-routed the message (exchange and routing key are signed)",
    )


def _matches(key: HmacKey, signed: bytes, provided: bytes) -> bool:
    # Constant-time: how much of a guess matches must not show in the time it takes to refuse.
    return hmac.compare_digest(key.sign(signed).encode("ascii"), provided)


def parse_timestamp(value: HeaderValue) -> int:
    """`t` as the producer parses it: a base-10 int64 string, or an integer header (a
    timestamp header is neither, whether datetime holds it or not)."""
    if type(value) is str and value.isascii() and value.isdigit():
        number = int(value)  # the producer's own form, without the regex
    elif isinstance(value, int) and not isinstance(value, bool | OutOfRangeTimestamp):
        number = value
    else:
        text = header_text(value)
        if text is None or not _DECIMAL_INTEGER.fullmatch(text):
            raise RejectedMessageError(
                Reason.BAD_TIMESTAMP, f"t must be a base-10 integer, got {_preview(value)}"
            )
        number = int(text)
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise RejectedMessageError(Reason.BAD_TIMESTAMP, "t is out of the 64-bit integer range")
    return number


def _preview(value: HeaderValue) -> str:
    return repr(value)[:40]
