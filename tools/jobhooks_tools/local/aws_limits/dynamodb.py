"""What DynamoDB refuses in a request, as the real service does (moto enforces only some of it).

The limits come from the DynamoDB developer guide ("Service, account, and table quotas",
"Item sizes and formats", "Reserved words", "Expression attribute names/values") and the API
reference (BatchWriteItem, BatchGetItem, TransactWriteItems). Which attributes are keys is
learned from the CreateTable requests the guarded clients send (`KeySchemas`): the tests and the
local stack create every table through one, from template.yaml.

Each rule is a function named after it that yields a `Violation` per problem; `check` applies
the ones an operation's request is subject to.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from jobhooks_tools.local.aws_limits.dynamodb_expressions import (
    MAX_EXPRESSION_BYTES,
    check_expressions,
)
from jobhooks_tools.local.aws_limits.violations import Violation

# "400 KB": DynamoDB's KB is 1,024 bytes; attribute names count, as do the values.
MAX_ITEM_BYTES: Final = 409_600
MAX_PARTITION_KEY_BYTES: Final = 2048
MAX_SORT_KEY_BYTES: Final = 1024
MAX_BATCH_WRITE_REQUESTS: Final = 25
MAX_BATCH_WRITE_BYTES: Final = 16 * 1024 * 1024
MAX_BATCH_GET_KEYS: Final = 100
MAX_TRANSACT_ITEMS: Final = 100
MAX_TRANSACT_BYTES: Final = 4 * 1024 * 1024
MAX_NESTING_DEPTH: Final = 32
MAX_NUMBER_DIGITS: Final = 38
# Numbers: positive or negative, magnitude 1E-130 to 9.99...E+125.
_MIN_NUMBER_EXPONENT: Final = -130
_MAX_NUMBER_EXPONENT: Final = 125
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_SCALAR_KEY_TYPES: Final = frozenset({"S", "N", "B"})
_VALUE_TYPES: Final = frozenset({"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"})

RULES: Final = {
    "dynamodb.item_size": (
        f"an item (attribute names + values, by DynamoDB's size rules) is at most "
        f"{MAX_ITEM_BYTES} bytes (400 KB) in PutItem, BatchWriteItem and TransactWriteItems"
    ),
    "dynamodb.key_values": (
        "key attributes (table and index keys in items; Key, ExclusiveStartKey, batch and "
        "transaction keys; the values a KeyConditionExpression compares) are S, N or B of the "
        "declared type, and a string or binary key is never empty"
    ),
    "dynamodb.key_size": (
        f"a partition key value is at most {MAX_PARTITION_KEY_BYTES} bytes, a sort key value at "
        f"most {MAX_SORT_KEY_BYTES}"
    ),
    "dynamodb.attribute_values": (
        "attribute values are well formed: one type each, no empty or duplicated sets, numbers "
        f"of at most {MAX_NUMBER_DIGITS} digits within DynamoDB's range, nesting at most "
        f"{MAX_NESTING_DEPTH} levels"
    ),
    "dynamodb.batch_write": (
        f"BatchWriteItem has 1 to {MAX_BATCH_WRITE_REQUESTS} put or delete requests, at most "
        f"{MAX_BATCH_WRITE_BYTES} bytes (16 MB) of items, and no key twice"
    ),
    "dynamodb.batch_get": (
        f"BatchGetItem asks for 1 to {MAX_BATCH_GET_KEYS} keys and no key twice (its 16 MB "
        "limit is on the answer, which returns the rest as UnprocessedKeys)"
    ),
    "dynamodb.transact_items": (
        f"TransactWriteItems and TransactGetItems have 1 to {MAX_TRANSACT_ITEMS} actions, "
        f"writes at most {MAX_TRANSACT_BYTES} bytes (4 MB), and no two actions on one item"
    ),
    "dynamodb.reserved_words": (
        "no DynamoDB reserved word stands bare as an attribute name in a Key condition, Filter, "
        "Condition, Update or Projection expression"
    ),
    "dynamodb.expression_names": (
        "every #name an expression uses is in ExpressionAttributeNames and every one defined "
        "is used; the map is never empty"
    ),
    "dynamodb.expression_values": (
        "every :value an expression uses is in ExpressionAttributeValues and every one defined "
        "is used; the map is never empty"
    ),
    "dynamodb.expression_length": f"an expression is at most {MAX_EXPRESSION_BYTES} bytes",
}


# -- which attributes are keys -----------------------------------------------------------------


@dataclass(frozen=True)
class TableKeys:
    """A table's key attributes: its primary key and every secondary index's."""

    partition: str
    sort: str | None = None
    index_keys: frozenset[str] = frozenset()
    index_sort_keys: frozenset[str] = frozenset()
    types: Mapping[str, str] = field(default_factory=dict)
    """AttributeDefinitions: the declared S, N or B of each key attribute."""

    @property
    def primary(self) -> tuple[str, ...]:
        return (self.partition, self.sort) if self.sort else (self.partition,)

    @property
    def all_keys(self) -> frozenset[str]:
        return frozenset(self.primary) | self.index_keys

    def is_sort_key(self, name: str) -> bool:
        return name == self.sort or name in self.index_sort_keys


class KeySchemas:
    """The key schemas of the tables created through guarded clients, by table name."""

    def __init__(self) -> None:
        self._tables: dict[str, TableKeys] = {}
        self._lock = threading.Lock()

    def observe(self, operation: str, params: Mapping[str, Any]) -> None:
        """Learn from CreateTable, forget on DeleteTable."""
        table = params.get("TableName")
        if not isinstance(table, str):
            return
        if operation == "CreateTable":
            keys = table_keys(params)
            if keys is not None:
                with self._lock:
                    self._tables[table] = keys
        elif operation == "DeleteTable":
            with self._lock:
                self._tables.pop(table, None)

    def get(self, table: object) -> TableKeys | None:
        if not isinstance(table, str):
            return None
        with self._lock:
            return self._tables.get(table)


def table_keys(create_table: Mapping[str, Any]) -> TableKeys | None:
    """The key attributes a CreateTable request declares."""
    partition, sort = _key_schema(create_table.get("KeySchema"))
    if partition is None:
        return None
    index_keys: set[str] = set()
    index_sort_keys: set[str] = set()
    for group in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
        for index in create_table.get(group) or ():
            if isinstance(index, Mapping):
                index_partition, index_sort = _key_schema(index.get("KeySchema"))
                index_keys.update(name for name in (index_partition, index_sort) if name)
                if index_sort:
                    index_sort_keys.add(index_sort)
    types = {
        str(definition.get("AttributeName")): str(definition.get("AttributeType"))
        for definition in create_table.get("AttributeDefinitions") or ()
        if isinstance(definition, Mapping)
    }
    return TableKeys(partition, sort, frozenset(index_keys), frozenset(index_sort_keys), types)


def check(
    operation: str, params: Mapping[str, Any], schemas: KeySchemas | None = None
) -> list[Violation]:
    """Every limit `params` (as passed to the boto3 method) breaks; empty when DynamoDB takes it."""
    check_ = _CHECKS.get(operation)
    if check_ is None:
        return []
    return list(check_(params, schemas or KeySchemas()))


# -- the rules: values and items -------------------------------------------------------------


def attribute_values(where: str, value: object, depth: int = 1) -> Iterator[Violation]:
    """One AttributeValue (`{"S": "..."}`, `{"M": {...}}`, ...) and what it nests."""
    if not isinstance(value, Mapping):
        return
    if len(value) != 1 or next(iter(value)) not in _VALUE_TYPES:
        yield Violation(
            "dynamodb.attribute_values",
            f"{where} must have exactly one of {', '.join(sorted(_VALUE_TYPES))}",
        )
        return
    if depth > MAX_NESTING_DEPTH:
        yield Violation(
            "dynamodb.attribute_values",
            f"{where} is nested deeper than {MAX_NESTING_DEPTH} levels",
        )
        return
    [(kind, content)] = value.items()
    if kind == "N":
        yield from _number(where, content)
    elif kind in ("SS", "NS", "BS"):
        members = list(content) if isinstance(content, list | tuple | set | frozenset) else []
        if not members:
            yield Violation(
                "dynamodb.attribute_values",
                f"{where} is an empty {kind}: DynamoDB has no empty sets",
            )
        elif len({_hashable(member) for member in members}) != len(members):
            yield Violation(
                "dynamodb.attribute_values", f"{where} is a {kind} with a duplicated member"
            )
        if kind == "NS":
            for member in members:
                yield from _number(where, member)
    elif kind == "M" and isinstance(content, Mapping):
        for name, nested in content.items():
            yield from attribute_values(f"{where}.{name}", nested, depth + 1)
    elif kind == "L" and isinstance(content, list | tuple):
        for n, nested in enumerate(content):
            yield from attribute_values(f"{where}[{n}]", nested, depth + 1)
    elif kind == "NULL" and content is not True:
        yield Violation("dynamodb.attribute_values", f"{where} NULL must be true")


def item_size(where: str, item: Mapping[str, Any]) -> Iterator[Violation]:
    size = item_bytes(item)
    if size > MAX_ITEM_BYTES:
        yield Violation(
            "dynamodb.item_size",
            f"{where} is {size} bytes by DynamoDB's size rules; an item holds at most "
            f"{MAX_ITEM_BYTES} (400 KB)",
        )


def key_attribute(
    where: str, name: str, value: object, keys: TableKeys | None
) -> Iterator[Violation]:
    """One key attribute's value: scalar, of the declared type, not empty, not too long."""
    if not isinstance(value, Mapping) or len(value) != 1:
        return
    [(kind, content)] = value.items()
    declared = keys.types.get(name) if keys is not None else None
    if kind not in _SCALAR_KEY_TYPES or (declared is not None and kind != declared):
        wanted = declared or "S, N or B"
        yield Violation(
            "dynamodb.key_values", f"{where} is a {kind}; the key attribute {name!r} is {wanted}"
        )
        return
    size = _scalar_bytes(kind, content)
    if kind in ("S", "B") and size == 0:
        yield Violation(
            "dynamodb.key_values",
            f"{where} is an empty {'string' if kind == 'S' else 'binary'}: DynamoDB refuses "
            f"empty key values (key attribute {name!r})",
        )
    limit = (
        MAX_SORT_KEY_BYTES
        if keys is not None and keys.is_sort_key(name)
        else MAX_PARTITION_KEY_BYTES
    )
    if size > limit:
        yield Violation(
            "dynamodb.key_size",
            f"{where} is {size} bytes; a {'sort' if limit == MAX_SORT_KEY_BYTES else 'partition'} "
            f"key value holds at most {limit}",
        )


