"""The forwarded message: one AMQP delivery carried losslessly in one SQS body.

This module owns `docs/forwarded-message.md`. The shovel builds a `ForwardedMessage` from
each delivery and serializes it; the ingest function parses it back. The two are deployed
separately, so the reader accepts exactly `jobhooks.amqp/1` and rejects everything else with
`malformed_envelope` instead of guessing.

Header values keep their AMQP type through Python types: `str` (AMQP long string), `bytes`
(byte array), `int`, `float`, `bool`, `None` (void), `Decimal`, `datetime` (timestamp, UTC),
`list` (array) and `dict` (nested table, insertion-ordered). Two AMQP values have no standard
Python type, and any publisher can send them: `OutOfRangeTimestamp` (a timestamp past
datetime's year 9999, kept as its seconds) and `NonUtf8String` (a long string whose octets are
not UTF-8, kept as those octets). Tables and arrays nest at most `MAX_HEADER_NESTING` deep.

The body is strict JSON: a non-finite float header (which the contract's "JSON number" cannot
express) is written as the string `nan`, `inf` or `-inf` with type `float`.
"""

from __future__ import annotations

import base64
import json
import math
from binascii import a2b_base64
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic_core import from_json as _from_json

from jobhooks.inbound.rejection import Reason, RejectedMessageError

FORMAT = "jobhooks.amqp/1"
# Non-finite floats, as `repr` writes them and `float()` reads them.
_NON_FINITE = ("nan", "inf", "-inf")

# SQS accepts at most 1 MiB per message (body plus attributes).
SQS_MAX_MESSAGE_BYTES = 1_048_576

# How deep tables and arrays may nest inside one header value (a table holding a list is 2).
# Fetcher's deepest header is 2; the cap keeps every reader and writer of a hostile header far
# below Python's recursion limit (1000 frames, about 2 per level), in the shovel and in ingest.
MAX_HEADER_NESTING = 32

# An AMQP timestamp is an unsigned 64-bit count of seconds; datetime runs from year 1 to 9999.
FIRST_DATETIME_SECOND = -62_135_596_800  # 0001-01-01T00:00:00Z
LAST_DATETIME_SECOND = 253_402_300_799  # 9999-12-31T23:59:59Z
MAX_AMQP_TIMESTAMP = 2**64 - 1


class OutOfRangeTimestamp(int):
    """An AMQP timestamp datetime cannot hold (year 10000 or later, up to 2^64 - 1 seconds),
    kept as its integer seconds since the epoch. The contract writes it like any timestamp,
    `["timestamp", seconds]`; readers get this type back for seconds past year 9999."""

    __slots__ = ()

    def __new__(cls, seconds: int) -> OutOfRangeTimestamp:
        if not LAST_DATETIME_SECOND < seconds <= MAX_AMQP_TIMESTAMP:
            raise ValueError(
                f"{seconds} is not an AMQP timestamp past year 9999 "
                f"({LAST_DATETIME_SECOND + 1} to {MAX_AMQP_TIMESTAMP}); use a datetime"
            )
        return super().__new__(cls, seconds)

    def __repr__(self) -> str:
        return f"OutOfRangeTimestamp({int(self)})"


