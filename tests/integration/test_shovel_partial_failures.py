"""SendMessageBatch answering 200 with some entries Failed: only accepted entries are acked.

moto's server cannot be told to fail single entries, so this is the one place with a fake: a
wrapper around a real SQS client (moto's) that reports chosen entries as Failed instead of
sending them. Everything else is real: the broker, the acks, the redelivery.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from typing import Any

import boto3
import pytest
from jobhooks_tools.local.rabbitmq import RabbitMQBroker
from jobhooks_tools.shovel import Shovel, load_settings

from tests.fixtures.rabbitmq import (
    AmqpNames,
    ce_id_of,
    fetcher_job_event,
    publish_confirmed,
    queue_depth,
)
from tests.integration.test_shovel import SqsCollector

pytestmark = [pytest.mark.rabbitmq]


class SqsRefusingSomeEntries:
    """A real SQS client, except that entries whose ce-id is in `refused` come back Failed
    (SenderFault false: an SQS-side problem worth retrying) while `refusing` is set."""

    def __init__(self, client: Any, refused: set[str]) -> None:
        self.client = client
        self.refused = refused
        self.refusing = True
        self.refusals: Counter[str] = Counter()
        self._lock = threading.Lock()

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        refuse = [entry for entry in Entries if self.refusing and _ce_id(entry) in self.refused]
        send = [entry for entry in Entries if entry not in refuse]
        response: dict[str, Any] = {"Successful": [], "Failed": []}
        if send:
            response = self.client.send_message_batch(QueueUrl=QueueUrl, Entries=send)
            response.setdefault("Failed", [])
        with self._lock:
            self.refusals.update(_ce_id(entry) for entry in refuse)
        response["Failed"] += [
            {
                "Id": entry["Id"],
                "SenderFault": False,
                "Code": "InternalError",
                "Message": "injected by the test",
            }
            for entry in refuse
        ]
        return response


def _ce_id(entry: dict[str, Any]) -> str:
    return str(entry["MessageAttributes"]["ce-id"]["StringValue"])


def test_only_entries_sqs_accepted_are_acked(
    rabbitmq: RabbitMQBroker, amqp_names: AmqpNames, aws: object
) -> None:
    queue_url = boto3.client("sqs").create_queue(QueueName="jobhooks-ingest")["QueueUrl"]
    messages = [fetcher_job_event(index) for index in range(60)]
    refused = {ce_id_of(message) for message in messages[::6]}
    accepted = {ce_id_of(message) for message in messages} - refused
    client = SqsRefusingSomeEntries(boto3.client("sqs"), {ce_id.decode() for ce_id in refused})
    settings = load_settings(
        {
            "amqp_url": rabbitmq.url,
            "queue_url": queue_url,
            "exchange": amqp_names.exchange,
            "queue": amqp_names.queue,
            "parking_queue": amqp_names.parking_queue,
            "health_port": "off",
            "retry_max_delay_seconds": "0.2",
        },
        os.environ,
    )

    with SqsCollector(queue_url) as collector:
        shovel = Shovel(settings, sqs_client=client).start()
        try:
            assert shovel.wait_until_consuming(timeout=30)
            publish_confirmed(rabbitmq.url, amqp_names.exchange, messages)
            collector.wait_for(accepted)
            deadline = time.monotonic() + 30
            while min(client.refusals[ce_id.decode()] for ce_id in refused) < 3:
                assert time.monotonic() < deadline, "the refused entries were not retried"
                time.sleep(0.05)
        finally:
            report = shovel.stop(timeout=3)

        # The refused entries were retried, never acked: stopping hands them back to the queue.
        assert report.drained is False
        assert report.returned_to_broker == len(refused)
        assert queue_depth(rabbitmq.url, amqp_names.queue) == len(refused)
        assert not collector.ce_ids().keys() & refused
        assert shovel.metrics.value("jobhooks_shovel_send_failures_total", kind="entry") >= 3 * len(
            refused
        )
        assert shovel.metrics.value("jobhooks_shovel_forwarded_total") == len(accepted)

        # Once SQS takes them, a new shovel forwards exactly the ones that were refused.
        client.refusing = False
        shovel = Shovel(settings, sqs_client=client).start()
        try:
            collector.wait_for(refused)
        finally:
            assert shovel.stop(timeout=10).drained
    assert queue_depth(rabbitmq.url, amqp_names.queue) == 0
    assert collector.ce_ids().keys() == accepted | refused
