"""What the management API accepts as a request body: UTF-8 JSON, sent as `application/json`.

`accept_request_body` reads the body of an API Gateway HTTP API event (payload format 2.0) the way
the Event Handler will, before it does, and raises `InvalidJsonError` (400) or
`UnsupportedMediaTypeError` (415) for a body it could not read safely. The Event Handler's own
parsing stops at Python's `json.loads`: invalid UTF-8, an integer of thousands of digits, a
nesting deep enough to exhaust the recursion limit or a media type it does not know escape it as
a 500. Once a body has passed here, `json.loads` reads the same text without surprises, and
whatever the body says is for the route's schema to judge (422).

An empty body is no body, whatever its Content-Type: routes whose body is optional are called
without one, and clients often set the header by habit.

Error messages never quote the body: it may hold a secret pasted into the wrong field.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import Any, Final, NoReturn

from jobhooks.management.exceptions import InvalidJsonError, UnsupportedMediaTypeError

JSON_MEDIA_TYPE: Final = "application/json"
# The deepest body the API takes is an object holding a list (`event_types`); the bound leaves
# room for clients that wrap, and stays far below the recursion limit `json.loads` runs into.
MAX_JSON_DEPTH: Final = 32
# No field takes an integer beyond 2**63; a longer one is refused here, before Python's own
# 4,300-digit conversion limit raises a ValueError the Event Handler does not expect.
MAX_INTEGER_DIGITS: Final = 100

# The characters that open and close strings and containers, and string escapes.
_STRUCTURE: Final = re.compile(r'[\[\]{}"\\]')
_UTF8_LABELS: Final = ("utf-8", "utf8")
_MEDIA_TYPE: Final = re.compile(r"[A-Za-z0-9!#$&^_.+-]{1,64}/[A-Za-z0-9!#$&^_.+-]{1,64}")


def accept_request_body(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event to route, once its body (if any) is UTF-8 JSON sent as `application/json`.

    Raises `InvalidJsonError` or `UnsupportedMediaTypeError`. The accepted event's Content-Type
    is spelled `application/json`: media types are case-insensitive and a charset parameter
    can only say UTF-8 here, but the Event Handler compares the header as it was written.
    """
    raw = event.get("body")
    if not raw:
        return dict(event)
    given = event.get("headers") or {}
    headers = {str(name).lower(): str(value) for name, value in given.items()}
    _check_media_type(headers.get("content-type"))
    _check_json(_text_of(str(raw), base64_encoded=bool(event.get("isBase64Encoded"))))
    return {**event, "headers": {**headers, "content-type": JSON_MEDIA_TYPE}}


def _check_media_type(content_type: str | None) -> None:
    if content_type is None:
        raise UnsupportedMediaTypeError("the request has a body but no Content-Type")
    media_type, *parameters = (part.strip() for part in content_type.split(";"))
    if media_type.lower() != JSON_MEDIA_TYPE:
        shown = media_type if _MEDIA_TYPE.fullmatch(media_type) else "an unreadable media type"
        raise UnsupportedMediaTypeError(f"the request body was sent as {shown}")
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        charset = value.strip().strip('"').lower()
        if name.strip().lower() == "charset" and charset not in _UTF8_LABELS:
            raise UnsupportedMediaTypeError("the request body's charset is not UTF-8")


def _text_of(raw: str, *, base64_encoded: bool) -> str:
    """The body as text. API Gateway passes a body that is not UTF-8 text base64-encoded."""
    if not base64_encoded:
        return raw
    try:
        return base64.b64decode(raw, validate=True).decode("utf-8")
    except binascii.Error:
        _refuse("the request body could not be read (its base64 transfer encoding is broken)")
    except UnicodeDecodeError as error:
        _refuse(f"the request body is not UTF-8 text (byte {error.start} is not UTF-8)")


def _check_json(text: str) -> None:
    if _nests_deeper_than(text, MAX_JSON_DEPTH):
        _refuse(f"the request body nests arrays and objects more than {MAX_JSON_DEPTH} levels deep")
    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_int=_bounded_int)
    except json.JSONDecodeError as error:
        # The decoder's own sentence and position; never the document it carries.
        where = f"line {error.lineno} column {error.colno}"
        _refuse(f"the request body is not valid JSON ({error.msg} at {where})")
    try:
        # An escaped lone surrogate (\ud800) decodes to a str no UTF-8 encoder accepts.
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        _refuse("the request body holds a \\u escape of a lone UTF-16 surrogate, which is not text")


def _nests_deeper_than(text: str, limit: int) -> bool:
    """Whether arrays and objects nest more than `limit` deep, brackets in strings not counted.

    One pass over the structural characters that stops at the first level too deep, so a
    hostile body costs time in proportion to its size, never a recursion.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    depth, in_string, escaped_at = 0, False, -1
    for match in _STRUCTURE.finditer(text):
        char, at = match.group(), match.start()
        if in_string:
            if at == escaped_at:
                continue
            if char == "\\":
                escaped_at = at + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _refuse_constant(name: str) -> NoReturn:
    _refuse(f"{name} is not a JSON number; the request body is not valid JSON")


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
        _refuse(f"the request body holds an integer of more than {MAX_INTEGER_DIGITS} digits")
    return int(digits)


def _refuse(reason: str) -> NoReturn:
    raise InvalidJsonError(reason)
