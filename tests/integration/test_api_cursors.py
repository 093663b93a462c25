"""A forged cursor is the caller's mistake (422 `invalid_cursor`), never a DynamoDB error (502).

Cursors are base64url JSON naming the last item's key. A cursor whose key holds an empty string,
a value of the wrong type, or one of another shape than the store writes there (1,100 characters
where a subscription id has at most 68) would reach DynamoDB as an `ExclusiveStartKey` that
DynamoDB refuses, which the API could only answer with 502 (and count in the operators' error
alarm). Every listing route, the API's and the portal's, must refuse it before any request is
made; the AWS limits guard (tests/fixtures/aws.py) fails the test if one reaches DynamoDB anyway.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from jobhooks.management.context import ManagementContext
from jobhooks_tools.local.template import LocalResources

from tests.integration.api_support import InProcessApi, use_context

AT = "2026-07-13T18:04:11.204Z"
EVENT_ID = "fetcher.job.completed.0197a3f2"
SUB = "sub_AAAAAAAAAAAAAAAAAAAAAA"
DLV = "dlv_" + "0" * 32
QID = "q_" + "0" * 32


@pytest.fixture
def api() -> InProcessApi:
    return InProcessApi()


@pytest.fixture
def context(stack: LocalResources, api: InProcessApi) -> Iterator[ManagementContext]:
    with use_context(api.module) as context:
        yield context


def cursor(document: dict[str, Any]) -> str:
    """A cursor as the stores write them: base64url JSON, no padding."""
    text = json.dumps(document, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


FORGED = [
    pytest.param("/v1/subscriptions", {"tenant_id": "acme"}, {"t": "acme", "s": ""}, id="subs"),
    pytest.param("/v1/subscriptions", {"tenant_id": "acme"}, {"t": "acme", "s": 7}, id="subs-type"),
    pytest.param(
        "/v1/deliveries",
        {"subscription_id": "sub_1"},
        {"i": "by_subscription", "p": "sub_1", "d": "", "s": AT},
        id="deliveries-empty-id",
    ),
    pytest.param(
        "/v1/deliveries",
        {"subscription_id": "sub_1"},
        {"i": "by_subscription", "p": "sub_1", "d": "dlv_1", "s": ""},
        id="deliveries-empty-time",
    ),
    pytest.param(
        "/v1/deliveries",
        {"subscription_id": "sub_1"},
        {"i": "by_subscription", "p": "sub_1", "d": ["dlv_1"], "s": AT},
        id="deliveries-type",
    ),
    pytest.param(
        "/v1/deliveries",
        {"event_id": EVENT_ID},
        {"i": "by_event", "p": EVENT_ID, "d": "dlv_1", "s": ""},
        id="event-deliveries",
    ),
    pytest.param(
        "/v1/events/unmatched",
        {"tenant_id": "acme"},
        {"t": "acme", "e": "", "d": AT},
        id="unmatched-empty-id",
    ),
    pytest.param(
        "/v1/events/unmatched",
        {"tenant_id": "acme"},
        {"t": "acme", "e": EVENT_ID, "d": ""},
        id="unmatched-empty-time",
    ),
    pytest.param(
        "/v1/events/unmatched",
        {"tenant_id": "acme"},
        {"t": "acme", "e": EVENT_ID, "d": None},
        id="unmatched-type",
    ),
    pytest.param("/v1/quarantine", {}, {"q": "", "r": None, "at": AT}, id="quarantine"),
    # Strings, but not of the shape the store writes in that field.
    pytest.param(
        "/v1/subscriptions", {"tenant_id": "acme"}, {"t": "acme", "s": "x" * 1100}, id="subs-long"
    ),
    pytest.param(
        "/v1/subscriptions",
        {"tenant_id": "acme"},
        {"t": "acme", "s": "sub_" + "a" * 1100},
        id="subs-long-id",
    ),
    pytest.param(
        "/v1/subscriptions", {"tenant_id": "acme"}, {"t": "acme", "s": "dlv_1"}, id="subs-shape"
    ),
    pytest.param(
        "/v1/deliveries",
        {"subscription_id": SUB},
        {"i": "by_subscription", "p": SUB, "d": "d" * 1100, "s": AT},
        id="deliveries-long-id",
    ),
    pytest.param(
        "/v1/deliveries",
        {"subscription_id": SUB},
        {"i": "by_subscription", "p": SUB, "d": DLV, "s": "yesterday"},
        id="deliveries-time-shape",
    ),
    pytest.param(
        "/v1/deliveries",
        {"event_id": EVENT_ID},
        {"i": "by_event", "p": EVENT_ID, "d": DLV, "s": "s" * 1100},
        id="event-deliveries-long-subscription",
    ),
    pytest.param(
        "/v1/events/unmatched",
        {"tenant_id": "acme"},
        {"t": "acme", "e": "e" * 1100, "d": AT},
        id="unmatched-long-id",
    ),
    pytest.param(
        "/v1/events/unmatched",
        {"tenant_id": "acme"},
        {"t": "acme", "e": EVENT_ID, "d": "2026-13-45T99:99:99Z"},
        id="unmatched-time-shape",
    ),
    pytest.param(
        "/v1/events/unmatched",
        {"tenant_id": "acme"},
        {"t": "acme", "e": "fetcher\x00job", "d": AT},
        id="unmatched-control-character",
    ),
    pytest.param(
        "/v1/quarantine", {}, {"q": "q" * 1100, "r": None, "at": AT}, id="quarantine-long"
    ),
    pytest.param(
        "/v1/quarantine", {}, {"q": QID, "r": None, "at": "t" * 1100}, id="quarantine-time-long"
    ),
    pytest.param(
        "/v1/quarantine",
        {"reason": "stale_timestamp"},
        {"q": "q_1", "r": "stale_timestamp", "at": ""},
        id="quarantine-by-reason",
    ),
    pytest.param(
        "/v1/quarantine",
        {"reason": "stale_timestamp"},
        {"q": "", "r": "stale_timestamp", "at": AT},
        id="quarantine-by-reason-empty-id",
    ),
]


@pytest.mark.parametrize(("path", "query", "document"), FORGED)
def test_a_forged_cursor_with_an_empty_or_mistyped_key_is_refused_as_invalid(
    api: InProcessApi,
    context: ManagementContext,
    path: str,
    query: dict[str, str],
    document: dict[str, Any],
) -> None:
    answer = api.get(path, **query, cursor=cursor(document))
    assert answer.status == 422, answer.text
    assert answer.error["code"] == "invalid_cursor"
    assert answer.error["field"] == "cursor"


@pytest.mark.parametrize(
    ("path", "query", "document"),
    [
        ("/v1/subscriptions", {"tenant_id": "acme"}, {"t": "acme", "s": SUB}),
        (
            "/v1/deliveries",
            {"subscription_id": SUB},
            {"i": "by_subscription", "p": SUB, "d": DLV, "s": AT},
        ),
        (
            "/v1/deliveries",
            {"event_id": EVENT_ID},
            {"i": "by_event", "p": EVENT_ID, "d": DLV, "s": SUB},
        ),
        ("/v1/events/unmatched", {"tenant_id": "acme"}, {"t": "acme", "e": EVENT_ID, "d": AT}),
        ("/v1/quarantine", {}, {"q": QID, "r": None, "at": AT}),
        (
            "/v1/quarantine",
            {"reason": "stale_timestamp"},
            {"q": QID, "r": "stale_timestamp", "at": AT},
        ),
    ],
)
def test_a_well_formed_cursor_past_every_item_is_an_empty_page(
    api: InProcessApi,
    context: ManagementContext,
    path: str,
    query: dict[str, str],
    document: dict[str, Any],
) -> None:
    answer = api.get(path, **query, cursor=cursor(document))
    assert answer.status == 200, answer.text
    assert answer.body["next_cursor"] is None


@pytest.mark.parametrize(
    "forged",
    [
        pytest.param("not base64 at all!", id="alphabet"),
        pytest.param("A" * 2048, id="longest"),
        pytest.param(cursor({"t": "acme", "s": "x" * 1100}), id="long-key"),
        pytest.param(cursor({"t": "acme", "s": "sub_" + "a" * 65}), id="id-shape"),
        pytest.param(cursor(["acme", SUB]), id="not-an-object"),
    ],
)
def test_portal_listings_refuse_forged_cursors_too(context: ManagementContext, forged: str) -> None:
    from tests.integration.portal_support import PortalBrowser, fresh_session_token, gateway_api

    browser = PortalBrowser(gateway_api(), fresh_session_token("acme"))
    created = browser.post("/portal/api/subscriptions", {"url": "https://hooks.example.com/in"})
    assert created.status == 201, created.text
    subscription_id = created.body["subscription_id"]
    for path in (
        "/portal/api/subscriptions",
        f"/portal/api/subscriptions/{subscription_id}/deliveries",
    ):
        answer = browser.get(path, cursor=forged)
        assert answer.status == 422, (path, answer.text)
        assert answer.error["code"] == "invalid_cursor", (path, answer.text)
