"""The exact bytes the producer signs (docs/fetcher-job-events.md, "The signature").

Canonical form, six lines each ending in `\\n`, then the raw body:

    <t>\\n<signature-version>\\n<X-Tenant-ID or empty>\\n<jobId or empty>\\n
    <exchange>\\n<routing key>\\n<body>        (one line, wrapped here)

Legacy v1.4.x body-only form: `<t>.` followed by the body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any


def bound_job_id(body: bytes) -> str:
    """The job id the producer binds into the signature, or "" when it binds none.

    The producer reads the top-level key exactly `jobId` when it is a JSON string (after JSON
    unescaping). Anything else binds an empty line: missing key, `job_id`, a number, invalid
    JSON. It never falls back to `job_id`, so neither do we.
    """
    return job_id_in(parse_json_object(body))


def job_id_in(document: dict[str, Any] | None) -> str:
    """`bound_job_id` of an already parsed body."""
    job_id = document.get("jobId") if document is not None else None
    return job_id if isinstance(job_id, str) else ""


def parse_json_object(body: bytes) -> dict[str, Any] | None:
    """The body as a JSON object, or None when the producer's Go parser would not read one."""
    try:
        # Strict UTF-8 and no NaN/Infinity: Go's encoding/json accepts neither, and a body that
        # Go considers invalid binds an empty job id.
        text = body.decode("utf-8")
        document = _compact_object(text)
        if document is None:
            document = _go_json.decode(text)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(document, dict):
        return None
    if b"\\ud" in body or b"\\uD" in body:  # only a \uD800-\uDFFF escape makes a surrogate
        try:
            scrubbed: dict[str, Any] = _without_lone_surrogates(document)
        except RecursionError:
            return None
        return scrubbed
    return document


# Go's decoder reads an escaped UTF-16 surrogate that is not half of a pair as U+FFFD; Python's
# keeps it as a lone surrogate, which no encoder will write (UTF-8, pydantic's JSON, SQS): an
# event holding one would fail after its claim instead of being delivered. Valid pairs are
# already joined into one character by the decoder, so every surrogate left is a lone one.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_lone_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {
            _without_lone_surrogates(key): _without_lone_surrogates(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_without_lone_surrogates(item) for item in value]
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Built once: json.loads with an option builds a decoder on every call.
_go_json = json.JSONDecoder(parse_constant=_reject_constant)
# Its scanner, called directly for the producer's compact bodies (see _compact_object).
_scan_go_json: Callable[[str, int], tuple[Any, int]] = _go_json.scan_once  # type: ignore[attr-defined]


def _compact_object(text: str) -> dict[str, Any] | None:
    """`_go_json.decode(text)` for a text that is one JSON object from its first character to
    its last (the producer's compact bodies), without `decode`'s whitespace handling around the
    scan; None for any other text, which `decode` itself then reads (or rejects)."""
    if text[:1] != "{":
        return None
    try:
        document, end = _scan_go_json(text, 0)
    except (ValueError, RecursionError, StopIteration):  # StopIteration: a value missing
        return None
    return document if end == len(text) else None  # type: ignore[no-any-return]


def canonical_signed_bytes(
    *,
    timestamp: int,
    version: str,
    tenant_id: str,
    job_id: str,
    exchange: str,
    routing_key: str,
    body: bytes,
) -> bytes:
    header = f"{timestamp}\n{version}\n{tenant_id}\n{job_id}\n{exchange}\n{routing_key}\n"
    return header.encode("utf-8") + body


def legacy_signed_bytes(*, timestamp: int, body: bytes) -> bytes:
    return f"{timestamp}.".encode("ascii") + body
