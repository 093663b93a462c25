"""`ItemUpdate`: one UpdateItem request, built clause by clause.

Every attribute name goes behind a `#name` placeholder (many, like `status` and `state`, are
DynamoDB reserved words) and every value behind `:name`; the request carries only the names and
values its expressions use, as DynamoDB requires.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ItemUpdate:
    """SET, REMOVE and ADD clauses and an optional condition, as one UpdateItem request."""

    def __init__(self) -> None:
        self._sets: list[str] = []
        self._removes: list[str] = []
        self._adds: list[str] = []
        self._condition: str | None = None
        self._names: dict[str, str] = {}
        self._values: dict[str, Any] = {}

    def name(self, attribute: str) -> str:
        """The placeholder of `attribute` (`#attribute`), for clauses and conditions."""
        self._names[f"#{attribute}"] = attribute
        return f"#{attribute}"

    def value(self, placeholder: str, value: Mapping[str, Any]) -> str:
        """Bind `:placeholder` to `value` (an attribute value, e.g. `{"S": "done"}`)."""
        self._values[f":{placeholder}"] = dict(value)
        return f":{placeholder}"

    def set(self, attribute: str, value: Mapping[str, Any]) -> ItemUpdate:
        self._sets.append(f"{self.name(attribute)} = {self.value(attribute, value)}")
        return self

    def set_if_missing(self, attribute: str, value: Mapping[str, Any]) -> ItemUpdate:
        name = self.name(attribute)
        self._sets.append(f"{name} = if_not_exists({name}, {self.value(attribute, value)})")
        return self

    def append(self, attribute: str, element: Mapping[str, Any]) -> ItemUpdate:
        """Add `element` at the end of the list `attribute` (created when missing)."""
        name = self.name(attribute)
        added = self.value(attribute, {"L": [dict(element)]})
        nothing = self.value("nothing", {"L": []})
        self._sets.append(f"{name} = list_append(if_not_exists({name}, {nothing}), {added})")
        return self

    def remove(self, attribute: str) -> ItemUpdate:
        self._removes.append(self.name(attribute))
        return self

    def add(self, attribute: str, value: Mapping[str, Any]) -> ItemUpdate:
        """ADD: a number to a number, members to a set."""
        self._adds.append(f"{self.name(attribute)} {self.value(attribute, value)}")
        return self

    def condition(self, expression: str) -> ItemUpdate:
        """The ConditionExpression; its `#names` and `:values` come from `name()` and `value()`."""
        self._condition = expression
        return self

    def request(self, table_name: str, key: Mapping[str, Any]) -> dict[str, Any]:
        clauses = []
        if self._sets:
            clauses.append("SET " + ", ".join(self._sets))
        if self._removes:
            clauses.append("REMOVE " + ", ".join(self._removes))
        if self._adds:
            clauses.append("ADD " + ", ".join(self._adds))
        request: dict[str, Any] = {
            "TableName": table_name,
            "Key": dict(key),
            "UpdateExpression": " ".join(clauses),
        }
        if self._condition is not None:
            request["ConditionExpression"] = self._condition
        if self._names:
            request["ExpressionAttributeNames"] = dict(self._names)
        if self._values:
            request["ExpressionAttributeValues"] = dict(self._values)
        return request
