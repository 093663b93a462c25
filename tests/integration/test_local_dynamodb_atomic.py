"""The local AWS keeps DynamoDB's rule that a conditional write is atomic.

moto's server, on its own, checks a write's condition and applies the write as two steps on
concurrent threads, so two writers can both pass `attribute_not_exists`: every "exactly once"
the code builds on DynamoDB (claims, endpoint health, settled deliveries) would then be flaky
locally. `jobhooks_tools.local.moto_main` answers each table's requests one at a time.
"""

from __future__ import annotations

import threading
from typing import Any

import boto3
from botocore.exceptions import ClientError
from jobhooks_tools.local.moto_server import MotoServer

WRITERS = 12
ROUNDS = 15


def race_for(dynamodb: Any, key: str, table: str = "claims") -> int:
    """`WRITERS` threads claim `key` in `table` at the same moment, each only if unclaimed; how
    many won."""
    start = threading.Barrier(WRITERS)
    won: list[bool] = []

    def claim(writer: int) -> None:
        start.wait()
        try:
            dynamodb.update_item(
                TableName=table,
                Key={"id": {"S": key}},
                UpdateExpression="SET won_by = :writer",
                ConditionExpression="attribute_not_exists(won_by)",
                ExpressionAttributeValues={":writer": {"N": str(writer)}},
            )
        except ClientError as error:
            assert error.response["Error"]["Code"] == "ConditionalCheckFailedException"
            won.append(False)
        else:
            won.append(True)

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == WRITERS
    return won.count(True)


def create_table(dynamodb: Any, name: str) -> None:
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def test_of_concurrent_conditional_writers_exactly_one_wins_every_time(aws: MotoServer) -> None:
    dynamodb = boto3.client("dynamodb", endpoint_url=aws.endpoint_url)
    create_table(dynamodb, "claims")

    winners = [race_for(dynamodb, f"event-{n}") for n in range(ROUNDS)]

    assert winners == [1] * ROUNDS


def test_races_on_two_tables_at_once_each_have_exactly_one_winner(aws: MotoServer) -> None:
    """Each table's requests are answered apart from every other table's: two races at once, one
    per table, must still each have exactly one winner."""
    dynamodb = boto3.client("dynamodb", endpoint_url=aws.endpoint_url)
    for table in ("claims", "deliveries"):
        create_table(dynamodb, table)
    winners: dict[str, list[int]] = {"claims": [], "deliveries": []}

    def races(table: str) -> None:
        winners[table] = [race_for(dynamodb, f"event-{n}", table) for n in range(ROUNDS)]

    both = [threading.Thread(target=races, args=(table,)) for table in winners]
    for thread in both:
        thread.start()
    for thread in both:
        thread.join()

    assert winners == {"claims": [1] * ROUNDS, "deliveries": [1] * ROUNDS}
