"""The shovel's AMQP field-table codec: total on what a broker delivers, exact on re-encoding."""

from __future__ import annotations

import struct
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pika.data
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jobhooks.inbound.envelope import MAX_HEADER_NESTING, NonUtf8String, OutOfRangeTimestamp
from jobhooks_tools.shovel.amqp_fields import (
    FieldTableError,
    UnreadFieldValue,
    decode_table,
    install_amqp_field_codec,
)

install_amqp_field_codec()


def table(*entries: bytes) -> bytes:
    content = b"".join(entries)
    return struct.pack(">I", len(content)) + content


def entry(name: bytes, field: bytes) -> bytes:
    return bytes([len(name)]) + name + field


def long_string(octets: bytes) -> bytes:
    return b"S" + struct.pack(">I", len(octets)) + octets


def nested(kind: bytes, depth: int, leaf: bytes = b"") -> bytes:
    """`depth` tables (F) or arrays (A), each holding the next; the innermost holds `leaf`."""
    content = leaf
    for _ in range(depth - 1):
        inner = kind + struct.pack(">I", len(content)) + content
        content = entry(b"n", inner) if kind == b"F" else inner
    return kind + struct.pack(">I", len(content)) + content


def reencoded(decoded: dict[Any, Any]) -> bytes:
    pieces: list[bytes] = []
    pika.data.encode_table(pieces, decoded)
    return b"".join(pieces)


def decoded(encoded: bytes) -> dict[Any, Any]:
    value, end = decode_table(encoded, 0)
    assert end == len(encoded)
    return value


@pytest.mark.parametrize("seconds", [2**63, 253_402_300_800, 2**64 - 1])
def test_a_timestamp_datetime_cannot_hold_decodes_to_its_seconds_and_encodes_back(
    seconds: int,
) -> None:
    encoded = table(entry(b"at", b"T" + struct.pack(">Q", seconds)))

    headers = decoded(encoded)

    assert type(headers["at"]) is OutOfRangeTimestamp and headers["at"] == seconds
    assert reencoded(headers) == encoded


def test_a_timestamp_datetime_holds_is_still_a_utc_datetime() -> None:
    last = 253_402_300_799
    headers = decoded(table(entry(b"at", b"T" + struct.pack(">Q", last))))
    assert headers["at"] == datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


def test_a_long_string_that_is_not_utf8_stays_a_string_not_bytes() -> None:
    encoded = table(
        entry(b"latin1", long_string(b"caf\xe9")),
        entry(b"surrogate", long_string(b"\xed\xa0\x80")),
        entry(b"text", long_string("café".encode())),
        entry(b"bytes", b"x" + struct.pack(">I", 2) + b"\xff\xfe"),
    )

    headers = decoded(encoded)

    assert type(headers["latin1"]) is NonUtf8String and headers["latin1"] == b"caf\xe9"
    assert type(headers["surrogate"]) is NonUtf8String
    assert headers["text"] == "café"
    assert type(headers["bytes"]) is bytes
    assert reencoded(headers) == encoded


@pytest.mark.parametrize("kind", [b"F", b"A"])
def test_nesting_up_to_the_cap_is_decoded_and_past_it_left_encoded(kind: bytes) -> None:
    leaf = entry(b"v", long_string(b"ok")) if kind == b"F" else long_string(b"ok")
    at_cap = table(entry(b"h", nested(kind, MAX_HEADER_NESTING, leaf)))
    past_cap = nested(kind, MAX_HEADER_NESTING + 1, leaf)

    value = decoded(at_cap)["h"]
    for _ in range(MAX_HEADER_NESTING - 1):
        value = value["n"] if kind == b"F" else value[0]
    assert value == ({"v": "ok"} if kind == b"F" else ["ok"])

    deep = decoded(table(entry(b"h", past_cap)))["h"]
    for _ in range(MAX_HEADER_NESTING):
        deep = deep["n"] if kind == b"F" else deep[0]
    assert isinstance(deep, UnreadFieldValue)
    assert reencoded(decoded(table(entry(b"h", past_cap)))) == table(entry(b"h", past_cap))


def test_a_hostile_nesting_never_recurses_past_the_cap() -> None:
    # 100,000 levels: far past Python's recursion limit, which pika's own decoder hits at ~400.
    deep = nested(b"F", 100_000)
    encoded = table(entry(b"deep", deep), entry(b"after", long_string(b"kept")))

    headers = decoded(encoded)

    assert headers["after"] == "kept"
    assert reencoded(headers) == encoded
    assert "nested deeper than 32 levels" in str(_innermost(headers["deep"]))


def _innermost(value: Any) -> Any:
    while isinstance(value, dict):
        value = value["n"]
    return value


