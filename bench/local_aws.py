"""What one AWS call costs the local AWS server: `moto_main` beside moto's own server.

    .venv/bin/python bench/local_aws.py [--calls 300] [--rounds 5]

Every function of the local stack (and every test) sends its AWS calls to moto's server, where
they queue: what a call costs there shows in every tenant's latency (docs/performance.md,
"Isolation between tenants"). This starts two servers side by side, moto's own (`python -m
moto.server`, the baseline) and `jobhooks_tools.local.moto_main` (the stack's: each host's
backend found once, no request log, each DynamoDB table's requests one at a time), puts the
same table and queue in each, and sends both the same calls in alternating rounds: `GetItem` and a
conditional `UpdateItem` (one item of 50, in turn) and an SQS `SendMessage` + `ReceiveMessage`
+ `DeleteMessage` (the queue kept near empty, as the stack's are: moto recounts a queue on
every send). The figure is the server's CPU time per call (from /proc, user + system: what the
other calls wait for), the median over the rounds, and the client's wall time per call; the
ratio is moto_main's over moto's own.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import boto3
from jobhooks_tools.local.moto_server import MotoServer


class Server:
    """One moto server in a child process, with a table and a queue to call."""

    def __init__(self, name: str, module: str) -> None:
        self.name = name
        self.moto = MotoServer(module=module).start()
        session = boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
        )
        self.dynamodb = session.client("dynamodb", endpoint_url=self.moto.endpoint_url)
        self.sqs = session.client("sqs", endpoint_url=self.moto.endpoint_url)
        self.dynamodb.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        for n in range(50):
            self.dynamodb.put_item(TableName="t", Item={"pk": {"S": f"k{n}"}, "n": {"N": "0"}})
        self.queue_url = self.sqs.create_queue(QueueName="q")["QueueUrl"]

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self.moto.pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.moto.stop()


def calls(server: Server) -> dict[str, Callable[[int], Any]]:
    dynamodb, sqs, queue = server.dynamodb, server.sqs, server.queue_url

    def get_item(n: int) -> Any:
        return dynamodb.get_item(TableName="t", Key={"pk": {"S": f"k{n % 50}"}})

    def update_item(n: int) -> Any:
        return dynamodb.update_item(
            TableName="t",
            Key={"pk": {"S": f"k{n % 50}"}},
            UpdateExpression="ADD n :one SET updated = :at",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":one": {"N": "1"}, ":at": {"S": str(n)}},
            ReturnValues="ALL_NEW",
        )

    def send_receive_delete(n: int) -> Any:
        sqs.send_message(QueueUrl=queue, MessageBody="x" * 500)
        for message in sqs.receive_message(QueueUrl=queue).get("Messages", []):
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=message["ReceiptHandle"])

    return {
        "GetItem": get_item,
        "UpdateItem": update_item,
        "SQS send+receive+delete": send_receive_delete,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="calls of each kind per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    servers = [Server("moto", "moto.server"), Server("moto_main", "jobhooks_tools.local.moto_main")]
    cpu: dict[tuple[str, str], list[float]] = {}
    wall: dict[tuple[str, str], list[float]] = {}
    try:
        for _ in range(args.rounds):
            for server in servers:
                for kind, call in calls(server).items():
                    cpu_before, started = server.cpu_seconds(), time.perf_counter()
                    for n in range(args.calls):
                        call(n)
                    elapsed = time.perf_counter() - started
                    used = server.cpu_seconds() - cpu_before
                    cpu.setdefault((server.name, kind), []).append(1000 * used / args.calls)
                    wall.setdefault((server.name, kind), []).append(1000 * elapsed / args.calls)
    finally:
        for server in servers:
            server.stop()
    print(
        f"server CPU and client wall per call, ms (median of {args.rounds} rounds x {args.calls})"
    )
    print(f"  {'call':<26}{'moto':>14}{'moto_main':>14}{'ratio':>8}")
    for kind in [kind for (name, kind) in cpu if name == "moto"]:
        base, ours = statistics.median(cpu["moto", kind]), statistics.median(cpu["moto_main", kind])
        base_wall = statistics.median(wall["moto", kind])
        ours_wall = statistics.median(wall["moto_main", kind])
        print(
            f"  {kind:<26}{base:>6.2f} / {base_wall:>5.2f}{ours:>6.2f} / {ours_wall:>5.2f}"
            f"{ours / base:>7.2f}x"
        )
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"(CPU / wall; ratio of server CPU; load average {load} on {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
