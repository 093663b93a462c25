"""What the management API answers to request bodies it cannot read: 400 or 415, never 500.

A body must be UTF-8 JSON, at most `MAX_JSON_DEPTH` levels deep, sent as `application/json`.
Each refusal has the documented error shape, is logged once at WARNING with its code, method and
path, and nothing of the body reaches the log (it may hold a secret pasted by mistake).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from jobhooks.management.context import ManagementContext
from jobhooks.management.request_body import MAX_JSON_DEPTH
from jobhooks_tools.local.api_server import api_gateway_event, normalize_answer
from jobhooks_tools.local.gateway import iam_context
from jobhooks_tools.local.template import LocalResources

from tests.integration.api_support import (
    OPERATOR_ARN,
    InProcessApi,
    LoggedLine,
    Receiver,
    api_log,
    lambda_context,
    use_context,
)

# Every hostile body carries this text: no log line may contain it.
MARKER = "b0dy-m4rker"
SUBSCRIPTIONS = "/v1/subscriptions"
ROTATE = "/v1/subscriptions/sub_unknown/rotate-secret"


@dataclass(frozen=True)
class BadBody:
    name: str
    path: str
    content_type: str | None
    body: bytes
    status: int
    code: str


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


BAD_BODIES = [
    BadBody(
        "invalid UTF-8",
        SUBSCRIPTIONS,
        "application/json",
        b'{"tenant_id": "acme\xff\xfe' + MARKER.encode() + b'", "url": "https://a.example"}',
        400,
        "invalid_json",
    ),
    BadBody(
        "nested 100,000 deep",
        SUBSCRIPTIONS,
        "application/json",
        b'{"tenant_id": "' + MARKER.encode() + b'", "url": ' + nested(100_000) + b"}",
        400,
        "invalid_json",
    ),
    BadBody(
        # Deep enough to refuse, shallow enough for json.loads: the bound is ours, not
        # the interpreter's recursion limit.
        "nested one level too deep",
        SUBSCRIPTIONS,
        "application/json",
        b'{"description": "' + MARKER.encode() + b'", "x": ' + nested(MAX_JSON_DEPTH) + b"}",
        400,
        "invalid_json",
    ),
    BadBody(
        "not JSON",
        SUBSCRIPTIONS,
        "application/json",
        b'{"tenant_id": "' + MARKER.encode() + b'", nope',
        400,
        "invalid_json",
    ),
    BadBody("only blanks", SUBSCRIPTIONS, "application/json", b" \n\t ", 400, "invalid_json"),
    BadBody(
        "a byte order mark",
        SUBSCRIPTIONS,
        "application/json",
        b'\xef\xbb\xbf{"tenant_id": "' + MARKER.encode() + b'", "url": "https://a.example"}',
        400,
        "invalid_json",
    ),
    BadBody(
        "NaN",
        ROTATE,
        "application/json",
        b'{"grace_seconds": NaN, "note": "' + MARKER.encode() + b'"}',
        400,
        "invalid_json",
    ),
    BadBody(
        "an integer of 5,000 digits",
        ROTATE,
        "application/json",
        b'{"note": "' + MARKER.encode() + b'", "grace_seconds": 1' + b"0" * 5000 + b"}",
        400,
        "invalid_json",
    ),
    BadBody(
        "a lone surrogate",
        SUBSCRIPTIONS,
        "application/json",
        b'{"tenant_id": "acme", "url": "https://a.example/\\ud800' + MARKER.encode() + b'"}',
        400,
        "invalid_json",
    ),
    BadBody(
        "text/plain",
        SUBSCRIPTIONS,
        "text/plain",
        b'{"tenant_id": "' + MARKER.encode() + b'", "url": "https://a.example"}',
        415,
        "unsupported_media_type",
    ),
    BadBody(
        "a form",
        SUBSCRIPTIONS,
        "application/x-www-form-urlencoded",
        b"tenant_id=" + MARKER.encode() + b"&url=https%3A%2F%2Fa.example",
        415,
        "unsupported_media_type",
    ),
    BadBody(
        "multipart",
        SUBSCRIPTIONS,
        "multipart/form-data; boundary=xyz",
        b'--xyz\r\nContent-Disposition: form-data; name="tenant_id"\r\n\r\n'
        + MARKER.encode()
        + b"\r\n--xyz--\r\n",
        415,
        "unsupported_media_type",
    ),
    BadBody(
        "JSON without a Content-Type",
        SUBSCRIPTIONS,
        None,
        b'{"tenant_id": "' + MARKER.encode() + b'", "url": "https://a.example"}',
        415,
        "unsupported_media_type",
    ),
    BadBody(
        "JSON in another charset",
        SUBSCRIPTIONS,
        "application/json; charset=latin-1",
        b'{"tenant_id": "' + MARKER.encode() + b'", "url": "https://a.example"}',
        415,
        "unsupported_media_type",
    ),
]


@pytest.fixture
def api() -> InProcessApi:
    return InProcessApi()


@pytest.fixture
def context(stack: LocalResources, api: InProcessApi) -> Iterator[ManagementContext]:
    with use_context(api.module) as context:
        yield context


@pytest.mark.parametrize("bad", BAD_BODIES, ids=[bad.name for bad in BAD_BODIES])
def test_unreadable_body_is_refused_with_a_warning_and_no_body_in_the_log(
    api: InProcessApi, context: ManagementContext, bad: BadBody
) -> None:
    with api_log(api.module.logger) as lines:
        answer = api.call("POST", bad.path, raw_body=bad.body, content_type=bad.content_type)

    assert (answer.status, answer.error["code"]) == (bad.status, bad.code), answer.text
    assert set(answer.body) == {"error"}
    assert set(answer.error) <= {"code", "message", "field"}
    assert answer.error["message"]
    assert answer.headers["content-type"] == "application/json"
    assert MARKER not in answer.text
    assert_refusal_logged(lines, bad.code, "POST", bad.path)


def assert_refusal_logged(lines: list[LoggedLine], code: str, method: str, path: str) -> None:
    [warning] = [line for line in lines if line.level == "WARNING"]
    logged = json.loads(warning.text)
    assert (logged["code"], logged["method"], logged["path"]) == (code, method, path)
    assert not [line for line in lines if line.level in ("ERROR", "CRITICAL")]
    for line in lines:
        assert MARKER not in line.text
        assert "Traceback" not in line.text


def test_schema_violations_stay_422(api: InProcessApi, context: ManagementContext) -> None:
    for body in (b'["' + MARKER.encode() + b'"]', b"null", b'{"tenant_id": 7}'):
        answer = api.call("POST", SUBSCRIPTIONS, raw_body=body)
        assert (answer.status, answer.error["code"]) == (422, "invalid_request"), answer.text
        assert MARKER not in answer.text


def test_refuses_bad_bodies_on_every_route_before_routing(
    api: InProcessApi, context: ManagementContext
) -> None:
    """A request's body is read before its route is looked up, so no route can forget it."""
    answer = api.call("PATCH", "/v1/subscriptions/sub_unknown", raw_body=b"\xff")
    assert (answer.status, answer.error["code"]) == (400, "invalid_json")
    answer = api.call("POST", "/v1/dlq/redrive", raw_body=b"{}", content_type="text/plain")
    assert (answer.status, answer.error["code"]) == (415, "unsupported_media_type")


