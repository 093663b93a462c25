"""Failure text: the producer's redaction, re-applied, and the controlled error category.

The producer replaces four kinds of leak in `metadata.error.message` with `[redacted]`:
connection URIs, the address operand of a Go network error, the `Addr:` operand of a MongoDB
driver error, and IPv4 literals. The bridge applies the same four rules again before anything
leaves it (defense in depth: an older producer, or a bug there, must not leak a DSN to a
customer's endpoint), and bounds the text.
"""

from __future__ import annotations

import re

REDACTED = "[redacted]"
MAX_MESSAGE_CHARS = 512

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # 1. Connection URIs: postgres://user:pass@host/db, mongodb+srv://…, amqps://…
    (re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>]+"), REDACTED),
    # 2. Go net.OpError: "dial tcp 10.0.0.5:5432: connect: …", "read tcp a->b: i/o timeout".
    (
        re.compile(
            r"\b((?:dial|read|write|listen|accept)\s+(?:tcp|udp|ip|unix)[46]?)\s+\S+?(?=:\s|:?$)"
        ),
        rf"\1 {REDACTED}",
    ),
    # 3. MongoDB driver errors: "… Addr: mongo-0.internal:27017, …".
    (re.compile(r"\bAddr:\s*[^\s,;)]+"), f"Addr: {REDACTED}"),
    # 4. IPv4 literals, with an optional port.
    (re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?(?![\w.])"), REDACTED),
)


def sanitize_error_message(text: str) -> str:
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    text = " ".join(text.split())  # no control characters or multi-line dumps
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 1] + "…"
    return text


# Categories, checked in this order against the sanitized message, case-insensitively. The
# producer stops a job at its first error: an unresolved connection name, a datasource error, a
# schema that does not match, or a storage write that did not complete.
_CATEGORIES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "connection_not_found",
        re.compile(
            r"connection\b.*\b(not found|does not exist|unknown|not configured)"
            r"|(unknown|no such|missing) connection",
            re.I,
        ),
    ),
    (
        "storage_write_failed",
        re.compile(
            r"storage|upload|put ?object|bucket|\bs3\b|write (the )?(result|object|file)", re.I
        ),
    ),
    (
        "schema_mismatch",
        re.compile(
            r"schema|column|mismatch|unknown field|table .*(does not exist|not found)", re.I
        ),
    ),
    (
        "datasource_error",
        re.compile(
            r"datasource|data source|database|query|connect|dial|timeout|timed out|driver"
            r"|postgres|mysql|mongo|oracle|sql|refused|server selection|no such host",
            re.I,
        ),
    ),
)

ERROR_CATEGORIES = (*(name for name, _ in _CATEGORIES), "unknown")


def categorize_error(sanitized_message: str | None) -> str:
    if not sanitized_message:
        return "unknown"
    for name, pattern in _CATEGORIES:
        if pattern.search(sanitized_message):
            return name
    return "unknown"
