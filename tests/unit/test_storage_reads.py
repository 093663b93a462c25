"""Every item of a Query or Scan, across DynamoDB's pages (storage/reads.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobhooks.storage.reads import every_item, every_page


class PagedTable:
    """Answers like DynamoDB: `page_size` items per call and a `LastEvaluatedKey` while more
    remain, and keeps every request it got."""

    def __init__(self, items: list[dict[str, Any]], page_size: int) -> None:
        self.items = items
        self.page_size = page_size
        self.requests: list[dict[str, Any]] = []

    def query(self, **request: Any) -> Mapping[str, Any]:
        self.requests.append(request)
        start = int(request.get("ExclusiveStartKey", {"n": {"N": "0"}})["n"]["N"])
        page = self.items[start : start + self.page_size]
        response: dict[str, Any] = {"Items": page, "Count": len(page)}
        if start + self.page_size < len(self.items):
            response["LastEvaluatedKey"] = {"n": {"N": str(start + self.page_size)}}
        return response


def test_every_item_follows_the_last_evaluated_key_to_the_last_page() -> None:
    table = PagedTable([{"id": {"S": str(n)}} for n in range(7)], page_size=3)

    items = list(every_item(table.query, {"TableName": "t"}))

    assert [item["id"]["S"] for item in items] == [str(n) for n in range(7)]
    assert [request.get("ExclusiveStartKey") for request in table.requests] == [
        None,
        {"n": {"N": "3"}},
        {"n": {"N": "6"}},
    ]
    assert all(request["TableName"] == "t" for request in table.requests)


def test_the_callers_request_is_left_as_it_was() -> None:
    table = PagedTable([{"id": {"S": str(n)}} for n in range(4)], page_size=2)
    request = {"TableName": "t"}

    assert sum(response["Count"] for response in every_page(table.query, request)) == 4
    assert request == {"TableName": "t"}


def test_an_empty_answer_is_one_call_and_no_items() -> None:
    table = PagedTable([], page_size=5)

    assert list(every_item(table.query, {"TableName": "t"})) == []
    assert len(table.requests) == 1
