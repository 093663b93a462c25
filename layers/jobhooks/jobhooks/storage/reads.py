"""Reading every item a Query or Scan matches, page after page.

DynamoDB answers at most 1 MB per call and says where to go on with `LastEvaluatedKey`; a
store that needs the whole answer (one tenant's rules, the grants, a COUNT) follows it here, so
no store can forget the second page. Listings that hand pages to a caller use `pages` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

DynamoDBCall = Callable[..., Mapping[str, Any]]


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
