"""The forwarded-message codec, exactly as docs/forwarded-message.md writes it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobhooks.inbound.envelope import (
    FORMAT,
    MAX_HEADER_NESTING,
    ForwardedMessage,
    HeaderValue,
    NonUtf8String,
    OutOfRangeTimestamp,
    _sqs_json,
    properties_from_amqp,
)
from jobhooks.inbound.rejection import Reason, RejectedMessageError

MESSAGE = ForwardedMessage(
    exchange="fetcher.job.events",
    routing_key="job.completed",
    body=b'{"jobId":"j"}',
    headers={
        "ce-id": b"fetcher.job.completed.j",
        "t": "1750000000",
        "x-retry-count": 0,
        "nested": {"list": [b"\x00", 1.5, None, True, Decimal("2.50")]},
        "at": datetime(2026, 7, 13, tzinfo=UTC),
    },
    properties={"content_type": "application/json", "delivery_mode": 2},
    received_at="2026-07-13T18:04:12.001Z",
)


def test_writes_the_contract_shape() -> None:
    document = json.loads(MESSAGE.to_json())
    assert document["format"] == FORMAT == "jobhooks.amqp/1"
    assert document["headers"][:3] == [
        ["ce-id", "bytes", "ZmV0Y2hlci5qb2IuY29tcGxldGVkLmo="],
        ["t", "str", "1750000000"],
        ["x-retry-count", "int", 0],
    ]
    assert document["headers"][3] == [
        "nested",
        "table",
        [
            [
                "list",
                "list",
                [
                    ["bytes", "AA=="],
                    ["float", 1.5],
                    ["null", None],
                    ["bool", True],
                    ["decimal", "2.50"],
                ],
            ]
        ],
    ]
    assert document["headers"][4] == ["at", "timestamp", 1783900800]
    assert document["body"] == "eyJqb2JJZCI6ImoifQ=="
    assert (document["vhost"], document["redelivered"]) == ("/", False)


def test_the_sqs_body_is_ascii_whatever_the_producer_put_in_headers_and_properties() -> None:
    # SQS refuses U+FFFE, U+FFFF and control characters in a body; the body itself is base64.
    odd = "a\ufffeb\uffff\x00\U0001f680"
    message = ForwardedMessage(
        exchange="fetcher.job.events",
        routing_key="job.completed",
        body=odd.encode(),
        headers={"x-note": odd, "ce-id": odd.encode()},
        properties={"correlation_id": odd},
        received_at="2026-07-13T18:04:12.001Z",
    )
    assert message.to_json().isascii()
    assert ForwardedMessage.from_json(message.to_json()) == message


def test_reads_back_losslessly_in_order() -> None:
    decoded = ForwardedMessage.from_json(MESSAGE.to_json())
    assert decoded == MESSAGE
    assert list(decoded.headers) == list(MESSAGE.headers)


@pytest.mark.parametrize(
    "mutation",
    [
        {"format": "jobhooks.amqp/2"},
        {"format": None},
        {"exchange": 5},
        {"redelivered": "no"},
        {"body": "not base64!"},
        {"headers": [["t", "str"]]},
        {"headers": [["t", "int", "5"]]},
        {"headers": [["t", "bool", 1]]},
        {"headers": [["t", "weird", 1]]},
        {"headers": [["t", "bytes", "%%%"]]},
        {"headers": [["t", "decimal", "x"]]},
        {"headers": [["t", "list", [["int"]]]]},
        {"properties": []},
    ],
)
def test_rejects_anything_else_as_malformed_envelope(mutation: dict) -> None:  # type: ignore[type-arg]
    document = {**json.loads(MESSAGE.to_json()), **mutation}
    with pytest.raises(RejectedMessageError) as rejected:
        ForwardedMessage.from_json(json.dumps(document))
    assert rejected.value.reason is Reason.MALFORMED_ENVELOPE


@pytest.mark.parametrize(
    ("headers", "detail"),
    [
        ([["a", "str", "x"], ["b", "str"]], "headers[1] must be [name, type, value]"),
        ([["a", "str", "x"], [5, "str", "x"]], "headers[1] must be [name, type, value]"),
        ([["a", "str", "x"], "abc"], "headers[1] must be [name, type, value]"),
        ([["a", "bytes", "é"]], "headers['a'] is not standard base64"),
        ([["a", "bytes", "YQ="]], "headers['a'] is not standard base64"),
        ([["n", "table", [["a", "str", "x"], ["b"]]]], "headers['n'][1] must be [name, type"),
    ],
)
def test_a_malformed_header_is_named_in_the_detail(headers: list[object], detail: str) -> None:
    document = {**json.loads(MESSAGE.to_json()), "headers": headers}
    with pytest.raises(RejectedMessageError) as rejected:
        ForwardedMessage.from_json(json.dumps(document))
    assert rejected.value.reason is Reason.MALFORMED_ENVELOPE
    assert rejected.value.detail.startswith(detail)


@pytest.mark.parametrize(
    "field", ["format", "exchange", "routing_key", "vhost", "redelivered", "headers", "body"]
)
def test_required_fields(field: str) -> None:
    document = json.loads(MESSAGE.to_json())
    del document[field]
    with pytest.raises(RejectedMessageError, match=field):
        ForwardedMessage.from_json(json.dumps(document))


@pytest.mark.parametrize(
    ("mutation", "detail"),
    [
        ({"exchange": None, "body": 5}, "field 'exchange' must be str, got NoneType"),
        ({"vhost": 1, "redelivered": 0}, "field 'vhost' must be str, got int"),
        ({"redelivered": 0, "headers": {}}, "field 'redelivered' must be bool, got int"),
        ({"headers": "x", "body": None}, "field 'headers' must be list, got str"),
        ({"body": 1}, "field 'body' must be str, got int"),
        ({"headers": [["a", "bytes", "%"]], "body": "%"}, "headers['a'] is not standard base64"),
    ],
)
def test_the_first_field_in_the_contracts_order_is_named(mutation: dict, detail: str) -> None:  # type: ignore[type-arg]
    # Every required field is checked in one test on the common path; the rejection still names
    # the first bad field in the order exchange, routing_key, vhost, redelivered, headers, body,
    # and a bad header table before a bad body.
    document = {**json.loads(MESSAGE.to_json()), **mutation}
    with pytest.raises(RejectedMessageError) as rejected:
        ForwardedMessage.from_json(json.dumps(document))
    assert rejected.value.reason is Reason.MALFORMED_ENVELOPE
    assert rejected.value.detail == detail


def test_a_missing_field_is_named_before_a_later_mistyped_one() -> None:
    document = {**json.loads(MESSAGE.to_json()), "body": 5}
    del document["routing_key"]
    with pytest.raises(RejectedMessageError, match="required field 'routing_key' is missing"):
        ForwardedMessage.from_json(json.dumps(document))


def test_properties_from_amqp_keeps_only_what_was_set() -> None:
    class Props:
        content_type = "application/json"
        delivery_mode = 2
        timestamp = datetime(2026, 7, 13, tzinfo=UTC)
        message_id = None

    assert properties_from_amqp(Props()) == {
        "content_type": "application/json",
        "delivery_mode": 2,
        "timestamp": 1783900800,
    }


def test_non_finite_floats_travel_as_strict_json() -> None:
    message = ForwardedMessage("x", "job.completed", b"", {"n": float("nan"), "i": float("-inf")})
    text = message.to_json()
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert '["n","float","nan"]' in text and '["i","float","-inf"]' in text
    headers = ForwardedMessage.from_json(text).headers
    assert headers["i"] == float("-inf") and headers["n"] != headers["n"]  # NaN


def test_a_timestamp_past_year_9999_travels_as_its_seconds_and_reads_back_as_one() -> None:
    headers: dict[str, HeaderValue] = {"last": datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)}
    headers |= {"next": OutOfRangeTimestamp(253_402_300_800), "max": OutOfRangeTimestamp(2**64 - 1)}
    text = ForwardedMessage("x", "job.completed", b"", headers).to_json()

    assert json.loads(text)["headers"] == [
        ["last", "timestamp", 253_402_300_799],
        ["next", "timestamp", 253_402_300_800],
        ["max", "timestamp", 2**64 - 1],
    ]
    decoded = ForwardedMessage.from_json(text).headers
    assert decoded == headers
    assert [type(value) for value in decoded.values()] == [
        datetime,
        OutOfRangeTimestamp,
        OutOfRangeTimestamp,
    ]


@pytest.mark.parametrize("seconds", [2**64, -(2**63)])
def test_a_timestamp_outside_amqps_range_is_malformed(seconds: int) -> None:
    document = {**json.loads(MESSAGE.to_json()), "headers": [["t", "timestamp", seconds]]}
    with pytest.raises(RejectedMessageError) as rejected:
        ForwardedMessage.from_json(json.dumps(document))
    assert rejected.value.reason is Reason.MALFORMED_ENVELOPE


@pytest.mark.parametrize("seconds", [0, 253_402_300_799, 2**64])
def test_an_out_of_range_timestamp_is_only_what_datetime_cannot_hold(seconds: int) -> None:
    with pytest.raises(ValueError, match="is not an AMQP timestamp past year 9999"):
        OutOfRangeTimestamp(seconds)


def test_a_long_string_that_is_not_utf8_travels_as_str_base64_and_stays_one() -> None:
    headers: dict[str, HeaderValue] = {
        "note": NonUtf8String(b"caf\xe9"),
        "raw": b"caf\xe9",
        "nested": [NonUtf8String(b"\xff")],
    }
    text = ForwardedMessage("x", "job.completed", b"", headers).to_json()

    assert json.loads(text)["headers"] == [
        ["note", "str_base64", "Y2Fm6Q=="],
        ["raw", "bytes", "Y2Fm6Q=="],
        ["nested", "list", [["str_base64", "/w=="]]],
    ]
    decoded = ForwardedMessage.from_json(text).headers
    assert type(decoded["note"]) is NonUtf8String and decoded["note"] == b"caf\xe9"
    assert type(decoded["raw"]) is bytes
    assert type(decoded["nested"][0]) is NonUtf8String  # type: ignore[index]


def nested_tables(depth: int) -> dict:  # type: ignore[type-arg]
    value: dict = {}  # type: ignore[type-arg]
    for _ in range(depth - 1):
        value = {"n": value}
    return value


def test_headers_nest_up_to_the_cap_and_no_deeper() -> None:
    at_cap = ForwardedMessage("x", "job.completed", b"", {"h": nested_tables(MAX_HEADER_NESTING)})
    assert ForwardedMessage.from_json(at_cap.to_json()).headers == at_cap.headers

    past_cap: dict[str, HeaderValue] = {"h": nested_tables(MAX_HEADER_NESTING + 1), "ok": 1}
    with pytest.raises(ValueError, match="header 'h': tables and arrays nest deeper than 32"):
        ForwardedMessage("x", "job.completed", b"", past_cap).to_json()

    document = json.loads(at_cap.to_json())
    document["headers"] = [["h", "list", [document["headers"][0][1:]]]]
    with pytest.raises(RejectedMessageError, match="deeper than 32") as rejected:
        ForwardedMessage.from_json(json.dumps(document))
    assert rejected.value.reason is Reason.MALFORMED_ENVELOPE


def test_json_nested_past_the_parsers_limit_is_a_malformed_envelope() -> None:
    with pytest.raises(RejectedMessageError) as rejected:
        ForwardedMessage.from_json("[" * 100_000)
    assert rejected.value.reason is Reason.MALFORMED_ENVELOPE


def test_a_value_the_contract_cannot_carry_names_its_header() -> None:
    with pytest.raises(TypeError, match="header 'odd': the contract cannot carry"):
        ForwardedMessage("x", "job.completed", b"", {"ok": 1, "odd": object()}).to_json()  # type: ignore[dict-item]


def _json_loads_verdict(text: str | bytes) -> tuple[str, object]:
    """What the envelope made of an SQS body when it was read by `json.loads` alone."""
    try:
        document = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        return "rejected", f"the SQS body is not JSON ({exc.__class__.__name__})"
    return "read", document


_VALID = MESSAGE.to_json()


@pytest.mark.parametrize(
    "text",
    [
        _VALID,
        _VALID + " ",
        _VALID + "\n",
        " " + _VALID,
        "\ufeff" + _VALID,
        _VALID + "x",
        _VALID + _VALID,
        _VALID[:-1],
        _VALID[:40],
        _VALID.replace('"exchange":', '"exchange":-'),
        _VALID.replace('"exchange":', '"exchange":[{"a":'),
        _VALID.replace('"vhost":"/"', '"vhost":NaN'),
        _VALID.replace('"vhost":"/"', '"vhost":"\\ud800"'),
        _VALID.replace('"vhost":"/"', '"vhost":"\x01"'),
        _VALID.replace('"vhost":"/"', '"vhost":' + "[" * 5000 + "]" * 5000),
        _VALID.replace('"vhost":"/"', '"vhost":' + "9" * 5000),
        "{",
        "{}",
        "{} ",
        _VALID.encode(),
        _VALID.encode("utf-16"),
    ],
)
def test_the_sqs_body_gets_json_loads_verdict_whatever_the_shortcut(text: str | bytes) -> None:
    # A body that is one object from its first character to its last is scanned directly; any
    # other gets json.loads' verdict: the same value, or the same error class in the detail.
    verdict, expected = _json_loads_verdict(text)
    if verdict == "rejected":
        with pytest.raises(RejectedMessageError) as rejected:
            ForwardedMessage.from_json(text)
        assert (rejected.value.reason, rejected.value.detail) == (
            Reason.MALFORMED_ENVELOPE,
            expected,
        )
        return
    try:
        message = ForwardedMessage.from_json(text)
    except RejectedMessageError as rejected:  # JSON, but not a valid message: not the parser's
        assert "not JSON" not in rejected.detail
        assert not isinstance(expected, dict) or expected.get("vhost") != "/"
    else:
        assert isinstance(expected, dict)
        assert message == ForwardedMessage.from_json(json.dumps(expected))


def _envelope_verdict(text: str) -> tuple[str, str]:
    """The envelope's JSON step as `_json_loads_verdict` words it, values compared by repr
    (nan, -0.0, True against 1, key order)."""
    try:
        return "read", repr(_sqs_json(text))
    except RejectedMessageError as rejected:
        return "rejected", rejected.detail


# JSON values with the numbers, strings and nesting where parsers differ: NaN and infinities,
# -0.0, integers past 64 bits, floats at the edges of precision, every escape and surrogate.
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**200), max_value=2**200)
    | st.floats()
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)
# Characters that break, end or change a JSON text when dropped into it.
_TRICKY = [
    *'{}[]",:\\ \t\n\r\x0c\x00\x1f0-+.eE/NaIfinityufdtrl',
    "\\u",
    "\\ud800",
    "\\udc00",
    "\ud800",
    "\ufeff",
    "\u2028",
    "9" * 30,
    "1e400",
    "-0",
]


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=1000)
@given(
    document=st.dictionaries(st.text(max_size=5), _json_values, max_size=5),
    ensure_ascii=st.booleans(),
    compact=st.booleans(),
    edits=st.lists(
        st.tuples(
            st.integers(min_value=0),
            st.sampled_from(["insert", "delete", "replace"]),
            st.sampled_from(_TRICKY),
        ),
        max_size=3,
    ),
)
def test_the_sqs_body_is_read_as_json_loads_reads_it(
    document: dict[str, object],
    ensure_ascii: bool,
    compact: bool,
    edits: list[tuple[int, str, str]],
) -> None:
    # The envelope reads a text that starts an object with pydantic-core's parser, and falls
    # back on json.loads when that refuses: whatever it accepts must be json.loads' value.
    separators = (",", ":") if compact else (", ", ": ")
    text = json.dumps(document, ensure_ascii=ensure_ascii, separators=separators)
    for position, edit, fragment in edits:
        at = position % (len(text) + 1)
        if edit == "insert":
            text = text[:at] + fragment + text[at:]
        elif edit == "delete":
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + fragment + text[at + 1 :]
    expected_verdict, expected = _json_loads_verdict(text)
    assert _envelope_verdict(text) == (
        expected_verdict,
        repr(expected) if expected_verdict == "read" else expected,
    )


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1,"b":2,"a":3}',  # the last value, at the first key's place
        '{"a":NaN,"b":Infinity,"c":-Infinity}',
        '{"a":nan}',
        '{"a":1e400,"b":-0.0,"c":-0,"d":1E5,"e":4.9e-324}',
        '{"a":' + "9" * 4300 + "}",  # at json's digit limit
        '{"a":' + "9" * 4301 + "}",  # past it
        '{"a":"\\ud800"}',  # a lone surrogate escape
        '{"\ud800":1}',  # a lone surrogate in the text itself
        '{"a":"\x01"}',  # a raw control character
        '{"a":' + "[" * 199 + "]" * 199 + "}",
        '{"a":' + "[" * 201 + "]" * 201 + "}",  # past pydantic-core's depth, within json's
        '{"a":1,}',
        '{"a":01}',
        '{"a":1}\x0c',
        '{"a":1} \t\r\n',
    ],
)
def test_the_sqs_body_edges_get_json_loads_verdict(text: str) -> None:
    expected_verdict, expected = _json_loads_verdict(text)
    assert _envelope_verdict(text) == (
        expected_verdict,
        repr(expected) if expected_verdict == "read" else expected,
    )