def key(
    where: str, key_value: object, keys: TableKeys | None, *, primary: bool
) -> Iterator[Violation]:
    """A `Key` (`primary`: exactly the table's primary key) or an `ExclusiveStartKey`."""
    if not isinstance(key_value, Mapping):
        return
    for name, value in key_value.items():
        yield from attribute_values(f"{where}.{name}", value)
        yield from key_attribute(f"{where}.{name}", str(name), value, keys)
    if primary and keys is not None and set(key_value) != set(keys.primary):
        yield Violation(
            "dynamodb.key_values",
            f"{where} has {sorted(key_value)}; the table's key is {list(keys.primary)}",
        )


def item(where: str, item_value: object, keys: TableKeys | None) -> Iterator[Violation]:
    """An item to write: its values, its size, and its key attributes (table's and indexes')."""
    if not isinstance(item_value, Mapping):
        return
    for name, value in item_value.items():
        yield from attribute_values(f"{where}.{name}", value)
    yield from item_size(where, item_value)
    if keys is None:
        return
    missing = [name for name in keys.primary if name not in item_value]
    if missing:
        yield Violation("dynamodb.key_values", f"{where} lacks the key attribute(s) {missing}")
    for name in sorted(keys.all_keys & set(item_value)):
        yield from key_attribute(f"{where}.{name}", name, item_value[name], keys)


