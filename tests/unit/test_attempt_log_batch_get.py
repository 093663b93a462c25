"""Reading deliveries by id in bulk (an event's, derived from its claim; a page's entries): what
BatchGetItem leaves unprocessed is asked again, and a read that stays throttled fails with a code
an operator can act on."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from jobhooks.delivery.attempt_log import AttemptLog
from jobhooks.delivery.exceptions import DeliveryLogBusyError
from jobhooks.delivery_task import delivery_id_for
from jobhooks.storage.reads import BATCH_GET_ROUNDS

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
EVENT = "fetcher.job.completed.j-1"


def stored(subscription_id: str) -> dict[str, Any]:
    return {
        "delivery_id": {"S": delivery_id_for(EVENT, subscription_id)},
        "event_id": {"S": EVENT},
        "webhook_id": {"S": "msg_1"},
        "subscription_id": {"S": subscription_id},
        "tenant_id": {"S": "acme"},
        "event_type": {"S": "job.completed"},
        "status": {"S": "succeeded"},
        "created_at": {"S": "2026-03-01T11:59:00.000Z"},
        "updated_at": {"S": "2026-03-01T11:59:00.000Z"},
        "expires_at": {"N": str(int(NOW.timestamp()) + 86400)},
    }


class ThrottlingDynamoDB:
    """Answers each BatchGetItem with one item and leaves the rest unprocessed, `stingy` times."""

    def __init__(self, items: dict[str, dict[str, Any]], stingy: int) -> None:
        self.items = items
        self.stingy = stingy
        self.requests: list[list[str]] = []

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        ((table, request),) = RequestItems.items()
        keys = [key["delivery_id"]["S"] for key in request["Keys"]]
        self.requests.append(keys)
        served, left = (keys[:1], keys[1:]) if self.stingy > 0 else (keys, [])
        self.stingy -= 1
        response: dict[str, Any] = {
            "Responses": {table: [self.items[k] for k in served if k in self.items]}
        }
        if left:
            response["UnprocessedKeys"] = {
                table: {"Keys": [{"delivery_id": {"S": k}} for k in left]}
            }
        return response


def log_over(dynamodb: ThrottlingDynamoDB, sleeps: list[float]) -> AttemptLog:
    return AttemptLog("deliveries", dynamodb, clock=lambda: NOW, sleep=sleeps.append)


def test_unprocessed_keys_are_asked_again_after_a_pause() -> None:
    subscriptions = ["sub_c", "sub_a", "sub_b"]
    dynamodb = ThrottlingDynamoDB(
        {delivery_id_for(EVENT, s): stored(s) for s in subscriptions}, stingy=2
    )
    sleeps: list[float] = []

    found = log_over(dynamodb, sleeps).get_many(delivery_id_for(EVENT, s) for s in subscriptions)

    assert sorted(r.subscription_id for r in found.values()) == ["sub_a", "sub_b", "sub_c"]
    assert all(found[r.delivery_id] is r for r in found.values())
    assert [len(keys) for keys in dynamodb.requests] == [3, 2, 1]
    assert len(sleeps) == 2 and sleeps[0] < sleeps[1]


def test_keys_still_unprocessed_after_the_last_round_fail_as_busy() -> None:
    ids = [delivery_id_for(EVENT, f"sub_{n}") for n in range(BATCH_GET_ROUNDS + 1)]
    dynamodb = ThrottlingDynamoDB({}, stingy=1_000)

    with pytest.raises(DeliveryLogBusyError) as raised:
        log_over(dynamodb, []).get_many(ids)

    assert raised.value.code == "deliveries_busy"


def test_no_ids_read_nothing_and_an_id_named_twice_is_asked_once() -> None:
    dynamodb = ThrottlingDynamoDB({}, stingy=0)

    assert log_over(dynamodb, []).get_many([]) == {}
    assert dynamodb.requests == []
    # DynamoDB refuses a BatchGetItem that names one key twice.
    log_over(dynamodb, []).get_many([delivery_id_for(EVENT, "sub_a")] * 2)
    assert dynamodb.requests == [[delivery_id_for(EVENT, "sub_a")]]


def test_more_ids_than_one_call_takes_are_read_in_calls_of_100() -> None:
    ids = [delivery_id_for(EVENT, f"sub_{n:03d}") for n in range(250)]
    dynamodb = ThrottlingDynamoDB({}, stingy=0)

    log_over(dynamodb, []).get_many(ids)

    assert [len(keys) for keys in dynamodb.requests] == [100, 100, 50]
