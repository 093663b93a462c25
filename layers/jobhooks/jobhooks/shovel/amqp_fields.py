"""Lossless AMQP float header values.

pika (1.4.x included) decodes the field types `f` (32-bit float) and `d` (64-bit double) and
then casts them to an integer, so a header 1.5 sent by another client (Go's amqp091 publishes
float64 as `d`) arrives as 1; and it cannot encode a float at all. The forwarded-message
contract carries every header with its type and value unchanged, and a parked message must be
re-published with its headers, so the shovel handles these two types itself and leaves every
other type to pika. pika looks `decode_value`/`encode_value` up at call time (for nested tables
and arrays too), which makes replacing those two functions enough.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable
from typing import Any

import pika.data

_Decode = Callable[[bytes, int], tuple[Any, int]]
_Encode = Callable[[list[bytes], Any], int]
_FLOAT = struct.Struct(">f")
_DOUBLE = struct.Struct(">d")
_lock = threading.Lock()
_pika_decode_value: _Decode | None = None
_pika_encode_value: _Encode | None = None


def install_lossless_float_fields() -> None:
    """Makes pika decode `f`/`d` header values as floats and encode floats as `d`.

    Idempotent and process-wide (pika's own behaviour for these types is a loss, never a
    feature another user of pika could rely on).
    """
    global _pika_decode_value, _pika_encode_value
    with _lock:
        if _pika_decode_value is not None:
            return
        _pika_decode_value = pika.data.decode_value
        _pika_encode_value = pika.data.encode_value
        pika.data.decode_value = _decode_value
        pika.data.encode_value = _encode_value


def _decode_value(encoded: bytes, offset: int) -> tuple[Any, int]:
    kind = encoded[offset : offset + 1]
    if kind == b"f":
        return float(_FLOAT.unpack_from(encoded, offset + 1)[0]), offset + 1 + _FLOAT.size
    if kind == b"d":
        return float(_DOUBLE.unpack_from(encoded, offset + 1)[0]), offset + 1 + _DOUBLE.size
    assert _pika_decode_value is not None
    return _pika_decode_value(encoded, offset)


def _encode_value(pieces: list[bytes], value: Any) -> int:
    if isinstance(value, float):
        pieces.append(b"d" + _DOUBLE.pack(value))
        return 1 + _DOUBLE.size
    assert _pika_encode_value is not None
    return _pika_encode_value(pieces, value)
