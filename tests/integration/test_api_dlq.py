"""Dead-letter queue redrive: the StartMessageMoveTask call (botocore Stubber, as moto lacks it),
the choice between it and receive-and-resend, and resend on the ingest DLQ for real (moto)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber
from jobhooks.analytics.row import AnalyticsRow
from jobhooks.management.settings import RedriveMethod, effective_redrive_method
from jobhooks.spill.messages import SpilledRows, spill_messages
from jobhooks_tools.local.template import LocalResources
from jobhooks_tools.sample_events import demo_key, make_job_event

from tests.integration.api_support import InProcessApi, use_context

DLQ_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/jobhooks-DeliveryDeadLetterQueue"
QUEUE_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/jobhooks-DeliveryQueue"
DLQ_ARN = "arn:aws:sqs:eu-west-1:123456789012:jobhooks-DeliveryDeadLetterQueue"
QUEUE_ARN = "arn:aws:sqs:eu-west-1:123456789012:jobhooks-DeliveryQueue"


@pytest.fixture
def stubbed_sqs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    for name, value in {
        "SUBSCRIPTIONS_TABLE": "t",
        "DELIVERIES_TABLE": "t",
        "FIRST_ATTEMPTS_TABLE": "t",
        "CLAIMS_TABLE": "t",
        "QUARANTINE_TABLE": "t",
        "DELIVERY_QUEUE_URL": QUEUE_URL,
        "DELIVERY_DLQ_URL": DLQ_URL,
        "INGEST_QUEUE_URL": QUEUE_URL.replace("Delivery", "Ingest"),
        "INGEST_DLQ_URL": DLQ_URL.replace("Delivery", "Ingest"),
    }.items():
        monkeypatch.setenv(f"JOBHOOKS_{name}", value)
    sqs = boto3.client(
        "sqs",
        region_name="eu-west-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    with Stubber(sqs) as stubber:
        yield stubber
    stubber.assert_no_pending_responses()


def expect_queue_arns(stubber: Stubber) -> None:
    for url, arn in ((DLQ_URL, DLQ_ARN), (QUEUE_URL, QUEUE_ARN)):
        stubber.add_response(
            "get_queue_attributes",
            {"Attributes": {"QueueArn": arn}},
            {"QueueUrl": url, "AttributeNames": ["QueueArn"]},
        )


def test_redrive_on_aws_starts_a_message_move_task_back_to_the_source_queue(
    stubbed_sqs: Stubber,
) -> None:
    expect_queue_arns(stubbed_sqs)
    stubbed_sqs.add_response(
        "start_message_move_task",
        {"TaskHandle": "eyJ0YXNrIjoiMSJ9"},
        {"SourceArn": DLQ_ARN, "DestinationArn": QUEUE_ARN},
    )
    api = InProcessApi()
    with use_context(
        api.module, grants=(), sqs=stubbed_sqs.client, dlq_redrive=RedriveMethod.MOVE_TASK
    ):
        answer = api.post("/v1/dlq/redrive", {"queue": "delivery"})
    assert answer.status == 202, answer.text
    assert answer.body["method"] == "move_task"
    assert answer.body["task_handle"] == "eyJ0YXNrIjoiMSJ9"


def test_a_move_task_sqs_refuses_is_a_conflict(stubbed_sqs: Stubber) -> None:
    expect_queue_arns(stubbed_sqs)
    stubbed_sqs.add_client_error(
        "start_message_move_task",
        service_error_code="AWS.SimpleQueueService.UnsupportedOperation",
        service_message="a task is already running",
        http_status_code=400,
    )
    api = InProcessApi()
    with use_context(
        api.module, grants=(), sqs=stubbed_sqs.client, dlq_redrive=RedriveMethod.MOVE_TASK
    ):
        answer = api.post("/v1/dlq/redrive")
    assert answer.status == 409
    assert answer.error["code"] == "redrive_unavailable"
    assert "UnsupportedOperation" in answer.error["message"]


def test_listing_on_aws_shows_the_latest_move_task(stubbed_sqs: Stubber) -> None:
    stubbed_sqs.add_response(
        "get_queue_attributes",
        {
            "Attributes": {
                "ApproximateNumberOfMessages": "0",
                "ApproximateNumberOfMessagesNotVisible": "0",
            }
        },
    )
    stubbed_sqs.add_response("receive_message", {"Messages": []})
    stubbed_sqs.add_response(
        "get_queue_attributes",
        {"Attributes": {"QueueArn": DLQ_ARN}},
        {"QueueUrl": DLQ_URL, "AttributeNames": ["QueueArn"]},
    )
    stubbed_sqs.add_response(
        "list_message_move_tasks",
        {
            "Results": [
                {
                    "Status": "RUNNING",
                    "SourceArn": DLQ_ARN,
                    "ApproximateNumberOfMessagesMoved": 4,
                    "ApproximateNumberOfMessagesToMove": 10,
                    "StartedTimestamp": 1_772_366_400_000,
                }
            ]
        },
        {"SourceArn": DLQ_ARN, "MaxResults": 1},
    )
    api = InProcessApi()
    with use_context(
        api.module, grants=(), sqs=stubbed_sqs.client, dlq_redrive=RedriveMethod.MOVE_TASK
    ):
        answer = api.get("/v1/dlq")
    assert answer.status == 200, answer.text
    assert answer.body["move_task"] == {
        "status": "RUNNING",
        "moved": 4,
        "to_move": 10,
        "started_at": "2026-03-01T12:00:00.000Z",
        "failure_reason": None,
    }


def test_auto_resends_exactly_when_an_sqs_endpoint_is_configured() -> None:
    local = {"AWS_ENDPOINT_URL": "http://127.0.0.1:5000"}
    assert effective_redrive_method(RedriveMethod.AUTO, local) is RedriveMethod.RESEND
    assert (
        effective_redrive_method(RedriveMethod.AUTO, {"AWS_ENDPOINT_URL_SQS": "http://x"})
        is RedriveMethod.RESEND
    )
    assert effective_redrive_method(RedriveMethod.AUTO, {}) is RedriveMethod.MOVE_TASK
    assert effective_redrive_method(RedriveMethod.MOVE_TASK, local) is RedriveMethod.MOVE_TASK
    assert effective_redrive_method(RedriveMethod.RESEND, {}) is RedriveMethod.RESEND


def test_resend_moves_the_ingest_dlq_back_without_loss(stack: LocalResources) -> None:
    sqs = boto3.client("sqs")
    dlq_url = stack.queue_url("IngestDeadLetterQueue")
    queue_url = stack.queue_url("IngestQueue")
    bodies = {make_job_event(demo_key()).forwarded().to_json() for _ in range(12)}
    for body in bodies:
        sqs.send_message(
            QueueUrl=dlq_url,
            MessageBody=body,
            MessageAttributes={"origin": {"DataType": "String", "StringValue": "test"}},
        )
    api = InProcessApi()
    with use_context(api.module):
        listed = api.get("/v1/dlq", queue="ingest", limit=3)
        assert listed.body["approximate_count"] == 12
        assert len(listed.body["messages"]) == 3
        assert all(m["event_id"].startswith("fetcher.job.") for m in listed.body["messages"])
        first = api.post("/v1/dlq/redrive", {"queue": "ingest", "max_messages": 5})
        assert first.body["moved"] == 5
        assert first.body["remaining"] == 7
        rest = api.post("/v1/dlq/redrive", {"queue": "ingest", "method": "resend"})
        assert rest.body == {
            "queue": "ingest",
            "method": "resend",
            "moved": 7,
            "remaining": 0,
            "task_handle": None,
        }
    moved: set[str] = set()
    while batch := sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    ).get("Messages", []):
        for message in batch:
            assert message["MessageAttributes"]["origin"]["StringValue"] == "test"
            moved.add(message["Body"])
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    assert moved == bodies


def test_the_spill_dlq_is_listed_with_what_it_holds_and_redriven_to_the_spill_queue(
    stack: LocalResources,
) -> None:
    sqs = boto3.client("sqs")
    dlq_url = stack.queue_url("SpillDeadLetterQueue")
    rows = SpilledRows(
        tuple(
            AnalyticsRow(
                timestamp_utc=datetime(2026, 7, 13, tzinfo=UTC),
                event_id=f"fetcher.job.completed.job-{n}",
                release="unknown",
                account_id="acme",
                job_id=f"job-{n}",
                job_name="report",
                queue_name="q",
                attempt_count=1,
                queue_wait_ms=0,
                duration_ms=5,
                status="success",
                unmeasured=(),
            )
            for n in range(3)
        ),
        pseudonymized=True,
    )
    (body,) = spill_messages(rows)
    sqs.send_message(QueueUrl=dlq_url, MessageBody=body)
    api = InProcessApi()
    with use_context(api.module):
        listed = api.get("/v1/dlq", queue="spill")
        (parked,) = listed.body["messages"]
        assert (parked["spill_kind"], parked["spilled_items"]) == ("analytics_rows", 3)
        moved = api.post("/v1/dlq/redrive", {"queue": "spill", "method": "resend"})
        assert (moved.body["moved"], moved.body["remaining"]) == (1, 0)
    (back,) = sqs.receive_message(QueueUrl=stack.queue_url("SpillQueue")).get("Messages", [])
    assert back["Body"] == body


@pytest.mark.parametrize(
    ("queue", "dlq", "source"),
    [
        ("ingest", "IngestDeadLetterQueue", "IngestQueue"),
        ("delivery", "DeliveryDeadLetterQueue", "DeliveryQueue"),
        ("spill", "SpillDeadLetterQueue", "SpillQueue"),
    ],
)
def test_a_move_task_redrive_reads_both_queue_arns_as_the_api_role_and_loses_nothing_when_refused(
    stack: LocalResources, queue: str, dlq: str, source: str
) -> None:
    # The move-task redrive names both queues by ARN, read with GetQueueAttributes as the API
    # function (ApiRole's grants on the DLQ and on the queue it goes back to). The local stack's
    # SQS has no message move tasks and refuses StartMessageMoveTask, as SQS refuses a second
    # task on a queue: the answer says so and every parked message stays where it was.
    sqs = boto3.client("sqs")
    dlq_url = stack.queue_url(dlq)
    sqs.send_message(QueueUrl=dlq_url, MessageBody="parked")
    # moto answers the unknown action with a 500: not retried, which would only add backoff.
    once = boto3.client("sqs", config=Config(retries={"total_max_attempts": 1}))
    api = InProcessApi()
    with use_context(api.module, sqs=once, dlq_redrive=RedriveMethod.MOVE_TASK):
        answer = api.post("/v1/dlq/redrive", {"queue": queue})
    assert answer.status == 409, answer.text
    assert answer.error["code"] == "redrive_unavailable"
    assert depth(sqs, dlq_url) == 1
    assert depth(sqs, stack.queue_url(source)) == 0


def depth(sqs: Any, queue_url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])