def expressions(
    where: str, request: Mapping[str, Any], fields: Sequence[str]
) -> Iterator[Violation]:
    """Reserved words, placeholders, lengths; the values a key condition compares with keys."""
    violations, use = check_expressions(where, request, fields)
    yield from violations
    values = request.get("ExpressionAttributeValues")
    if not isinstance(values, Mapping):
        return
    for name, value in values.items():
        at = f"{where}ExpressionAttributeValues[{name}]"
        yield from attribute_values(at, value)
        empty = isinstance(value, Mapping) and (value.get("S") == "" or value.get("B") in (b"", ""))
        if empty and name in use.key_condition_values:
            yield Violation(
                "dynamodb.key_values",
                f"{at} is empty and KeyConditionExpression compares it with a key: "
                "DynamoDB refuses empty key values",
            )


# -- the rules: batches and transactions -----------------------------------------------------


def batch_write(params: Mapping[str, Any], schemas: KeySchemas) -> Iterator[Violation]:
    request_items = params.get("RequestItems")
    if not isinstance(request_items, Mapping):
        return
    count, total = 0, 0
    for table, requests in request_items.items():
        keys = schemas.get(table)
        seen: set[tuple[Any, ...]] = set()
        for n, request in enumerate(requests if isinstance(requests, list | tuple) else ()):
            count += 1
            where = f"RequestItems[{table}][{n}]"
            if not isinstance(request, Mapping) or len(request) != 1:
                yield Violation(
                    "dynamodb.batch_write",
                    f"{where} must hold exactly one PutRequest or DeleteRequest",
                )
                continue
            put, delete = request.get("PutRequest"), request.get("DeleteRequest")
            identity: tuple[Any, ...] | None = None
            if isinstance(put, Mapping):
                put_item = put.get("Item")
                yield from item(f"{where}.PutRequest.Item", put_item, keys)
                if isinstance(put_item, Mapping):
                    total += item_bytes(put_item)
                    identity = _identity(put_item, keys)
            elif isinstance(delete, Mapping):
                yield from key(f"{where}.DeleteRequest.Key", delete.get("Key"), keys, primary=True)
                identity = _identity(delete.get("Key"), keys)
            if identity is not None:
                if identity in seen:
                    yield Violation(
                        "dynamodb.batch_write",
                        f"{where} writes a key an earlier request of the batch writes: DynamoDB "
                        "refuses duplicate keys in one BatchWriteItem",
                    )
                seen.add(identity)
    if not 1 <= count <= MAX_BATCH_WRITE_REQUESTS:
        yield Violation(
            "dynamodb.batch_write",
            f"BatchWriteItem has {count} requests; DynamoDB takes 1 to {MAX_BATCH_WRITE_REQUESTS}",
        )
    if total > MAX_BATCH_WRITE_BYTES:
        yield Violation(
            "dynamodb.batch_write",
            f"BatchWriteItem writes {total} bytes of items; DynamoDB takes at most "
            f"{MAX_BATCH_WRITE_BYTES}",
        )


