"""The page cursor codec: a small JSON document, base64url without padding.

A cursor names the listing it belongs to (its index, partition or filter) and the key of the
last item of its page. Decoding checks both before anything reaches DynamoDB: a cursor of
another tenant's listing, a forged one, or one with an empty key value (which DynamoDB refuses
with a ValidationException, a 502 for the caller) is an `InvalidCursorError`, a 422 that says
to start again. The encoding is stable: cursors handed out stay valid across deployments.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence

from jobhooks.storage.exceptions import InvalidCursorError


def encode_cursor(document: Mapping[str, str | None]) -> str:
    text = json.dumps(dict(document), separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_cursor(
    cursor: str,
    *,
    bound: Mapping[str, str | None],
    keys: Sequence[str],
    scope: str = "",
) -> dict[str, str]:
    """The cursor's document; raises `InvalidCursorError` (naming `scope`) unless every field of
    `bound` has exactly its value and every field of `keys` is a non-empty string."""
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
    for name in keys:
        value = document.get(name)
        if not isinstance(value, str) or not value:
            raise InvalidCursorError(scope)
    return {name: document[name] for name in keys}
