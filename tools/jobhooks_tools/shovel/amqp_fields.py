"""AMQP field tables (message headers), read totally and written back losslessly.

The shovel must forward whatever a publisher puts in a header. pika's own field-table codec
(1.4.x) cannot, and its worst failures happen while pika reads the frame, before any shovel
code runs: the connection drops, the broker redelivers the same message first, and every event
behind it waits, forever. What pika gets wrong:

- a timestamp (`T`) is an unsigned 64-bit count of seconds, but pika makes it a datetime:
  OverflowError at 2^63, ValueError from 253402300800 (year 10000) on;
- tables (`F`) and arrays (`A`) recurse without bound: some 400 levels exhaust Python's
  recursion limit (RecursionError);
- floats (`f`, `d`) become integers (1.5 arrives as 1), and a float cannot be encoded;
- a long string (`S`) that is not UTF-8 becomes plain bytes, which a byte array (`x`) is too,
  and is re-published as one.

So the shovel puts this codec in pika's place: pika looks `decode_table`, `decode_value` and
`encode_value` up in `pika.data` at call time, for nested tables and arrays too. This codec

- decodes a timestamp datetime cannot hold as an `OutOfRangeTimestamp` (its seconds), a long
  string that is not UTF-8 as a `NonUtf8String` (its octets), floats as floats;
- does not descend into a table or array nested deeper than MAX_HEADER_NESTING: it becomes an
  `UnreadFieldValue` holding its exact encoding, which the forwarded-message encoder refuses
  (so the message is parked `unencodable`) and which is re-published as received; the
  recursion is bounded by the cap, whatever the frame holds;
- encodes every value it decodes back to the same bytes, except integer widths (pika keeps
  none: an 8- or 16-bit integer comes back as 32 bits, same value) and `f` (comes back as `d`,
  same value), so a parked message keeps its headers;
- raises FieldTableError, and nothing else, on bytes that are not a field table (truncated, or
  an unknown type octet). RabbitMQ checks every table when a message is published and refuses
  such a message, so it never delivers one.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pika.compat
import pika.data
from jobhooks.inbound.envelope import (
    LAST_DATETIME_SECOND,
    MAX_HEADER_NESTING,
    NonUtf8String,
    OutOfRangeTimestamp,
)

_Decode = Callable[[bytes, int], tuple[Any, int]]
_Encode = Callable[[list[bytes], Any], int]


class FieldTableError(ValueError):
    """Bytes that are not an AMQP field table (truncated, or an unknown field type)."""


@dataclass(frozen=True, slots=True)
class UnreadFieldValue:
    """A table or array nested deeper than MAX_HEADER_NESTING, left encoded (type octet first).

    Re-published exactly as received; never forwarded (the contract caps the nesting)."""

    encoded: bytes

    def __str__(self) -> str:
        kind = "field table" if self.encoded[:1] == b"F" else "field array"
        return (
            f"a {kind} nested deeper than {MAX_HEADER_NESTING} levels "
            f"({len(self.encoded)} bytes, kept as received)"
        )


_SIZE = struct.Struct(">I")
_DECIMAL = struct.Struct(">Bi")
_DOUBLE = struct.Struct(">d")
_TIMESTAMP = struct.Struct(">Q")
_TABLE, _ARRAY, _LONG_STRING, _BYTES, _DECIMAL_KIND, _VOID = b"FASxDV"


def _timestamp(seconds: int) -> datetime | OutOfRangeTimestamp:
    if seconds > LAST_DATETIME_SECOND:
        return OutOfRangeTimestamp(seconds)
    # What pika makes of the timestamps datetime holds, so nothing changes for those.
    return datetime.fromtimestamp(seconds, UTC)


# Fixed-size field types: their layout and the Python value. `L` and `l` keep pika's marker
# class for 64-bit integers, so they are re-encoded as 64 bits whatever their value.
_FIXED: dict[int, tuple[struct.Struct, Callable[[Any], Any]]] = {
    ord("t"): (struct.Struct(">B"), bool),
    ord("b"): (struct.Struct(">b"), int),
    ord("B"): (struct.Struct(">B"), int),
    ord("U"): (struct.Struct(">h"), int),
    ord("u"): (struct.Struct(">H"), int),
    ord("s"): (struct.Struct(">h"), int),
    ord("I"): (struct.Struct(">i"), int),
    ord("i"): (struct.Struct(">I"), int),
    ord("L"): (struct.Struct(">q"), pika.compat.long),
    ord("l"): (struct.Struct(">q"), pika.compat.long),
    ord("f"): (struct.Struct(">f"), float),
    ord("d"): (_DOUBLE, float),
    ord("T"): (_TIMESTAMP, _timestamp),
}


# --- decoding ---------------------------------------------------------------------------------


def decode_table(encoded: bytes, offset: int) -> tuple[dict[str | bytes, Any], int]:
    """Replaces pika.data.decode_table: the field table at `offset` (its 32-bit size first) and
    the offset after it. A name that is not UTF-8 stays bytes, as pika has it."""
    return _read_table(encoded, offset, len(encoded), 0)


def decode_value(encoded: bytes, offset: int) -> tuple[Any, int]:
    """Replaces pika.data.decode_value: the field value at `offset` (type octet first), read as
    a header's value, and the offset after it."""
    return _read_value(encoded, offset, len(encoded), 1)