def batch_get(params: Mapping[str, Any], schemas: KeySchemas) -> Iterator[Violation]:
    request_items = params.get("RequestItems")
    if not isinstance(request_items, Mapping):
        return
    count = 0
    for table, request in request_items.items():
        if not isinstance(request, Mapping):
            continue
        keys = schemas.get(table)
        where = f"RequestItems[{table}]"
        seen: set[tuple[Any, ...]] = set()
        for n, key_value in enumerate(request.get("Keys") or ()):
            count += 1
            yield from key(f"{where}.Keys[{n}]", key_value, keys, primary=True)
            identity = _identity(key_value, keys)
            if identity is not None:
                if identity in seen:
                    yield Violation(
                        "dynamodb.batch_get",
                        f"{where}.Keys[{n}] repeats a key: DynamoDB refuses duplicate keys in "
                        "one BatchGetItem",
                    )
                seen.add(identity)
        yield from expressions(f"{where}.", request, ("ProjectionExpression",))
    if not 1 <= count <= MAX_BATCH_GET_KEYS:
        yield Violation(
            "dynamodb.batch_get",
            f"BatchGetItem asks for {count} keys; DynamoDB takes 1 to {MAX_BATCH_GET_KEYS}",
        )


def transact_write(params: Mapping[str, Any], schemas: KeySchemas) -> Iterator[Violation]:
    actions = params.get("TransactItems")
    actions = actions if isinstance(actions, list | tuple) else ()
    yield from _transaction_count(actions)
    total = 0
    seen: set[tuple[Any, ...]] = set()
    for n, action in enumerate(actions):
        if not isinstance(action, Mapping) or len(action) != 1:
            continue
        [(kind, request)] = action.items()
        if not isinstance(request, Mapping):
            continue
        where = f"TransactItems[{n}].{kind}"
        table = request.get("TableName")
        keys = schemas.get(table)
        identity = None
        if kind == "Put":
            put_item = request.get("Item")
            yield from item(f"{where}.Item", put_item, keys)
            yield from expressions(f"{where}.", request, ("ConditionExpression",))
            if isinstance(put_item, Mapping):
                total += item_bytes(put_item)
                identity = _identity(put_item, keys)
        else:
            yield from key(f"{where}.Key", request.get("Key"), keys, primary=True)
            fields = (
                ("UpdateExpression", "ConditionExpression")
                if kind == "Update"
                else ("ConditionExpression",)
            )
            yield from expressions(f"{where}.", request, fields)
            identity = _identity(request.get("Key"), keys)
            total += item_bytes(request.get("Key") or {})
        if identity is not None:
            identity = (table, *identity)
            if identity in seen:
                yield Violation(
                    "dynamodb.transact_items",
                    f"{where} acts on an item an earlier action of the transaction acts on: "
                    "DynamoDB refuses two actions on one item",
                )
            seen.add(identity)
    if total > MAX_TRANSACT_BYTES:
        yield Violation(
            "dynamodb.transact_items",
            f"TransactWriteItems writes {total} bytes; DynamoDB takes at most {MAX_TRANSACT_BYTES}",
        )