def test_floats_doubles_and_decimals_keep_their_values() -> None:
    encoded = table(
        entry(b"d", b"d" + struct.pack(">d", 1.5)),
        entry(b"f", b"f" + struct.pack(">f", 0.25)),
        entry(b"D", b"D" + struct.pack(">Bi", 2, 1250)),
    )

    headers = decoded(encoded)

    assert headers == {"d": 1.5, "f": 0.25, "D": Decimal("12.50")}
    assert type(headers["f"]) is float
    # 12.50 keeps its two decimals (pika's encoder would normalize it to 12.5).
    assert b"D\x02\x00\x00\x04\xe2" in reencoded(headers)


def test_integers_of_every_width_keep_their_values() -> None:
    signed = {b"b": ">b", b"s": ">h", b"U": ">h", b"I": ">i", b"l": ">q", b"L": ">q"}
    unsigned = {b"B": ">B", b"u": ">H", b"i": ">I"}
    encoded = table(
        *(entry(kind, kind + struct.pack(layout, -7)) for kind, layout in signed.items()),
        *(entry(kind, kind + struct.pack(layout, 200)) for kind, layout in unsigned.items()),
    )

    headers = decoded(encoded)

    assert headers == {kind.decode(): -7 for kind in signed} | {
        kind.decode(): 200 for kind in unsigned
    }
    # pika keeps no width (an 8-bit integer comes back as 32 bits), but every value stays.
    assert decoded(reencoded(headers)) == headers


@pytest.mark.parametrize(
    "encoded",
    [
        b"\x00\x00",  # a size cut off
        table(entry(b"a", b"Z")),  # an unknown field type
        table(entry(b"a", b"I\x00\x00")),  # a value cut off
        table(entry(b"a", long_string(b"abc")))[:-1],  # content past the end
        table(b"\x05ab"),  # a name past its table
        table(entry(b"a", b"A" + struct.pack(">I", 9) + b"I\x00\x00\x00\x01")),
    ],
)
def test_bytes_that_are_not_a_field_table_raise_field_table_error(encoded: bytes) -> None:
    with pytest.raises(FieldTableError):
        decode_table(encoded, 0)


@given(st.binary(max_size=300))
def test_any_bytes_decode_to_a_table_or_raise_field_table_error(raw: bytes) -> None:
    for encoded in (raw, table(raw)):
        try:
            value, end = decode_table(encoded, 0)
        except FieldTableError:
            continue
        assert end <= len(encoded)
        # Whatever was read can be written back (the parking queue needs it).
        assert reencoded(value)


# Well-formed fields in their canonical encodings (the ones the decoder's values encode to):
# re-encoding what was decoded must give back exactly these bytes.
_fixed = st.one_of(
    st.integers(0, 2**64 - 1).map(lambda s: b"T" + struct.pack(">Q", s)),
    st.integers(-(2**31), 2**31 - 1).map(lambda n: b"I" + struct.pack(">i", n)),
    st.integers(-(2**63), 2**63 - 1).map(lambda n: b"l" + struct.pack(">q", n)),
    st.floats().map(lambda f: b"d" + struct.pack(">d", f)),
    st.booleans().map(lambda b: b"t" + bytes([b])),
    st.tuples(st.integers(0, 255), st.integers(-(2**31), 2**31 - 1)).map(
        lambda d: b"D" + struct.pack(">Bi", *d)
    ),
    st.binary(max_size=12).map(long_string),
    st.binary(max_size=12).map(lambda b: b"x" + struct.pack(">I", len(b)) + b),
    st.just(b"V"),
)


def _field_table(fields: dict[bytes, bytes]) -> bytes:
    content = b"".join(entry(name, field) for name, field in fields.items())
    return b"F" + struct.pack(">I", len(content)) + content


def _field_array(fields: list[bytes]) -> bytes:
    content = b"".join(fields)
    return b"A" + struct.pack(">I", len(content)) + content


_fields = st.recursive(
    _fixed,
    lambda children: st.one_of(
        st.lists(children, max_size=3).map(_field_array),
        st.dictionaries(st.binary(max_size=6), children, max_size=3).map(_field_table),
    ),
    max_leaves=20,
)


@given(
    st.dictionaries(st.binary(max_size=8), _fields, max_size=6),
    st.integers(MAX_HEADER_NESTING - 2, MAX_HEADER_NESTING + 3),
)
def test_every_well_formed_table_re_encodes_to_the_same_bytes(
    fields: dict[bytes, bytes], depth: int
) -> None:
    # One header also nests around the cap, so markers are covered too.
    fields[b"deep"] = nested(b"F", depth, entry(b"v", b"V"))
    encoded = _field_table(fields)[1:]

    assert reencoded(decoded(encoded)) == encoded
