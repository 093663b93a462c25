"""The storage kit the stores are built from: clients, conditions, updates, cursors, pages."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from botocore.exceptions import ClientError
from botocore.retries.standard import ExponentialBackoff
from jobhooks.delivery.settings import DeliverSettings
from jobhooks.delivery.wiring import build_deliverer
from jobhooks.ingest.settings import IngestSettings
from jobhooks.ingest.wiring import build_ingest_service
from jobhooks.management.context import build_management_context
from jobhooks.management.settings import ManagementSettings
from jobhooks.storage.clients import (
    AUTHORIZER_MAX_ATTEMPTS,
    CONNECT_TIMEOUT_SECONDS,
    MAX_ATTEMPTS,
    READ_TIMEOUT_SECONDS,
    LazyClient,
    aws_client,
    aws_config,
    aws_error_code,
)
from jobhooks.storage.conditions import is_condition_failure
from jobhooks.storage.cursors import decode_cursor, encode_cursor
from jobhooks.storage.exceptions import InvalidCursorError, InvalidPageSizeError
from jobhooks.storage.pages import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, check_page_size, cut_page
from jobhooks.storage.times import (
    epoch_millis,
    epoch_seconds,
    format_time,
    from_epoch_seconds,
    parse_time,
    to_stored_precision,
)
from jobhooks.storage.updates import ItemUpdate

QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/"
ENVIRONMENT = {
    "JOBHOOKS_CLAIMS_TABLE": "claims",
    "JOBHOOKS_SUBSCRIPTIONS_TABLE": "subscriptions",
    "JOBHOOKS_DELIVERIES_TABLE": "deliveries",
    "JOBHOOKS_FIRST_ATTEMPTS_TABLE": "first-attempts",
    "JOBHOOKS_QUARANTINE_TABLE": "quarantine",
    "JOBHOOKS_DELIVERY_QUEUE_URL": QUEUE + "delivery",
    "JOBHOOKS_DELIVERY_DLQ_URL": QUEUE + "delivery-dlq",
    "JOBHOOKS_INGEST_QUEUE_URL": QUEUE + "ingest",
    "JOBHOOKS_INGEST_DLQ_URL": QUEUE + "ingest-dlq",
    "JOBHOOKS_FETCHER_HMAC_KEYS": "ab" * 32,
}


def client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "no"}}, "UpdateItem")


class CountingSession:
    """A boto3 session stand-in that records which clients were made, with which config."""

    def __init__(self) -> None:
        self.made: list[tuple[str, Any]] = []
        self._lock = threading.Lock()

    def client(self, service_name: str, config: Any = None) -> Any:
        with self._lock:
            self.made.append((service_name, config))
        return FakeClient(service_name)


class FakeClient:
    def __init__(self, service_name: str) -> None:
        self.service_name = service_name

    def describe(self) -> str:
        return f"{self.service_name} client"


# -- clients ---------------------------------------------------------------------------------


class _RawBody:
    """The raw stream botocore reads an answer's body from."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


def test_every_client_retries_three_times_with_short_timeouts() -> None:
    config = aws_config()
    assert config.retries == {"mode": "standard", "total_max_attempts": MAX_ATTEMPTS}
    assert (config.connect_timeout, config.read_timeout) == (
        CONNECT_TIMEOUT_SECONDS,
        READ_TIMEOUT_SECONDS,
    )
    # One stuck call (every attempt timing out, throttling backoff of 1 s then 2 s) must end
    # before the management API's 15 s function timeout, so the caller gets an answer.
    worst_case = MAX_ATTEMPTS * (CONNECT_TIMEOUT_SECONDS + READ_TIMEOUT_SECONDS) + 1 + 2
    assert worst_case < 15
    assert aws_config(max_pool_connections=14).max_pool_connections == 14


