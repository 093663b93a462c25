"""A forged cursor is the caller's mistake (422 `invalid_cursor`), never a DynamoDB error (502).

Cursors are base64url JSON naming the last item's key. A cursor whose key holds an empty string
or a value of the wrong type would reach DynamoDB as an `ExclusiveStartKey` that DynamoDB refuses
(empty string keys are invalid), which the API could only answer with 502. Every listing route
must refuse it before any request is made; the AWS limits guard (tests/fixtures/aws.py) fails
the test if one reaches DynamoDB anyway.
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
        ("/v1/subscriptions", {"tenant_id": "acme"}, {"t": "acme", "s": "sub_1"}),
        (
            "/v1/deliveries",
            {"subscription_id": "sub_1"},
            {"i": "by_subscription", "p": "sub_1", "d": "dlv_1", "s": AT},
        ),
        ("/v1/events/unmatched", {"tenant_id": "acme"}, {"t": "acme", "e": EVENT_ID, "d": AT}),
        ("/v1/quarantine", {}, {"q": "q_1", "r": None, "at": AT}),
        (
            "/v1/quarantine",
            {"reason": "stale_timestamp"},
            {"q": "q_1", "r": "stale_timestamp", "at": AT},
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
