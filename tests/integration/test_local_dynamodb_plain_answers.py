"""The local DynamoDB writes its item answers as moto's serializer would (moto_main's
`PlainAnswers`): the same status, headers and JSON, for items of every attribute type.

The server runs with `CHECK_PLAIN_ANSWERS`, so that each plain answer is also made by moto's
serializer and compared there; the operations below are generated to reach every member the
answers can hold (items, old and new attributes, counts, continuation keys, unprocessed keys,
consumed capacity), and the server's report must show them checked and none different. A
client reading through boto3 must get back exactly what it wrote, blobs and sets included.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobhooks_tools.local.moto_main import CHECK_PLAIN_ANSWERS, PLAIN_ANSWERS_PATH, is_plain
from jobhooks_tools.local.moto_server import LOCAL_CREDENTIALS, MotoServer

pytestmark = pytest.mark.timeout(120)

TABLE = "plain"


@pytest.fixture(scope="module")
def server() -> Iterator[MotoServer]:
    os.environ[CHECK_PLAIN_ANSWERS] = "1"
    try:
        started = MotoServer().start()
    finally:
        del os.environ[CHECK_PLAIN_ANSWERS]
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def dynamodb(server: MotoServer) -> Any:
    client = boto3.client(
        "dynamodb",
        endpoint_url=server.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id=LOCAL_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )
    client.create_table(
        TableName=TABLE,
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return client


def report(server: MotoServer) -> dict[str, Any]:
    with urllib.request.urlopen(server.endpoint_url + PLAIN_ANSWERS_PATH) as answer:
        return json.loads(answer.read())  # type: ignore[no-any-return]


texts = st.text(min_size=1, max_size=12)
numbers = st.integers(-(10**12), 10**12).map(str) | st.decimals(
    min_value=-1000, max_value=1000, places=3, allow_nan=False
).map(lambda d: format(d.normalize(), "f"))
scalars = st.one_of(
    texts.map(lambda s: {"S": s}),
    numbers.map(lambda n: {"N": n}),
    st.binary(min_size=1, max_size=12).map(lambda b: {"B": b}),
    st.booleans().map(lambda b: {"BOOL": b}),
    st.just({"NULL": True}),
    st.sets(texts, min_size=1, max_size=3).map(lambda s: {"SS": sorted(s)}),
    st.sets(st.integers(-99, 99).map(str), min_size=1, max_size=3).map(lambda s: {"NS": sorted(s)}),
    st.sets(st.binary(min_size=1, max_size=6), min_size=1, max_size=3).map(
        lambda s: {"BS": sorted(s)}
    ),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: {"L": items}),
        st.dictionaries(texts, inner, max_size=3).map(lambda fields: {"M": fields}),
    ),
    max_leaves=6,
)
attributes = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=4).filter(lambda n: n not in ("pk", "sk")),
    values,
    max_size=4,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    partition=st.text("xyz", min_size=1, max_size=3),
    rows=st.lists(attributes, min_size=1, max_size=4),
    extra=values,
)
def test_item_answers_are_moto_serializers_and_round_trip(
    server: MotoServer, dynamodb: Any, partition: str, rows: list[dict[str, Any]], extra: Any
) -> None:
    items = [{"pk": {"S": partition}, "sk": {"N": str(n)}, **row} for n, row in enumerate(rows)]
    for item in items:
        dynamodb.put_item(TableName=TABLE, Item=item, ReturnValues="ALL_OLD",
                          ReturnConsumedCapacity="TOTAL")  # fmt: skip
    keys = [{"pk": item["pk"], "sk": item["sk"]} for item in items]

    for key, item in zip(keys, items, strict=True):
        got = dynamodb.get_item(TableName=TABLE, Key=key, ConsistentRead=True)["Item"]
        assert _as_read(got) == _as_read(item)
    updated = dynamodb.update_item(
        TableName=TABLE,
        Key=keys[0],
        UpdateExpression="SET #e = :e ADD #n :one",
        ExpressionAttributeNames={"#e": "extra", "#n": "counter"},
        ExpressionAttributeValues={":e": extra, ":one": {"N": "1"}},
        ReturnValues="ALL_NEW",
    )["Attributes"]
    assert _as_read(updated["extra"]) == _as_read(extra)
    dynamodb.update_item(
        TableName=TABLE,
        Key=keys[0],
        UpdateExpression="REMOVE #e",
        ExpressionAttributeNames={"#e": "extra"},
        ReturnValues="UPDATED_OLD",
    )

    page = dynamodb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": partition}},
        Limit=1,
        ReturnConsumedCapacity="TOTAL",
    )
    assert page["Count"] == 1 and ("LastEvaluatedKey" in page) == (len(items) > 1)
    counted = dynamodb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": partition}},
        Select="COUNT",
    )
    assert counted["Count"] == len(items)
    assert dynamodb.scan(TableName=TABLE, Limit=2)["Count"] <= 2
    batch = dynamodb.batch_get_item(
        RequestItems={TABLE: {"Keys": keys, "ConsistentRead": True}},
        ReturnConsumedCapacity="TOTAL",
    )
    assert len(batch["Responses"][TABLE]) == len(items) and not batch["UnprocessedKeys"]
    if len(keys) > 1:
        dynamodb.batch_write_item(
            RequestItems={TABLE: [{"DeleteRequest": {"Key": key}} for key in keys[1:]]}
        )
    dynamodb.delete_item(TableName=TABLE, Key=keys[0], ReturnValues="ALL_OLD")

    checked = report(server)
    assert checked["differences"] == []


def test_the_checked_answers_were_plain_ones(server: MotoServer, dynamodb: Any) -> None:
    dynamodb.put_item(TableName=TABLE, Item={"pk": {"S": "p"}, "sk": {"N": "1"}, "a": {"S": "x"}})
    before = report(server)["checked"]
    for _ in range(3):
        dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": "p"}, "sk": {"N": "1"}})
    after = report(server)
    assert after["checked"] == before + 3
    assert after["differences"] == []


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ({"Item": {"a": {"S": "x"}, "n": {"N": "1"}, "l": {"L": [{"BOOL": True}]}}}, True),
        ({"Count": 2, "ConsumedCapacity": {"CapacityUnits": 0.5}}, True),
        ({"Item": {"b": {"B": b"\x00"}}}, True),  # a blob: written base64, as the serializer does
        ({"Attributes": None}, False),  # a null: the serializer leaves the member out
        ({"Table": {"CreationDateTime": Decimal(1)}}, False),
    ],
)
def test_what_is_plain(value: Any, plain: bool) -> None:
    assert is_plain(value) is plain


def _as_read(value: Any) -> Any:
    """An AttributeValue as boto3's low-level client reads it back (sets in no given order)."""
    if isinstance(value, dict):
        if "SS" in value or "NS" in value or "BS" in value:
            ((kind, members),) = value.items()
            return {kind: sorted(members)}
        return {k: _as_read(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_read(v) for v in value]
    return value