def _read_size(encoded: bytes, offset: int, limit: int) -> tuple[int, int]:
    """The 32-bit size at `offset` and where its content starts; the content must end by
    `limit` (the end of the enclosing table or array)."""
    start = offset + _SIZE.size
    if start > limit:
        raise FieldTableError(f"a size at offset {offset} is cut off")
    size: int = _SIZE.unpack_from(encoded, offset)[0]
    if start + size > limit:
        raise FieldTableError(f"{size} bytes at offset {start} run past their container")
    return size, start


def _read_table(
    encoded: bytes, offset: int, limit: int, depth: int
) -> tuple[dict[str | bytes, Any], int]:
    """`depth` is the table's own: 0 for the headers, 1 for a table in a header's value."""
    size, position = _read_size(encoded, offset, limit)
    end = position + size
    table: dict[str | bytes, Any] = {}
    while position < end:
        name_end = position + 1 + encoded[position]
        if name_end > end:
            raise FieldTableError(f"a field name at offset {position} runs past its table")
        raw_name = encoded[position + 1 : name_end]
        try:
            name: str | bytes = raw_name.decode("utf-8")
        except UnicodeDecodeError:
            name = raw_name
        table[name], position = _read_value(encoded, name_end, end, depth + 1)
    return table, end


def _read_array(encoded: bytes, offset: int, limit: int, depth: int) -> tuple[list[Any], int]:
    size, position = _read_size(encoded, offset, limit)
    end = position + size
    items = []
    while position < end:
        item, position = _read_value(encoded, position, end, depth + 1)
        items.append(item)
    return items, end


def _read_value(encoded: bytes, offset: int, limit: int, depth: int) -> tuple[Any, int]:
    """The value at `offset`, ending by `limit`; `depth` is where it sits (1: a header's value)."""
    if offset >= limit:
        raise FieldTableError(f"a field value at offset {offset} is missing")
    kind = encoded[offset]
    position = offset + 1
    fixed = _FIXED.get(kind)
    if fixed is not None:
        layout, convert = fixed
        end = position + layout.size
        if end > limit:
            raise FieldTableError(f"a {chr(kind)!r} field at offset {offset} is cut off")
        return convert(layout.unpack_from(encoded, position)[0]), end
    if kind in (_LONG_STRING, _BYTES):
        size, start = _read_size(encoded, position, limit)
        octets = encoded[start : start + size]
        if kind == _LONG_STRING:
            try:
                return octets.decode("utf-8"), start + size
            except UnicodeDecodeError:
                return NonUtf8String(octets), start + size
        return octets, start + size
    if kind in (_TABLE, _ARRAY):
        if depth > MAX_HEADER_NESTING:
            # Not descended into: its size says where it ends, whatever it holds.
            size, start = _read_size(encoded, position, limit)
            return UnreadFieldValue(bytes(encoded[offset : start + size])), start + size
        if kind == _TABLE:
            return _read_table(encoded, position, limit, depth)
        return _read_array(encoded, position, limit, depth)
    if kind == _DECIMAL_KIND:
        end = position + _DECIMAL.size
        if end > limit:
            raise FieldTableError(f"a 'D' field at offset {offset} is cut off")
        decimals, unscaled = _DECIMAL.unpack_from(encoded, position)
        # Exponent -decimals exactly (12.50 stays 12.50), as pika reads it.
        return Decimal(unscaled).scaleb(-decimals), end
    if kind == _VOID:
        return None, position
    raise FieldTableError(f"unknown field type {bytes([kind])!r} at offset {offset}")


# --- encoding ---------------------------------------------------------------------------------


def encode_value(pieces: list[bytes], value: Any) -> int:
    """Replaces pika.data.encode_value: appends the value's encoding, returns its size. Every
    value the decoder returns comes back as it was read (integer widths aside)."""
    if isinstance(value, UnreadFieldValue):
        pieces.append(value.encoded)
        return len(value.encoded)
    if isinstance(value, float):
        pieces.append(b"d" + _DOUBLE.pack(value))
        return 1 + _DOUBLE.size
    if isinstance(value, OutOfRangeTimestamp):
        pieces.append(b"T" + _TIMESTAMP.pack(value))
        return 1 + _TIMESTAMP.size
    if isinstance(value, NonUtf8String):
        pieces.append(b"S" + _SIZE.pack(len(value)) + value)
        return 1 + _SIZE.size + len(value)
    if isinstance(value, Decimal):
        encoded = _exact_decimal(value)
        if encoded is not None:
            pieces.append(encoded)
            return len(encoded)
    assert _pika_encode_value is not None
    return _pika_encode_value(pieces, value)


def _exact_decimal(value: Decimal) -> bytes | None:
    """`D` with the value's own exponent (pika normalizes 12.50 to 12.5); None when it has no
    such form (a positive exponent, too many digits), which pika's encoder then handles."""
    exponent = value.as_tuple().exponent
    if not isinstance(exponent, int) or not -255 <= exponent <= 0:
        return None
    unscaled = int(value.scaleb(-exponent))
    if not -(2**31) <= unscaled < 2**31:
        return None
    return b"D" + _DECIMAL.pack(-exponent, unscaled)


# --- installation -----------------------------------------------------------------------------

_lock = threading.Lock()
_pika_encode_value: _Encode | None = None


def install_amqp_field_codec() -> None:
    """Puts this codec in pika's place, process-wide and idempotently (pika's own behaviour
    for these values is a crash or a loss, never a feature another user of pika relies on)."""
    global _pika_encode_value
    with _lock:
        if _pika_encode_value is not None:
            return
        _pika_encode_value = pika.data.encode_value
        pika.data.decode_table = decode_table
        pika.data.decode_value = decode_value
        pika.data.encode_value = encode_value