def transact_get(params: Mapping[str, Any], schemas: KeySchemas) -> Iterator[Violation]:
    actions = params.get("TransactItems")
    actions = actions if isinstance(actions, list | tuple) else ()
    yield from _transaction_count(actions)
    for n, action in enumerate(actions):
        get = action.get("Get") if isinstance(action, Mapping) else None
        if isinstance(get, Mapping):
            where = f"TransactItems[{n}].Get"
            yield from key(
                f"{where}.Key", get.get("Key"), schemas.get(get.get("TableName")), primary=True
            )
            yield from expressions(f"{where}.", get, ("ProjectionExpression",))


def _transaction_count(actions: Sequence[Any]) -> Iterator[Violation]:
    if not 1 <= len(actions) <= MAX_TRANSACT_ITEMS:
        yield Violation(
            "dynamodb.transact_items",
            f"the transaction has {len(actions)} actions; DynamoDB takes 1 to {MAX_TRANSACT_ITEMS}",
        )


# -- requests --------------------------------------------------------------------------------

_Check = Callable[[Mapping[str, Any], KeySchemas], Iterator[Violation]]


def _put_item(params: Mapping[str, Any], schemas: KeySchemas) -> Iterator[Violation]:
    yield from item("Item", params.get("Item"), schemas.get(params.get("TableName")))
    yield from expressions("", params, ("ConditionExpression",))


def _keyed(fields: tuple[str, ...]) -> _Check:
    """GetItem, UpdateItem, DeleteItem: a primary key and some expressions."""

    def check_keyed(params: Mapping[str, Any], schemas: KeySchemas) -> Iterator[Violation]:
        keys = schemas.get(params.get("TableName"))
        yield from key("Key", params.get("Key"), keys, primary=True)
        yield from expressions("", params, fields)

    return check_keyed


def _listing(fields: tuple[str, ...]) -> _Check:
    """Query, Scan: an ExclusiveStartKey (a previous page's LastEvaluatedKey) and expressions."""

    def check_listing(params: Mapping[str, Any], schemas: KeySchemas) -> Iterator[Violation]:
        keys = schemas.get(params.get("TableName"))
        yield from key("ExclusiveStartKey", params.get("ExclusiveStartKey"), keys, primary=False)
        yield from expressions("", params, fields)

    return check_listing