def test_a_client_is_made_on_its_first_call_once_with_the_shared_config() -> None:
    session = CountingSession()
    client = aws_client("dynamodb", session=session, max_pool_connections=20)
    assert isinstance(client, LazyClient)
    assert session.made == []

    threads = [threading.Thread(target=client.describe) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert client.describe() == "dynamodb client"
    [(service, config)] = session.made
    assert service == "dynamodb"
    assert config.max_pool_connections == 20
    assert config.retries == {"mode": "standard", "total_max_attempts": MAX_ATTEMPTS}


@pytest.mark.parametrize("attempts", [MAX_ATTEMPTS, AUTHORIZER_MAX_ATTEMPTS])
def test_a_call_that_keeps_failing_is_sent_exactly_max_attempts_times(
    attempts: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # botocore's retries dict reads `max_attempts` as retries after the first call: 3 there
    # made 4 calls, a third more load on a struggling service and a longer worst case.
    import boto3
    from botocore.awsrequest import AWSResponse

    sent: list[str] = []

    def always_503(request: Any, **_: Any) -> AWSResponse:
        sent.append(request.url)
        return AWSResponse(request.url, 503, {}, _RawBody(b"{}"))

    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    # No waiting between the attempts (botocore's jittered backoff): only their number counts.
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0)
    client = aws_client("sqs", session=session, max_attempts=attempts).client
    client.meta.events.register("before-send", always_503)
    with pytest.raises(ClientError):
        client.list_queues()
    assert len(sent) == attempts


def test_building_a_function_makes_no_aws_client() -> None:
    # The cold start pays for no client: the first invocation that calls AWS does.
    session = CountingSession()
    build_ingest_service(IngestSettings.from_env(ENVIRONMENT), session=session)
    secret_arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:jobhooks-keys"
    with_secret = {**ENVIRONMENT, "JOBHOOKS_FETCHER_KEYS_SECRET_ARN": secret_arn}
    build_ingest_service(IngestSettings.from_env(with_secret), session=session)
    context = build_management_context(ManagementSettings.from_env(ENVIRONMENT), session=session)
    assert session.made == []
    # What a request needs is made when it first needs it.
    assert context.webhook_client is context.webhook_client
    assert session.made == []


def test_the_deliver_function_makes_no_aws_client_before_its_first_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[str] = []
    monkeypatch.setattr(
        "boto3.client", lambda service_name, **_: made.append(service_name) or FakeClient("x")
    )
    deliverer = build_deliverer(DeliverSettings.from_env(ENVIRONMENT))
    try:
        assert made == []
    finally:
        deliverer.close()


def test_aws_error_code_reads_a_client_error_and_nothing_else() -> None:
    assert aws_error_code(client_error("ThrottlingException")) == "ThrottlingException"
    assert aws_error_code(ValueError("no")) == "Unknown"


# -- conditions and updates -------------------------------------------------------------------


def test_only_a_failed_condition_is_a_condition_failure() -> None:
    assert is_condition_failure(client_error("ConditionalCheckFailedException"))
    assert not is_condition_failure(client_error("ProvisionedThroughputExceededException"))
    assert not is_condition_failure(RuntimeError("ConditionalCheckFailedException"))


def test_an_update_puts_every_name_and_value_behind_a_placeholder() -> None:
    update = ItemUpdate()
    update.set("status", {"S": "done"}).set_if_missing("created_at", {"S": "now"})
    update.append("attempts", {"M": {"n": {"N": "1"}}}).remove("lease_until")
    update.add("attempt_count", {"N": "1"})
    done = update.value("expected", {"S": "pending"})
    update.condition(f"{update.name('status')} = {done}")

    request = update.request("table", {"id": {"S": "a"}})

    assert request == {
        "TableName": "table",
        "Key": {"id": {"S": "a"}},
        "UpdateExpression": (
            "SET #status = :status, #created_at = if_not_exists(#created_at, :created_at), "
            "#attempts = list_append(if_not_exists(#attempts, :nothing), :attempts) "
            "REMOVE #lease_until ADD #attempt_count :attempt_count"
        ),
        "ConditionExpression": "#status = :expected",
        "ExpressionAttributeNames": {
            "#status": "status",
            "#created_at": "created_at",
            "#attempts": "attempts",
            "#lease_until": "lease_until",
            "#attempt_count": "attempt_count",
        },
        "ExpressionAttributeValues": {
            ":status": {"S": "done"},
            ":created_at": {"S": "now"},
            ":attempts": {"L": [{"M": {"n": {"N": "1"}}}]},
            ":nothing": {"L": []},
            ":attempt_count": {"N": "1"},
            ":expected": {"S": "pending"},
        },
    }


def test_an_update_without_values_sends_no_empty_value_map() -> None:
    request = ItemUpdate().remove("lease_until").request("table", {"id": {"S": "a"}})
    assert request["UpdateExpression"] == "REMOVE #lease_until"
    assert "ExpressionAttributeValues" not in request


# -- cursors and pages ------------------------------------------------------------------------


def test_a_cursor_round_trips_and_keeps_its_encoding() -> None:
    cursor = encode_cursor({"t": "acme", "s": "sub_1"})
    # The encoding of every cursor handed out so far: it must keep decoding after a deploy.
    assert cursor == "eyJ0IjoiYWNtZSIsInMiOiJzdWJfMSJ9"
    assert decode_cursor(cursor, bound={"t": "acme"}, keys=("s",)) == {"s": "sub_1"}


@pytest.mark.parametrize(
    "cursor",
    [
        encode_cursor({"t": "globex", "s": "sub_1"}),  # another tenant's listing
        encode_cursor({"t": "acme", "s": ""}),  # an empty key DynamoDB would refuse (a 502)
        encode_cursor({"t": "acme"}),
        "e30",  # {}
        "WzFd",  # [1]
        "not a cursor",
        "%%%",
    ],
)
def test_a_cursor_of_another_listing_or_a_damaged_one_is_refused(cursor: str) -> None:
    with pytest.raises(InvalidCursorError) as refused:
        decode_cursor(cursor, bound={"t": "acme"}, keys=("s",), scope="for this tenant")
    assert refused.value.code == "invalid_cursor"
    assert refused.value.message == (
        "the cursor is not one this listing returned for this tenant; start again without a cursor"
    )


def test_a_cursor_may_be_bound_to_no_filter() -> None:
    unfiltered = encode_cursor({"q": "q_1", "r": None, "at": "2026-03-01T12:00:00.000Z"})
    assert decode_cursor(unfiltered, bound={"r": None}, keys=("q", "at"))["q"] == "q_1"
    with pytest.raises(InvalidCursorError) as refused:
        decode_cursor(unfiltered, bound={"r": "stale_timestamp"}, keys=("q", "at"))
    assert refused.value.message == (
        "the cursor is not one this listing returned; start again without a cursor"
    )


@pytest.mark.parametrize("limit", [0, -1, MAX_PAGE_SIZE + 1, True, "5", 2.0])
def test_a_page_size_outside_1_to_100_is_refused(limit: object) -> None:
    with pytest.raises(InvalidPageSizeError) as refused:
        check_page_size(limit)
    assert refused.value.message == "the page size must be between 1 and 100"


def test_page_sizes_and_the_last_page() -> None:
    assert (DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE) == (50, 100)
    assert check_page_size(1) == 1 and check_page_size(100) == 100
    assert cut_page(["a", "b", "c"], 2, lambda last: f"after {last}") == (("a", "b"), "after b")
    assert cut_page(["a", "b"], 2, lambda last: f"after {last}") == (("a", "b"), None)


# -- times ------------------------------------------------------------------------------------


def test_stored_times_are_utc_milliseconds_and_round_trip_exactly() -> None:
    moment = datetime(2026, 3, 1, 9, 0, 0, 123_987, tzinfo=timezone(timedelta(hours=-3)))
    stored = format_time(moment)
    assert stored == "2026-03-01T12:00:00.123Z"
    assert parse_time(stored) == to_stored_precision(moment)
    assert to_stored_precision(moment).tzinfo == UTC
    with pytest.raises(ValueError, match="timezone-aware"):
        to_stored_precision(datetime(2026, 3, 1))


def test_expiry_is_whole_epoch_seconds() -> None:
    moment = datetime(2026, 3, 1, 12, 0, 0, 999_000, tzinfo=UTC)
    assert epoch_seconds(moment) == 1_772_366_400
    assert epoch_millis(moment) == 1_772_366_400_999
    assert from_epoch_seconds(1_772_366_400) == moment.replace(microsecond=0)
