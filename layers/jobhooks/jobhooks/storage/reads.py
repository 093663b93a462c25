"""Reading every item a Query or Scan matches, page after page, or every item of a set of keys.

DynamoDB answers at most 1 MB per call and says where to go on with `LastEvaluatedKey`; a
store that needs the whole answer (one tenant's rules, the grants, a COUNT) follows it here, so
no store can forget the second page. Listings that hand pages to a caller use `pages` instead.
A BatchGetItem takes at most 100 keys and answers 200 with the keys it had no capacity for,
which botocore does not retry: `batch_get` asks for them again, so no store can drop them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final

DynamoDBCall = Callable[..., Mapping[str, Any]]

MAX_BATCH_GET_KEYS: Final = 100
# Calls per 100 keys, backing off from BATCH_GET_BACKOFF_SECONDS, before the read fails.
BATCH_GET_ROUNDS: Final = 6
BATCH_GET_BACKOFF_SECONDS: Final = 0.05


def batch_get(
    dynamodb: Any,
    table_name: str,
    keys: Sequence[Mapping[str, Any]],
    *,
    request: Mapping[str, Any] | None = None,
    sleep: Callable[[float], None],
    busy: Callable[[], Exception],
) -> list[dict[str, Any]]:
    """The items of `keys` (no key twice: DynamoDB refuses it) that exist, in no order, 100 keys
    a call; `request` adds `ConsistentRead` or a projection to each call. Keys left unprocessed
    are asked again after a pause; `busy()` is raised when some are still unread after
    `BATCH_GET_ROUNDS` calls."""
    items: list[dict[str, Any]] = []
    for start in range(0, len(keys), MAX_BATCH_GET_KEYS):
        pending = list(keys[start : start + MAX_BATCH_GET_KEYS])
        for round_ in range(BATCH_GET_ROUNDS):
            if round_:
                sleep(BATCH_GET_BACKOFF_SECONDS * 2 ** (round_ - 1))
            response = dynamodb.batch_get_item(
                RequestItems={table_name: {"Keys": pending, **(request or {})}}
            )
            items.extend(response.get("Responses", {}).get(table_name, []))
            pending = response.get("UnprocessedKeys", {}).get(table_name, {}).get("Keys", [])
            if not pending:
                break
        else:
            raise busy()
    return items


def every_page(call: DynamoDBCall, request: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Each response of `call(**request)` (a client's `query` or `scan`), following the keys."""
    arguments = dict(request)
    while True:
        response = call(**arguments)
        yield response
        start_key = response.get("LastEvaluatedKey")
        if not start_key:
            return
        arguments["ExclusiveStartKey"] = start_key


def every_item(call: DynamoDBCall, request: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Each item `call(**request)` matches, in DynamoDB's order, across every page."""
    for response in every_page(call, request):
        yield from response.get("Items", [])