def test_json_with_a_utf8_charset_and_any_case_is_read(
    api: InProcessApi, context: ManagementContext
) -> None:
    body = {"tenant_id": "acme", "url": "https://hooks.example.com/in"}
    for content_type in ("application/json; charset=utf-8", 'Application/JSON; Charset="UTF-8"'):
        answer = api.call("POST", SUBSCRIPTIONS, body=body, content_type=content_type)
        assert answer.status == 201, answer.text


def test_json_the_gateway_passes_base64_encoded_is_read(
    api: InProcessApi, context: ManagementContext
) -> None:
    """API Gateway base64-encodes some bodies (isBase64Encoded); they are read all the same."""
    data = json.dumps({"tenant_id": "acme", "url": "https://hooks.example.com/in"}).encode()
    event = api_gateway_event("POST", SUBSCRIPTIONS, [("content-type", "application/json")], data)
    event.update(body=base64.b64encode(data).decode("ascii"), isBase64Encoded=True)
    event["requestContext"]["authorizer"] = {"iam": iam_context(OPERATOR_ARN)}
    answer = normalize_answer(api.module.handler(event, lambda_context()))
    assert answer["statusCode"] == 201, answer["body"]


def test_optional_bodies_may_be_left_out_without_a_content_type(
    api: InProcessApi, stack: LocalResources
) -> None:
    receiver = Receiver()
    try:
        with use_context(api.module, allow_private_webhooks=True):
            created = api.post(SUBSCRIPTIONS, {"tenant_id": "acme", "url": receiver.url})
            path = f"{SUBSCRIPTIONS}/{created.body['subscription_id']}"
            rotated = api.call("POST", f"{path}/rotate-secret", content_type=None)
            assert rotated.status == 200, rotated.text
            redriven = api.call("POST", "/v1/dlq/redrive", content_type=None)
            assert redriven.status == 202, redriven.text
            # An empty body is no body, whatever Content-Type a client sets by habit.
            tested = api.call("POST", f"{path}/test", content_type="text/plain")
            assert tested.status == 200, tested.text
            assert tested.body["delivered"] is True
    finally:
        receiver.stop()