_CHECKS: Final[dict[str, _Check]] = {
    "PutItem": _put_item,
    "GetItem": _keyed(("ProjectionExpression",)),
    "DeleteItem": _keyed(("ConditionExpression",)),
    "UpdateItem": _keyed(("UpdateExpression", "ConditionExpression")),
    "Query": _listing(("KeyConditionExpression", "FilterExpression", "ProjectionExpression")),
    "Scan": _listing(("FilterExpression", "ProjectionExpression")),
    "BatchWriteItem": batch_write,
    "BatchGetItem": batch_get,
    "TransactWriteItems": transact_write,
    "TransactGetItems": transact_get,
}


# -- sizes -----------------------------------------------------------------------------------


def item_bytes(item_value: Mapping[str, Any]) -> int:
    """An item's size as DynamoDB counts it: each attribute's name plus its value."""
    return sum(
        _text_bytes(name) + attribute_value_bytes(value) for name, value in item_value.items()
    )


def attribute_value_bytes(value: object) -> int:
    """Strings and binaries by length, numbers by significant digits, 1 byte for booleans and
    nulls, sets by their members, lists and maps 3 bytes plus 1 byte per element."""
    if not isinstance(value, Mapping) or len(value) != 1:
        return 0
    [(kind, content)] = value.items()
    if kind in _SCALAR_KEY_TYPES:
        return _scalar_bytes(kind, content)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind in ("SS", "NS", "BS") and isinstance(content, list | tuple | set | frozenset):
        return sum(_scalar_bytes(kind[0], member) for member in content)
    if kind == "L" and isinstance(content, list | tuple):
        return 3 + sum(1 + attribute_value_bytes(nested) for nested in content)
    if kind == "M" and isinstance(content, Mapping):
        return 3 + sum(
            1 + _text_bytes(name) + attribute_value_bytes(nested)
            for name, nested in content.items()
        )
    return 0


def _scalar_bytes(kind: str, content: object) -> int:
    if kind == "S":
        return _text_bytes(content)
    if kind == "B":
        if isinstance(content, bytes | bytearray | memoryview):
            return len(content)
        return _text_bytes(content)
    if kind == "N" and isinstance(content, str):
        # About one byte per two significant digits, plus one.
        digits = _significant_digits(content)
        return math.ceil(digits / 2) + 1 if digits is not None else len(content)
    return 0


def _significant_digits(text: str) -> int | None:
    """Digits without the sign, the exponent, and the leading and trailing zeros DynamoDB trims."""
    if not _NUMBER.fullmatch(text):
        return None
    return len(re.split("[eE]", text)[0].lstrip("+-").replace(".", "").strip("0")) or 1


def _number(where: str, text: object) -> Iterator[Violation]:
    problem = None
    if not isinstance(text, str) or not _NUMBER.fullmatch(text):
        problem = f"{text!r} is not a number"
    else:
        number = Decimal(text)
        digits = _significant_digits(text) or 0
        if digits > MAX_NUMBER_DIGITS:
            problem = f"{text!r} has {digits} significant digits (at most {MAX_NUMBER_DIGITS})"
        elif not number.is_zero() and not (
            _MIN_NUMBER_EXPONENT <= number.adjusted() <= _MAX_NUMBER_EXPONENT
        ):
            problem = f"{text!r} is outside DynamoDB's range (1E-130 to 9.9E+125)"
    if problem is not None:
        yield Violation("dynamodb.attribute_values", f"{where}: {problem}")


def _identity(key_value: object, keys: TableKeys | None) -> tuple[Any, ...] | None:
    """What identifies the item `key_value` (a key or a whole item) addresses."""
    if not isinstance(key_value, Mapping):
        return None
    names = keys.primary if keys is not None else tuple(sorted(key_value))
    if any(name not in key_value for name in names):
        return None
    return tuple((name, _hashable(key_value[name])) for name in names)


def _hashable(value: object) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, list | tuple | set | frozenset):
        return tuple(_hashable(member) for member in value)
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return value


def _key_schema(schema: object) -> tuple[str | None, str | None]:
    partition = sort = None
    for element in schema if isinstance(schema, list | tuple) else ():
        if not isinstance(element, Mapping):
            continue
        if element.get("KeyType") == "HASH":
            partition = str(element.get("AttributeName"))
        elif element.get("KeyType") == "RANGE":
            sort = str(element.get("AttributeName"))
    return partition, sort


def _text_bytes(value: object) -> int:
    return len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else 0