class NonUtf8String(bytes):
    """An AMQP long string (`S`) whose octets are not valid UTF-8, kept as those octets.

    It stays a string, distinct from a byte array (`bytes`): the contract writes it as
    `["str_base64", "<base64 of the octets>"]` and the shovel re-publishes it as `S`. It is
    never text (`verification.header_text` returns None for it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"NonUtf8String({bytes(self)!r})"


HeaderValue = (
    str
    | bytes
    | bool
    | int
    | float
    | None
    | Decimal
    | datetime
    | list["HeaderValue"]
    | dict[str, "HeaderValue"]
)
Headers = dict[str, HeaderValue]

# AMQP basic properties carried in `properties` (snake_case, only those that were set).
PROPERTY_NAMES = (
    "content_type",
    "content_encoding",
    "delivery_mode",
    "priority",
    "correlation_id",
    "reply_to",
    "expiration",
    "message_id",
    "timestamp",
    "type",
    "user_id",
    "app_id",
    "cluster_id",
)


@dataclass(slots=True)
class ForwardedMessage:
    """One AMQP delivery as the contract carries it.

    Not frozen, though nothing changes a message once it is read: a frozen dataclass's
    `__init__` sets each of the eight fields through `object.__setattr__`, which cost four times
    as much as plain slots, on every message the ingest function reads. Treat it as immutable.
    """

    exchange: str
    routing_key: str
    body: bytes
    headers: Headers = field(default_factory=dict)
    vhost: str = "/"
    redelivered: bool = False
    properties: dict[str, Any] = field(default_factory=dict)
    received_at: str = ""

    def to_json(self) -> str:
        document = {
            "format": FORMAT,
            "exchange": self.exchange,
            "routing_key": self.routing_key,
            "vhost": self.vhost,
            "redelivered": self.redelivered,
            "received_at": self.received_at or _now_rfc3339(),
            "properties": self.properties,
            "headers": _encode_table(self.headers),
            "body": base64.b64encode(self.body).decode("ascii"),
        }
        return json.dumps(document, separators=(",", ":"), ensure_ascii=True, allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> ForwardedMessage:
        document = _sqs_json(text)
        if type(document) is not dict:  # json.loads makes exact dicts: no subclass to allow for
            raise _malformed("the SQS body is JSON but not an object")
        get = document.get
        if get("format") != FORMAT:
            raise _malformed(f"format must be exactly {FORMAT!r}, got {get('format')!r}")
        exchange, routing_key, vhost = get("exchange"), get("routing_key"), get("vhost")
        redelivered, raw_headers, raw_body = get("redelivered"), get("headers"), get("body")
        # One test for the six required fields of every well-formed message (a missing field
        # reads as None, never of the right type); _first_missing_or_mistyped names the field.
        if not (
            type(exchange) is str
            and type(routing_key) is str
            and type(vhost) is str
            and type(redelivered) is bool
            and type(raw_headers) is list
            and type(raw_body) is str
        ):
            raise _first_missing_or_mistyped(document)
        properties = get("properties", {})
        if type(properties) is not dict:
            raise _malformed("properties must be an object")
        received_at = get("received_at", "")
        if type(received_at) is not str:
            raise _malformed("received_at must be a string")
        headers = _decode_table(raw_headers, "headers", 0)  # before the body, as ever
        # Positional, in field order: the dataclass's __init__ is on every message's path.
        return cls(
            exchange,
            routing_key,
            _b64decode(raw_body, "body"),
            headers,
            vhost,
            redelivered,
            properties,
            received_at,
        )


def _sqs_json(text: str | bytes) -> Any:
    """`json.loads(text)`, or `malformed_envelope` when that raises.

    An SQS body the shovel wrote (a text that starts an object) is read by pydantic-core's
    parser, in about a quarter fewer instructions than `json`'s scanner: the SQS body, 1.5-2 KB
    with a list per header, is the largest JSON of the path. That parser refuses some texts
    `json.loads` reads (a lone surrogate escape, nesting past 200 levels) and every text
    `json.loads` refuses, so whenever it refuses, `json.loads` itself reads the text again:
    every verdict, value or error, is `json.loads`'. What it accepts it reads to the same value
    (tests/unit/test_envelope.py holds the two to that over generated texts). It keeps the
    short strings it has read (64 bytes or fewer) for the next text, values as well as keys:
    every body the shovel writes has the same keys, the same 19 header names and their three
    kinds, and a producer repeats most of its header values (`ce-source`, `ce-type`, the tenant),
    so most of a body's strings come back from that cache instead of being built and hashed
    again. Values that change with every message (ids, times, signatures) miss it, as they do in
    `bench/core.py`, which reads distinct messages."""
    if type(text) is str and text[:1] == "{":
        try:
            return _from_json(text, allow_inf_nan=True, cache_strings=True)
        except (ValueError, TypeError):  # TypeError: a text that is not UTF-8 (a lone surrogate)
            pass  # json.loads decides below
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        # RecursionError: JSON nested past the parser's depth limit, never ours.
        raise _malformed(f"the SQS body is not JSON ({exc.__class__.__name__})") from None


def properties_from_amqp(props: Any) -> dict[str, Any]:
    """The AMQP basic properties that were set, JSON-ready (timestamps as Unix seconds)."""
    out: dict[str, Any] = {}
    for name in PROPERTY_NAMES:
        value = getattr(props, name, None)
        if value is None:
            continue
        if isinstance(value, datetime):
            value = int(value.replace(tzinfo=value.tzinfo or UTC).timestamp())
        out[name] = value
    return out


def header_text(value: HeaderValue) -> str | None:
    """A header as text: AMQP strings as they are, byte arrays as UTF-8, anything else None
    (a long string that is not UTF-8 included: it has no text)."""
    if type(value) is str:  # exact types first: a dozen reads a message, nearly all of these
        return value
    if type(value) is bytes or (isinstance(value, bytes) and not isinstance(value, NonUtf8String)):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None


def _now_rfc3339() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _malformed(detail: str) -> RejectedMessageError:
    return RejectedMessageError(Reason.MALFORMED_ENVELOPE, detail)


# The fields every message must carry, in the order their absence is reported.
_REQUIRED_FIELDS: tuple[tuple[str, type], ...] = (
    ("exchange", str),
    ("routing_key", str),
    ("vhost", str),
    ("redelivered", bool),
    ("headers", list),
    ("body", str),
)


def _first_missing_or_mistyped(document: dict[str, Any]) -> RejectedMessageError:
    """The rejection naming the first required field that is missing or not of its type."""
    for name, kind in _REQUIRED_FIELDS:
        if name not in document:
            return _malformed(f"required field {name!r} is missing")
        value = document[name]
        # bool is a subclass of int: only an exact type match is the declared type.
        if type(value) is not kind:
            return _malformed(f"field {name!r} must be {kind.__name__}, got {type(value).__name__}")
    raise AssertionError("called for a document whose required fields are all there")


def _b64decode(text: str, where: str) -> bytes:
    try:
        # strict_mode: only the standard alphabet with correct padding, like validate=True. A
        # str argument must be ASCII: anything else raises ValueError, like bad base64 does.
        return a2b_base64(text, strict_mode=True)
    except ValueError:
        raise _malformed(f"{where} is not standard base64") from None


# --- typed values -------------------------------------------------------------------------


def _encode_table(table: dict[str, HeaderValue], depth: int = 0) -> list[list[Any]]:
    """A table as the contract's `[name, type, value]` list; `depth` is the table's own."""
    entries = []
    for name, value in table.items():
        try:
            entries.append([name, *_encode_value(value, depth + 1)])
        except (TypeError, ValueError) as error:
            if depth:
                raise
            # Name the header: the shovel parks the message with this sentence.
            kind = TypeError if isinstance(error, TypeError) else ValueError
            raise kind(f"header {name!r}: {error}") from None
    return entries


def _encode_value(value: HeaderValue, depth: int) -> list[Any]:
    """A Python AMQP value as its contract `[type, value]` pair."""
    if isinstance(value, str):
        return ["str", value]
    if isinstance(value, NonUtf8String):
        return ["str_base64", base64.b64encode(value).decode("ascii")]
    if isinstance(value, bytes | bytearray):
        return ["bytes", base64.b64encode(bytes(value)).decode("ascii")]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        # An OutOfRangeTimestamp is an int too: it travels as the timestamp it is.
        return ["timestamp" if isinstance(value, OutOfRangeTimestamp) else "int", int(value)]
    if isinstance(value, float):
        # JSON has no NaN or infinities; they travel as the strings Python's float() reads back.
        return ["float", value if math.isfinite(value) else repr(value)]
    if value is None:
        return ["null", None]
    if isinstance(value, Decimal):
        return ["decimal", str(value)]
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return ["timestamp", int(aware.timestamp())]
    if isinstance(value, list | dict) and depth > MAX_HEADER_NESTING:
        raise ValueError(f"tables and arrays nest deeper than {MAX_HEADER_NESTING} levels")
    if isinstance(value, list):
        return ["list", [_encode_value(item, depth + 1) for item in value]]
    if isinstance(value, dict):
        return ["table", _encode_table(value, depth)]
    raise TypeError(f"the contract cannot carry {_describe(value)}")


def _describe(value: object) -> str:
    text = str(value)
    return text if len(text) <= 200 else text[:200] + "..."


def _decode_table(entries: Any, where: str, depth: int) -> dict[str, HeaderValue]:
    """The contract's `[name, type, value]` list as a table; `depth` is the table's own."""
    if not isinstance(entries, list):
        raise _malformed(f"{where} must be a list of [name, type, value]")
    table: dict[str, HeaderValue] = {}
    # The location for an error message is only formatted when there is an error.
    for entry in entries:
        if type(entry) is not list:
            raise _malformed(f"{where}[{_position(entries, entry)}] must be [name, type, value]")
        try:
            name, kind, raw = entry  # a list of any other length raises here
        except ValueError:
            raise _malformed(
                f"{where}[{_position(entries, entry)}] must be [name, type, value]"
            ) from None
        if type(name) is not str:
            raise _malformed(f"{where}[{_position(entries, entry)}] must be [name, type, value]")
        # Fetcher's headers are byte arrays, strings and one integer (x-retry-count): those take
        # the short path, the kind tested first (a string comparison), then the value's type.
        if kind == "bytes" and type(raw) is str:
            try:
                # A str must be ASCII: anything else raises ValueError, as bad base64 does.
                table[name] = a2b_base64(raw, strict_mode=True)
            except ValueError:
                raise _malformed(f"{where}[{name!r}] is not standard base64") from None
        elif (kind == "str" and type(raw) is str) or (kind == "int" and type(raw) is int):
            table[name] = raw
        else:
            table[name] = _decode_value(kind, raw, f"{where}[{name!r}]", depth + 1)
    return table


def _position(entries: list[Any], entry: object) -> int:
    return next(index for index, candidate in enumerate(entries) if candidate is entry)


def _decode_value(kind: Any, raw: Any, where: str, depth: int) -> HeaderValue:
    if kind in ("list", "table") and depth > MAX_HEADER_NESTING:
        raise _malformed(f"{where} nests tables and arrays deeper than {MAX_HEADER_NESTING}")
    match kind:
        case "str" if isinstance(raw, str):
            return raw
        case "str_base64" if isinstance(raw, str):
            return NonUtf8String(_b64decode(raw, where))
        case "bytes" if isinstance(raw, str):
            return _b64decode(raw, where)
        case "int" if type(raw) is int:
            return raw
        case "float" if type(raw) in (float, int):
            return float(raw)
        case "float" if raw in _NON_FINITE:
            return float(raw)
        case "bool" if type(raw) is bool:
            return raw
        case "null" if raw is None:
            return None
        case "decimal" if isinstance(raw, str):
            try:
                return Decimal(raw)
            except InvalidOperation:
                raise _malformed(f"{where} is not a decimal string") from None
        case "timestamp" if type(raw) is int:
            if LAST_DATETIME_SECOND < raw <= MAX_AMQP_TIMESTAMP:
                return OutOfRangeTimestamp(raw)
            try:
                return datetime.fromtimestamp(raw, UTC)
            except (OverflowError, OSError, ValueError):
                raise _malformed(f"{where} is out of the timestamp range") from None
        case "list" if isinstance(raw, list):
            items: list[HeaderValue] = []
            for index, item in enumerate(raw):
                if not (isinstance(item, list) and len(item) == 2):
                    raise _malformed(f"{where}[{index}] must be [type, value]")
                items.append(_decode_value(item[0], item[1], f"{where}[{index}]", depth + 1))
            return items
        case "table":
            return _decode_table(raw, where, depth)
    raise _malformed(f"{where} has type {kind!r} with a value that does not match it")
