"""The page cursor codec: a small JSON document, base64url without padding.

A cursor names the listing it belongs to (its index, partition or filter) and the key of the
last item of its page. Decoding checks both before anything reaches DynamoDB: a cursor of
another tenant's listing, a forged one, or one whose key field is not of the shape the store
writes there (an empty string, a number, 1,100 characters where an id has at most 68: DynamoDB
would refuse most with a ValidationException, a 502 for the caller and a count in the operators'
error alarm) is an `InvalidCursorError`, a 422 that says to start again. Every field is checked:
the listing's by equality, each key field by its own shape (`CursorField`). The encoding is
stable: cursors handed out stay valid across deployments.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Final

from jobhooks.storage.exceptions import InvalidCursorError

CursorField = Callable[[str], bool]
"""Whether a key field's text has the shape the store writes in that field."""

# The longest cursor any listing hands out is under 1 KB (a 684-character delivery id); the
# API's query parameter allows 2,048 characters.
MAX_CURSOR_CHARS: Final = 2048
# Patterns, not compiled ones: `re` compiles each for the first cursor decoded and keeps it in
# its cache. The stores define their cursor fields at import, and the event functions, which
# import the stores to write and to read by key, never decode a cursor.
_STORED_TIME: Final = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})"
_BASE64URL: Final = r"[A-Za-z0-9_-]*"


def shaped(pattern: str) -> CursorField:
    """A field that matches `pattern` (the id pattern of the store's items) as a whole."""
    return lambda text: re.fullmatch(pattern, text) is not None


def stored_time(text: str) -> bool:
    """A time as `jobhooks.storage.times.format_time` writes it (RFC 3339)."""
    if re.fullmatch(_STORED_TIME, text) is None:
        return False
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def printable_text(max_chars: int) -> CursorField:
    """Text of 1 to `max_chars` characters without control characters (a producer's id)."""

    def check(text: str) -> bool:
        return 0 < len(text) <= max_chars and text.isprintable()

    return check


def encode_cursor(document: Mapping[str, str | None]) -> str:
    text = json.dumps(dict(document), separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(
    cursor: str,
    *,
    bound: Mapping[str, str | None],
    fields: Mapping[str, CursorField],
    scope: str = "",
) -> dict[str, str]:
    """The cursor's key fields; raises `InvalidCursorError` (naming `scope`) unless every field
    of `bound` has exactly its value and every field of `fields` is a string of its shape."""
    if len(cursor) > MAX_CURSOR_CHARS or re.fullmatch(_BASE64URL, cursor) is None:
        raise InvalidCursorError(scope)
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        document = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise InvalidCursorError(scope) from None
    if not isinstance(document, dict):
        raise InvalidCursorError(scope)
    for name, value in bound.items():
        if document.get(name) != value:
            raise InvalidCursorError(scope)
    for name, shape in fields.items():
        value = document.get(name)
        if not isinstance(value, str) or not value or not shape(value):
            raise InvalidCursorError(scope)
    return {name: document[name] for name in fields}
