"""The AWS limits guard: each rule just inside and just outside its real limit, and the hook on
every kind of client the code makes.

moto would take every "outside" request below; real SQS and DynamoDB refuse them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber
from jobhooks_tools.local import aws_limits
from jobhooks_tools.local.aws_limits import AwsLimitViolation, check_request
from jobhooks_tools.local.aws_limits.dynamodb import (
    MAX_ITEM_BYTES,
    KeySchemas,
    attribute_value_bytes,
    item_bytes,
)
from jobhooks_tools.local.aws_limits.dynamodb_reserved_words import RESERVED_WORDS
from jobhooks_tools.local.aws_limits.sqs import MAX_MESSAGE_BYTES, message_bytes

ROOT = Path(__file__).resolve().parents[2]
QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/jobhooks-delivery"
MiB = 1_048_576


def sqs_rules(operation: str, **params: Any) -> set[str]:
    return {violation.rule for violation in check_request("sqs", operation, params)}


def send(body: str = "{}", **params: Any) -> set[str]:
    return sqs_rules("SendMessage", QueueUrl=QUEUE, MessageBody=body, **params)


def string(value: str) -> dict[str, str]:
    return {"DataType": "String", "StringValue": value}


# -- SQS -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    ["\t\n\r", " ~", "é\u07ff\u0800", "\ud7ff", "\ue000", "\ufffd", "\U00010000", "\U0010ffff"],
)
def test_message_characters_takes_the_xml_character_set(body: str) -> None:
    assert send(body) == set()


@pytest.mark.parametrize("character", ["\ufffe", "\uffff", "\x00", "\x08", "\x1f", "\ud800"])
def test_message_characters_refuses_what_sqs_refuses(character: str) -> None:
    assert send(f'{{"metadata":"a{character}b"}}') == {"sqs.message_characters"}


def test_message_characters_names_the_character_and_its_place() -> None:
    [violation] = check_request("sqs", "SendMessage", {"MessageBody": "ab\uffffc\ufffe"})
    assert violation.aws_code == "InvalidMessageContents"
    assert "U+FFFF at character 2 (2 such character(s))" in violation.detail


def test_message_size_counts_body_and_attributes_up_to_1_mib() -> None:
    attributes = {"ce-id": string("evt-1")}
    overhead = len("ce-id") + len("String") + len("evt-1")
    assert message_bytes({"MessageBody": "é", "MessageAttributes": attributes}) == 2 + overhead
    assert send("x" * (MAX_MESSAGE_BYTES - overhead), MessageAttributes=attributes) == set()
    assert send("x" * (MAX_MESSAGE_BYTES - overhead + 1), MessageAttributes=attributes) == {
        "sqs.message_size"
    }
    assert send("é" * (MAX_MESSAGE_BYTES // 2)) == set()
    assert send("é" * (MAX_MESSAGE_BYTES // 2) + "x") == {"sqs.message_size"}


def test_message_size_refuses_an_empty_body() -> None:
    assert send("") == {"sqs.message_size"}


def test_attribute_count_is_at_most_ten() -> None:
    ten = {f"a{n}": string("v") for n in range(10)}
    assert send(MessageAttributes=ten) == set()
    assert send(MessageAttributes={**ten, "a10": string("v")}) == {"sqs.attribute_count"}


@pytest.mark.parametrize("name", ["ce-id", "a.b", "x_y-z.0", "awsome", "a" * 256, "Amazonian"])
def test_attribute_name_accepts(name: str) -> None:
    assert send(MessageAttributes={name: string("v")}) == set()


@pytest.mark.parametrize(
    "name", ["", "a" * 257, "a b", "ação", "AWS.trace", "aws.x", "Amazon.x", ".a", "a.", "a..b"]
)
def test_attribute_name_refuses(name: str) -> None:
    assert send(MessageAttributes={name: string("v")}) == {"sqs.attribute_name"}


@pytest.mark.parametrize(
    ("data_type", "ok"),
    [
        ("String", True),
        ("Number", True),
        ("Number.int", True),
        ("String." + "x" * 249, True),  # 256 characters
        ("String." + "x" * 250, False),
        ("string", False),
        ("Text", False),
        ("String.", False),
    ],
)
def test_attribute_type(data_type: str, ok: bool) -> None:
    value = "1" if data_type.startswith("Number") else "v"
    found = send(MessageAttributes={"a": {"DataType": data_type, "StringValue": value}})
    assert found == (set() if ok else {"sqs.attribute_type"})


@pytest.mark.parametrize(
    ("attribute", "ok"),
    [
        ({"DataType": "String", "StringValue": "x"}, True),
        ({"DataType": "String", "StringValue": ""}, False),
        ({"DataType": "String", "StringValue": "a\ufffeb"}, False),
        ({"DataType": "Number", "StringValue": "-12.5e3"}, True),
        ({"DataType": "Number", "StringValue": "1" * 38}, True),
        ({"DataType": "Number", "StringValue": "1" * 39}, False),
        ({"DataType": "Number", "StringValue": "twelve"}, False),
        ({"DataType": "Binary", "BinaryValue": b"\x00"}, True),
        ({"DataType": "Binary", "BinaryValue": b""}, False),
        ({"DataType": "Binary", "StringValue": "x"}, False),
    ],
)
def test_attribute_value(attribute: dict[str, Any], ok: bool) -> None:
    assert send(MessageAttributes={"a": attribute}) == (set() if ok else {"sqs.attribute_value"})


@pytest.mark.parametrize(("delay", "ok"), [(0, True), (900, True), (901, False), (-1, False)])
def test_delay_seconds(delay: int, ok: bool) -> None:
    assert send(DelaySeconds=delay) == (set() if ok else {"sqs.delay_seconds"})


def entries(count: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"Id": str(n), "MessageBody": "{}", **extra} for n in range(count)]


@pytest.mark.parametrize(("count", "ok"), [(1, True), (10, True), (11, False), (0, False)])
def test_batch_entries(count: int, ok: bool) -> None:
    for operation, extra in (
        ("SendMessageBatch", {}),
        ("DeleteMessageBatch", {"ReceiptHandle": "r"}),
        ("ChangeMessageVisibilityBatch", {"ReceiptHandle": "r", "VisibilityTimeout": 0}),
    ):
        found = sqs_rules(operation, QueueUrl=QUEUE, Entries=entries(count, **extra))
        assert found == (set() if ok else {"sqs.batch_entries"}), operation


@pytest.mark.parametrize(
    ("ids", "ok"),
    [
        (["a" * 80, "b_-0"], True),
        (["a" * 81], False),
        ([""], False),
        (["a b"], False),
        (["msg.1"], False),
        (["1", "1"], False),
    ],
)
def test_batch_entry_ids(ids: list[str], ok: bool) -> None:
    batch = [{"Id": entry_id, "MessageBody": "{}"} for entry_id in ids]
    found = sqs_rules("SendMessageBatch", QueueUrl=QUEUE, Entries=batch)
    assert found == (set() if ok else {"sqs.batch_entry_ids"})


def test_batch_size_adds_up_every_message() -> None:
    tenth = MiB // 10
    batch = [{"Id": str(n), "MessageBody": "x" * tenth} for n in range(10)]
    batch[0]["MessageBody"] = "x" * (MiB - 9 * tenth)
    assert sqs_rules("SendMessageBatch", QueueUrl=QUEUE, Entries=batch) == set()
    batch[1]["MessageAttributes"] = {"a": string("v")}
    assert sqs_rules("SendMessageBatch", QueueUrl=QUEUE, Entries=batch) == {"sqs.batch_size"}


def test_batch_entries_are_messages_too() -> None:
    batch = entries(2)
    batch[1]["MessageBody"] = "\uffff"
    batch[0]["DelaySeconds"] = 901
    found = sqs_rules("SendMessageBatch", QueueUrl=QUEUE, Entries=batch)
    assert found == {"sqs.message_characters", "sqs.delay_seconds"}


@pytest.mark.parametrize(("seconds", "ok"), [(0, True), (43_200, True), (43_201, False)])
def test_visibility_timeout(seconds: int, ok: bool) -> None:
    expected = set() if ok else {"sqs.visibility_timeout"}
    assert sqs_rules("ChangeMessageVisibility", VisibilityTimeout=seconds) == expected
    assert sqs_rules("ReceiveMessage", QueueUrl=QUEUE, VisibilityTimeout=seconds) == expected
    batch = entries(1, ReceiptHandle="r", VisibilityTimeout=seconds)
    assert sqs_rules("ChangeMessageVisibilityBatch", Entries=batch) == expected


@pytest.mark.parametrize(("count", "ok"), [(1, True), (10, True), (0, False), (11, False)])
def test_receive_max_messages(count: int, ok: bool) -> None:
    found = sqs_rules("ReceiveMessage", QueueUrl=QUEUE, MaxNumberOfMessages=count)
    assert found == (set() if ok else {"sqs.receive_max_messages"})


@pytest.mark.parametrize(("seconds", "ok"), [(0, True), (20, True), (21, False)])
def test_receive_wait_time(seconds: int, ok: bool) -> None:
    found = sqs_rules("ReceiveMessage", QueueUrl=QUEUE, WaitTimeSeconds=seconds)
    assert found == (set() if ok else {"sqs.receive_wait_time"})


# -- DynamoDB --------------------------------------------------------------------------------


@pytest.fixture
def schemas() -> KeySchemas:
    """A table keyed on (tenant_id, subscription_id) with a GSI on (status, created_at)."""
    known = KeySchemas()
    known.observe(
        "CreateTable",
        {
            "TableName": "subs",
            "KeySchema": [
                {"AttributeName": "tenant_id", "KeyType": "HASH"},
                {"AttributeName": "subscription_id", "KeyType": "RANGE"},
            ],
            "AttributeDefinitions": [
                {"AttributeName": "tenant_id", "AttributeType": "S"},
                {"AttributeName": "subscription_id", "AttributeType": "S"},
                {"AttributeName": "status", "AttributeType": "S"},
                {"AttributeName": "created_at", "AttributeType": "S"},
            ],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "by_status",
                    "KeySchema": [
                        {"AttributeName": "status", "KeyType": "HASH"},
                        {"AttributeName": "created_at", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        },
    )
    return known


def dynamodb_rules(operation: str, schemas: KeySchemas | None = None, **params: Any) -> set[str]:
    found = check_request("dynamodb", operation, params, key_schemas=schemas)
    return {violation.rule for violation in found}


def key(tenant: str = "acme", subscription: str = "sub_1") -> dict[str, Any]:
    return {"tenant_id": {"S": tenant}, "subscription_id": {"S": subscription}}


def put(schemas: KeySchemas, item: dict[str, Any], **params: Any) -> set[str]:
    return dynamodb_rules("PutItem", schemas, TableName="subs", Item=item, **params)


def test_item_size_follows_dynamodb_size_rules() -> None:
    assert attribute_value_bytes({"S": "é"}) == 2
    assert attribute_value_bytes({"N": "123.45"}) == 4  # 5 significant digits: 3 + 1
    assert attribute_value_bytes({"N": "1000"}) == 2
    assert attribute_value_bytes({"B": b"\x00\x01"}) == 2
    assert attribute_value_bytes({"BOOL": True}) == attribute_value_bytes({"NULL": True}) == 1
    assert attribute_value_bytes({"SS": ["ab", "c"]}) == 3
    assert attribute_value_bytes({"L": [{"S": "ab"}, {"N": "1"}]}) == 3 + (1 + 2) + (1 + 2)
    assert attribute_value_bytes({"M": {"k": {"S": "v"}}}) == 3 + 1 + 1 + 1
    assert item_bytes({"name": {"S": "value"}}) == 9


def test_item_size_is_at_most_400_kb(schemas: KeySchemas) -> None:
    item = key()
    filler = MAX_ITEM_BYTES - item_bytes(item) - len("blob")
    assert put(schemas, {**item, "blob": {"B": b"x" * filler}}) == set()
    assert put(schemas, {**item, "blob": {"B": b"x" * (filler + 1)}}) == {"dynamodb.item_size"}


def test_key_values_refuse_empty_keys_in_items_and_indexes(schemas: KeySchemas) -> None:
    assert put(schemas, {**key(), "description": {"S": ""}}) == set(), "non-key: empty is fine"
    assert put(schemas, key(tenant="")) == {"dynamodb.key_values"}
    assert put(schemas, {**key(), "status": {"S": ""}}) == {"dynamodb.key_values"}
    assert put(schemas, {**key(), "created_at": {"N": "1"}}) == {"dynamodb.key_values"}
    assert put(schemas, {"tenant_id": {"S": "acme"}}) == {"dynamodb.key_values"}


def test_key_values_refuse_empty_or_mismatched_keys(schemas: KeySchemas) -> None:
    assert dynamodb_rules("GetItem", schemas, TableName="subs", Key=key()) == set()
    for bad in (key(subscription=""), {**key(), "extra": {"S": "x"}}, {"tenant_id": {"S": "a"}}):
        assert dynamodb_rules("GetItem", schemas, TableName="subs", Key=bad) == {
            "dynamodb.key_values"
        }
    binary = {"id": {"B": b""}}
    assert dynamodb_rules("DeleteItem", TableName="unknown", Key=binary) == {"dynamodb.key_values"}


def test_key_values_refuse_an_empty_exclusive_start_key(schemas: KeySchemas) -> None:
    start = {**key(), "status": {"S": "active"}, "created_at": {"S": "2026-01-01"}}
    query = {
        "TableName": "subs",
        "IndexName": "by_status",
        "KeyConditionExpression": "#s = :s",
        "ExpressionAttributeNames": {"#s": "status"},
        "ExpressionAttributeValues": {":s": {"S": "active"}},
    }
    assert dynamodb_rules("Query", schemas, ExclusiveStartKey=start, **query) == set()
    forged = {**start, "created_at": {"S": ""}}
    assert dynamodb_rules("Query", schemas, ExclusiveStartKey=forged, **query) == {
        "dynamodb.key_values"
    }
    assert dynamodb_rules("Scan", TableName="t", ExclusiveStartKey={"id": {"S": ""}}) == {
        "dynamodb.key_values"
    }


def test_key_values_refuse_an_empty_value_in_a_key_condition() -> None:
    query = {"TableName": "t", "KeyConditionExpression": "tenant_id = :t"}
    assert dynamodb_rules("Query", ExpressionAttributeValues={":t": {"S": "a"}}, **query) == set()
    assert dynamodb_rules("Query", ExpressionAttributeValues={":t": {"S": ""}}, **query) == {
        "dynamodb.key_values"
    }


def test_key_size(schemas: KeySchemas) -> None:
    assert put(schemas, key(tenant="p" * 2048, subscription="s" * 1024)) == set()
    assert put(schemas, key(tenant="p" * 2049)) == {"dynamodb.key_size"}
    assert put(schemas, key(subscription="s" * 1025)) == {"dynamodb.key_size"}


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ({"SS": ["a", "b"]}, True),
        ({"SS": []}, False),
        ({"NS": ["1", "1"]}, False),
        ({"N": "9.9E+125"}, True),
        ({"N": "1E+126"}, False),
        ({"N": "1E-130"}, True),
        ({"N": "1E-131"}, False),
        ({"N": "1" * 38}, True),
        ({"N": "1" * 39}, False),
        ({"N": "one"}, False),
        ({"S": "a", "N": "1"}, False),
        ({"NULL": False}, False),
    ],
)
def test_attribute_values(schemas: KeySchemas, value: dict[str, Any], ok: bool) -> None:
    assert put(schemas, {**key(), "v": value}) == (set() if ok else {"dynamodb.attribute_values"})


def test_attribute_values_nest_at_most_32_levels(schemas: KeySchemas) -> None:
    def nested(levels: int) -> dict[str, Any]:
        value: dict[str, Any] = {"S": "leaf"}
        for _ in range(levels - 1):
            value = {"L": [value]}
        return value

    assert put(schemas, {**key(), "v": nested(32)}) == set()
    assert put(schemas, {**key(), "v": nested(33)}) == {"dynamodb.attribute_values"}


def puts(count: int, size: int = 0) -> list[dict[str, Any]]:
    return [
        {"PutRequest": {"Item": {**key(subscription=f"s{n}"), "b": {"B": b"x" * size}}}}
        for n in range(count)
    ]


@pytest.mark.parametrize(("count", "ok"), [(1, True), (25, True), (26, False)])
def test_batch_write_takes_at_most_25_requests(schemas: KeySchemas, count: int, ok: bool) -> None:
    found = dynamodb_rules("BatchWriteItem", schemas, RequestItems={"subs": puts(count)})
    assert found == (set() if ok else {"dynamodb.batch_write"})


def test_batch_write_takes_at_most_16_mb_and_no_key_twice(schemas: KeySchemas) -> None:
    assert dynamodb_rules("BatchWriteItem", schemas, RequestItems={"subs": []}) == {
        "dynamodb.batch_write"
    }
    at_most = dynamodb_rules("BatchWriteItem", schemas, RequestItems={"subs": puts(25, 400_000)})
    assert at_most == set()
    too_big = dynamodb_rules("BatchWriteItem", schemas, RequestItems={"subs": puts(25, 700_000)})
    assert too_big == {"dynamodb.batch_write", "dynamodb.item_size"}
    twice = [*puts(1), {"DeleteRequest": {"Key": key(subscription="s0")}}]
    found = dynamodb_rules("BatchWriteItem", schemas, RequestItems={"subs": twice})
    assert found == {"dynamodb.batch_write"}


@pytest.mark.parametrize(("count", "ok"), [(1, True), (100, True), (101, False), (0, False)])
def test_batch_get_takes_at_most_100_keys(schemas: KeySchemas, count: int, ok: bool) -> None:
    keys = [key(subscription=f"s{n}") for n in range(count)]
    found = dynamodb_rules("BatchGetItem", schemas, RequestItems={"subs": {"Keys": keys}})
    assert found == (set() if ok else {"dynamodb.batch_get"})


def test_batch_get_refuses_a_key_twice_and_checks_its_projection(schemas: KeySchemas) -> None:
    twice = {"Keys": [key(), key()]}
    assert dynamodb_rules("BatchGetItem", schemas, RequestItems={"subs": twice}) == {
        "dynamodb.batch_get"
    }
    projected = {"Keys": [key()], "ProjectionExpression": "url"}
    assert dynamodb_rules("BatchGetItem", schemas, RequestItems={"subs": projected}) == {
        "dynamodb.reserved_words"
    }


def transaction(count: int, size: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "Put": {
                "TableName": "subs",
                "Item": {**key(subscription=f"s{n}"), "b": {"B": b"x" * size}},
            }
        }
        for n in range(count)
    ]


@pytest.mark.parametrize(("count", "ok"), [(1, True), (100, True), (101, False), (0, False)])
def test_transact_items_count(schemas: KeySchemas, count: int, ok: bool) -> None:
    found = dynamodb_rules("TransactWriteItems", schemas, TransactItems=transaction(count))
    assert found == (set() if ok else {"dynamodb.transact_items"})
    gets = [{"Get": {"TableName": "subs", "Key": key(subscription=f"s{n}")}} for n in range(count)]
    found = dynamodb_rules("TransactGetItems", schemas, TransactItems=gets)
    assert found == (set() if ok else {"dynamodb.transact_items"})


def test_transact_items_size_and_one_action_per_item(schemas: KeySchemas) -> None:
    assert (
        dynamodb_rules("TransactWriteItems", schemas, TransactItems=transaction(10, 400_000))
        == set()
    )
    assert dynamodb_rules(
        "TransactWriteItems", schemas, TransactItems=transaction(11, 400_000)
    ) == {"dynamodb.transact_items"}
    same_item = [
        *transaction(1),
        {
            "ConditionCheck": {
                "TableName": "subs",
                "Key": key(subscription="s0"),
                "ConditionExpression": "attribute_exists(tenant_id)",
            }
        },
    ]
    assert dynamodb_rules("TransactWriteItems", schemas, TransactItems=same_item) == {
        "dynamodb.transact_items"
    }


@pytest.mark.parametrize(
    ("field", "expression"),
    [
        ("ConditionExpression", "attribute_not_exists(event_id) OR lease_until < :now"),
        ("ConditionExpression", "#state = :done AND begins_with(claim_token, :prefix)"),
        ("UpdateExpression", "SET #state = :done, attempts = list_append(attempts, :a) REMOVE x"),
        ("UpdateExpression", "ADD attempt_count :one DELETE tags :t"),
        ("ProjectionExpression", "subscription_id, #url, nested.child[2].leaf"),
    ],
)
def test_reserved_words_accepts_syntax_and_placeholders(field: str, expression: str) -> None:
    names, values = _placeholders(expression)
    found = dynamodb_rules(
        "UpdateItem" if field != "ProjectionExpression" else "GetItem",
        TableName="t",
        Key={"id": {"S": "1"}},
        **{field: expression},
        **({"ExpressionAttributeNames": names} if names else {}),
        **({"ExpressionAttributeValues": values} if values else {}),
    )
    assert found == set()


@pytest.mark.parametrize(
    ("field", "expression"),
    [
        ("ConditionExpression", "attribute_exists(status)"),
        ("ConditionExpression", "Status = :s"),
        ("ConditionExpression", "size(data) > :s"),
        ("UpdateExpression", "SET ttl = :s"),
        ("UpdateExpression", "SET meta.name = :s"),
        ("ProjectionExpression", "subscription_id, url"),
    ],
)
def test_reserved_words_refuses_a_bare_reserved_name(field: str, expression: str) -> None:
    _, values = _placeholders(expression)
    found = dynamodb_rules(
        "UpdateItem" if field != "ProjectionExpression" else "GetItem",
        TableName="t",
        Key={"id": {"S": "1"}},
        **{field: expression},
        **({"ExpressionAttributeValues": values} if values else {}),
    )
    assert found == {"dynamodb.reserved_words"}


def test_reserved_words_are_the_whole_official_list() -> None:
    assert len(RESERVED_WORDS) == 573
    assert {"STATUS", "URL", "TTL", "DATA", "NAME", "ZONE", "ABORT", "FLATTERN"} <= RESERVED_WORDS
    assert "EVENT_ID" not in RESERVED_WORDS


def test_expression_names_are_defined_and_used() -> None:
    base = {"TableName": "t", "Key": {"id": {"S": "1"}}, "ConditionExpression": "#s = :s"}
    values = {":s": {"S": "x"}}
    ok = dynamodb_rules(
        "DeleteItem",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues=values,
        **base,
    )
    assert ok == set()
    for names in ({}, {"#s": "status", "#unused": "url"}, {"#t": "status"}):
        found = dynamodb_rules(
            "DeleteItem", ExpressionAttributeNames=names, ExpressionAttributeValues=values, **base
        )
        assert found == {"dynamodb.expression_names"}, names
    undefined = dynamodb_rules("DeleteItem", ExpressionAttributeValues=values, **base)
    assert undefined == {"dynamodb.expression_names"}


def test_expression_values_are_defined_and_used() -> None:
    base = {"TableName": "t", "Key": {"id": {"S": "1"}}, "ConditionExpression": "a = :a"}
    assert (
        dynamodb_rules("DeleteItem", ExpressionAttributeValues={":a": {"N": "1"}}, **base) == set()
    )
    for values in ({}, {":a": {"N": "1"}, ":b": {"N": "2"}}, {":b": {"N": "2"}}):
        found = dynamodb_rules("DeleteItem", ExpressionAttributeValues=values, **base)
        assert found == {"dynamodb.expression_values"}, values
    assert dynamodb_rules("DeleteItem", **base) == {"dynamodb.expression_values"}


def test_expression_length_is_at_most_4_kb() -> None:
    def projection(size: int) -> set[str]:
        names = "a," * ((size - 1) // 2) + "a"
        assert len(names) == size
        return dynamodb_rules(
            "GetItem", TableName="t", Key={"id": {"S": "1"}}, ProjectionExpression=names
        )

    assert projection(4095) == set()
    assert projection(4097) == {"dynamodb.expression_length"}


def _placeholders(expression: str) -> tuple[dict[str, str], dict[str, Any]]:
    names = {name: name[1:] for name in re.findall(r"#\w+", expression)}
    values = {value: {"S": "x"} for value in re.findall(r":\w+", expression)}
    return names, values


# -- the hook ----------------------------------------------------------------------------------


def _clients() -> Iterator[tuple[str, Any]]:
    options = {
        "region_name": "us-east-1",
        "endpoint_url": "http://127.0.0.1:9",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    yield "boto3.client", boto3.client("sqs", **options)
    yield "boto3 Session", boto3.session.Session().client("sqs", **options)
    yield "botocore session", botocore.session.get_session().create_client("sqs", **options)


@pytest.mark.parametrize("made_by", ["boto3.client", "boto3 Session", "botocore session"])
def test_every_client_refuses_a_violating_request_before_sending_it(made_by: str) -> None:
    client = dict(_clients())[made_by]
    with Stubber(client) as stubber:
        stubber.add_response("send_message", {"MessageId": "m-1"})
        stubber.add_response("send_message", {"MessageId": "m-2"})
        assert client.send_message(QueueUrl=QUEUE, MessageBody="ok")["MessageId"] == "m-1"
        with pytest.raises(AwsLimitViolation) as refused:
            client.send_message(QueueUrl=QUEUE, MessageBody="metadata \ufffe")
        with pytest.raises(AssertionError):  # the second answer is still waiting: never sent
            stubber.assert_no_pending_responses()
    assert refused.value.response["Error"]["Code"] == "InvalidMessageContents"
    assert str(refused.value).startswith("sqs.message_characters: MessageBody holds U+FFFE")
    assert [v.rule for v in aws_limits.take_violations()] == ["sqs.message_characters"]


def test_the_hook_learns_key_schemas_from_create_table() -> None:
    client = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    with Stubber(client) as stubber:
        stubber.add_response("create_table", {})
        stubber.add_response("put_item", {})
        client.create_table(
            TableName="learned",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        with pytest.raises(AwsLimitViolation, match=r"^dynamodb.key_values: Item.pk is an empty"):
            client.put_item(TableName="learned", Item={"pk": {"S": ""}, "v": {"S": ""}})
    assert [v.rule for v in aws_limits.take_violations()] == ["dynamodb.key_values"]


def test_uninstall_and_install_again() -> None:
    assert aws_limits.is_installed()
    aws_limits.uninstall()
    try:
        client = dict(_clients())["boto3 Session"]
        with Stubber(client) as stubber:
            stubber.add_response("send_message", {"MessageId": "m-1"})
            client.send_message(QueueUrl=QUEUE, MessageBody="\ufffe")  # moto's leniency
    finally:
        assert aws_limits.install()
    assert not aws_limits.install(), "installing twice is a no-op"
    assert aws_limits.take_violations() == []


def test_the_park_labels_of_a_delivery_pass_sqs_limits() -> None:
    from jobhooks.delivery.parking import ParkingSummary, ParkReason

    summary = ParkingSummary(ParkReason.ATTEMPTS_EXHAUSTED, 8, "x" * 500)
    request = {"MessageBody": "{}", "MessageAttributes": summary.message_attributes()}
    assert check_request("sqs", "SendMessage", request) == []


def test_architecture_doc_lists_every_rule() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [rule for rule in aws_limits.RULES if f"`{rule}`" not in text]
    assert missing == []


def test_a_refused_request_is_a_console_line_of_jobhooks_dev() -> None:
    import logging

    from jobhooks_tools.local.activity import describe
    from jobhooks_tools.local.aws_limits import guard

    record = logging.LogRecord(
        guard.logger.name,  # the guard's own logger, whatever its name
        logging.ERROR,
        __file__,
        1,
        "AWS would refuse %s %s: %s",
        ("sqs", "SendMessage", "sqs.message_characters: MessageBody holds U+FFFE"),
        None,
    )
    activity = describe(record)
    assert activity is not None
    assert (activity.source, activity.what) == ("aws", "refused")
    assert "sqs.message_characters" in activity.line()


def test_a_shovel_warning_is_a_console_line_of_jobhooks_dev() -> None:
    import logging

    from jobhooks_tools.local.activity import describe
    from jobhooks_tools.shovel.logs import get_logger

    record = get_logger("consumer").makeRecord(
        get_logger("consumer").name, logging.WARNING, __file__, 1, "message parked", (), None
    )
    activity = describe(record)
    assert activity is not None
    assert (activity.source, activity.what) == ("shovel", "warning")
