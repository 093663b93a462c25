"""The Lambda SQS event source mapping, emulated, so real handlers run against a local queue.

`sam local` needs Docker and moto's own Lambda either needs Docker or silently deletes messages
without running any code, so the test suites and `jobhooks dev` drive the handlers of
`functions/` through this poller instead. It keeps the rules of the real event source with
`ReportBatchItemFailures` on (Lambda developer guide, "services-sqs-errorhandling"):

- batches of up to 10 messages, each turned into the exact record shape Lambda sends;
- the handler runs in-process as `handler(event, context)` with a LambdaContext stand-in whose
  `get_remaining_time_in_millis()` counts down from the function timeout;
- `{"batchItemFailures": [{"itemIdentifier": messageId}]}` marks single records as failed; a null
  response, `{}` or an empty list means full success (Lambda's rule);
- an exception, a run past the function timeout, a response that is not an object, or an
  empty, malformed or unknown `itemIdentifier` fails the whole batch: nothing is deleted;
- successes are deleted; failures are left in flight until their visibility timeout ends (the
  handler may have changed it for backoff), never made visible early, so `maxReceiveCount`
  redrive to the DLQ happens exactly as on AWS (moto performs it in server mode).

Several pollers (or `concurrency` > 1) on one queue behave like concurrent Lambda instances,
except that they share this process: handlers must tolerate running in parallel threads. The
usual Powertools pattern does NOT: a module-level `BatchProcessor` keeps the current batch in
the instance, so two threads invoking one such handler mix their results. Give each poller of
such a handler `concurrency=1` (one Lambda instance), or build the processor per invocation.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from jobhooks_tools.local import iam

# Named in the `jobhooks` logger tree, where the local stack routes the package's records.
logger = logging.getLogger("jobhooks.local.event_source")

MAX_BATCH_SIZE: Final = 10
# Lambda's most for an SQS mapping's MaximumBatchingWindowInSeconds.
MAX_BATCHING_WINDOW_SECONDS: Final = 300
DEFAULT_WAIT_TIME_SECONDS: Final = 1
DEFAULT_FUNCTION_TIMEOUT_SECONDS: Final = 30.0
LOCAL_ACCOUNT_ID: Final = "123456789012"

# The message system attributes Lambda copies into `attributes` (when SQS returns them).
_LAMBDA_ATTRIBUTES: Final = (
    "ApproximateReceiveCount",
    "SentTimestamp",
    "SenderId",
    "ApproximateFirstReceiveTimestamp",
    "SequenceNumber",
    "MessageGroupId",
    "MessageDeduplicationId",
    "AWSTraceHeader",
    "DeadLetterQueueSourceArn",
)

Handler = Callable[[dict[str, Any], "LambdaContext"], object]


class EventSourceError(Exception):
    """Base class of the poller's own errors."""


class SqsUnavailableError(EventSourceError):
    """SQS could not be reached or refused the call; the background poller retries with backoff."""


@dataclass
class LambdaContext:
    """The attributes of Lambda's context object that handlers and Powertools read."""

    function_name: str
    memory_limit_in_mb: int
    invoked_function_arn: str
    aws_request_id: str
    deadline: float = field(repr=False)
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = ""
    identity: Any = None
    client_context: Any = None

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


@dataclass(frozen=True)
class BatchStats:
    """What happened to one batch, or (added up) to several."""

    batches: int = 0
    received: int = 0
    succeeded: int = 0
    failed: int = 0
    deleted: int = 0
    delete_failures: int = 0
    failed_batches: int = 0
    succeeded_ids: tuple[str, ...] = ()
    failed_ids: tuple[str, ...] = ()
    error: str | None = None

    def __add__(self, other: BatchStats) -> BatchStats:
        return BatchStats(
            batches=self.batches + other.batches,
            received=self.received + other.received,
            succeeded=self.succeeded + other.succeeded,
            failed=self.failed + other.failed,
            deleted=self.deleted + other.deleted,
            delete_failures=self.delete_failures + other.delete_failures,
            failed_batches=self.failed_batches + other.failed_batches,
            succeeded_ids=self.succeeded_ids + other.succeeded_ids,
            failed_ids=self.failed_ids + other.failed_ids,
            error=other.error or self.error,
        )


@dataclass(frozen=True)
class EventSourceCounters:
    """Running totals of one poller (all its threads), for tests and `jobhooks dev` output."""

    batches: int = 0
    records_received: int = 0
    records_succeeded: int = 0
    records_failed: int = 0
    records_deleted: int = 0
    delete_failures: int = 0
    failed_batches: int = 0
    sqs_errors: int = 0
    consecutive_sqs_errors: int = 0
    internal_errors: int = 0
    last_error: str | None = None

    @property
    def healthy(self) -> bool:
        """False while SQS keeps failing; true again after the next successful call."""
        return self.consecutive_sqs_errors == 0


class SqsEventSource:
    """Polls one queue and invokes one handler the way the Lambda SQS event source does.

    `sqs_client` is a boto3 SQS client (one is made from the environment when omitted; boto3
    honours `AWS_ENDPOINT_URL`). `function_timeout_seconds` plays the function's timeout: the
    context counts down from it, and a handler that runs longer fails its whole batch, as on
    AWS, even though an in-process call cannot be cut short.
    """

    def __init__(
        self,
        queue_url: str,
        handler: Handler,
        *,
        sqs_client: Any | None = None,
        batch_size: int = MAX_BATCH_SIZE,
        wait_time_seconds: int = DEFAULT_WAIT_TIME_SECONDS,
        function_name: str = "jobhooks-local",
        function_timeout_seconds: float = DEFAULT_FUNCTION_TIMEOUT_SECONDS,
        memory_limit_in_mb: int = 512,
        concurrency: int = 1,
        strict_responses: bool = False,
        on_batch: Callable[[BatchStats], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
        initial_backoff_seconds: float = 0.2,
        max_backoff_seconds: float = 5.0,
        batching_window_seconds: float = 0,
        principal: str | None = None,
    ) -> None:
        if not 0 <= batching_window_seconds <= MAX_BATCHING_WINDOW_SECONDS:
            raise ValueError(
                f"batching_window_seconds must be between 0 and {MAX_BATCHING_WINDOW_SECONDS}"
            )
        if not 1 <= batch_size <= MAX_BATCH_SIZE:
            raise ValueError(f"batch_size must be between 1 and {MAX_BATCH_SIZE}")
        if not 0 <= wait_time_seconds <= 20:
            raise ValueError("wait_time_seconds must be between 0 and 20 (SQS long polling)")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if function_timeout_seconds <= 0:
            raise ValueError("function_timeout_seconds must be positive")
        self.queue_url = queue_url
        self.function_name = function_name
        self._handler = handler
        # Lambda polls and deletes with the function's role: so does this poller, as the
        # template function whose code the handler is (jobhooks_tools.local.iam), if any.
        self._principal = principal
        # The default client must outwait the longest receive: a batching window long-polls for
        # up to the rest of the window (at most 20 s), longer than the poller's own wait.
        self._sqs = (
            sqs_client
            if sqs_client is not None
            else _default_sqs_client(
                max(wait_time_seconds, _window_poll_seconds(batching_window_seconds))
            )
        )
        self._batch_size = batch_size
        self._batching_window = batching_window_seconds
        self._wait_time_seconds = wait_time_seconds
        self._function_timeout = function_timeout_seconds
        self._memory_limit_in_mb = memory_limit_in_mb
        self._concurrency = concurrency
        self._strict_responses = strict_responses
        self._on_batch = on_batch
        self._on_error = on_error
        self._initial_backoff = initial_backoff_seconds
        self._max_backoff = max_backoff_seconds
        self._region = str(getattr(getattr(self._sqs, "meta", None), "region_name", "") or "")
        self._queue_arn: str | None = None
        self._counters = EventSourceCounters()
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- one batch -------------------------------------------------------------------------

    def run_once(self, *, wait_time_seconds: int | None = None) -> BatchStats:
        """Receive one batch, invoke the handler, delete the successes.

        Raises `SqsUnavailableError` when the receive fails. Handler failures never raise: they
        are part of the returned `BatchStats`, as they are an outcome, not an error, on AWS.
        """
        messages = self._receive(
            self._wait_time_seconds if wait_time_seconds is None else wait_time_seconds
        )
        if not messages:
            return BatchStats()
        messages = self._fill_batch(messages)
        stats = self._invoke(messages)
        self._count(stats)
        if self._on_batch is not None:
            try:
                self._on_batch(stats)
            except Exception:
                logger.exception("the on_batch hook of %s failed", self.function_name)
        return stats

    def run_until_idle(
        self, max_seconds: float = 30.0, *, include_in_flight: bool = False
    ) -> BatchStats:
        """Process batches until the queue has nothing visible; the totals of what was done.

        With `include_in_flight`, also wait for in-flight and delayed messages (failed records
        coming back after their visibility timeout) until the queue is empty or they land in the
        DLQ. Raises `TimeoutError` when that takes longer than `max_seconds`.
        """
        deadline = time.monotonic() + max_seconds
        total = BatchStats()
        while True:
            # Short polls: moto answers them exactly, and idleness is seen without a long wait.
            stats = self.run_once(wait_time_seconds=0)
            total += stats
            if stats.received == 0:
                if not include_in_flight or self._queue_is_empty():
                    return total
                if time.monotonic() >= deadline:
                    break
                time.sleep(0.1)
            elif time.monotonic() >= deadline:
                break
        raise TimeoutError(
            f"{self.queue_url} was not idle after {max_seconds} s "
            f"({total.received} records received, {total.failed} failed)"
        )

    # -- background polling ----------------------------------------------------------------

    def start(self) -> SqsEventSource:
        """Poll in `concurrency` background threads until `stop()`."""
        if self.running:
            raise RuntimeError(f"the event source of {self.function_name} is already running")
        self._stopping.clear()
        self._threads = [
            threading.Thread(
                target=self._poll_until_stopped,
                name=f"sqs-event-source-{self.function_name}-{n}",
                daemon=True,
            )
            for n in range(self._concurrency)
        ]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Finish the batches in hand and stop; a receive in progress ends within its wait."""
        self._stopping.set()
        if timeout is None:
            timeout = self._wait_time_seconds + self._function_timeout + 5
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [thread.name for thread in self._threads if thread.is_alive()]
        self._threads = [thread for thread in self._threads if thread.is_alive()]
        if alive:
            logger.warning("event source threads still running after %.1f s: %s", timeout, alive)

    @property
    def running(self) -> bool:
        return any(thread.is_alive() for thread in self._threads)

    def __enter__(self) -> SqsEventSource:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- what happened ---------------------------------------------------------------------

    @property
    def counters(self) -> EventSourceCounters:
        with self._changed:
            return self._counters

    def wait_for(
        self, condition: Callable[[EventSourceCounters], bool], timeout: float
    ) -> EventSourceCounters:
        """Block until `condition(counters)` holds (checked after every batch and error)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition(self._counters):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"the event source of {self.function_name} did not reach the expected "
                        f"state within {timeout} s: {self._counters}"
                    )
                self._changed.wait(remaining)
            return self._counters

    # -- internals -------------------------------------------------------------------------

    def _poll_until_stopped(self) -> None:
        backoff = self._initial_backoff
        while not self._stopping.is_set():
            try:
                stats = self.run_once()
            except SqsUnavailableError:
                # Already logged and counted; full jitter keeps several pollers from stampeding.
                self._stopping.wait(random.uniform(backoff / 2, backoff))
                backoff = min(backoff * 2, self._max_backoff)
                continue
            except Exception as error:  # a bug here must not silently end local delivery
                logger.exception("the event source of %s failed unexpectedly", self.function_name)
                self._count_internal_error(error)
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, self._max_backoff)
                continue
            backoff = self._initial_backoff
            if stats.received == 0 and self._wait_time_seconds == 0:
                self._stopping.wait(0.05)  # no long poll to pace an empty queue

    def _fill_batch(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Like the mapping's `MaximumBatchingWindowInSeconds`: once a batch has begun, keep
        receiving until it is full or the window since its first message has passed."""
        if self._batching_window <= 0:
            return messages
        deadline = time.monotonic() + self._batching_window
        while len(messages) < self._batch_size and not self._stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            more = self._receive_up_to(self._batch_size - len(messages), _window_poll_seconds(left))
            if not more:
                # A short poll found nothing: wait a moment rather than spin until the window ends.
                self._stopping.wait(min(0.05, max(0.0, deadline - time.monotonic())))
            messages.extend(more)
        return messages

    def _receive(self, wait_time_seconds: int) -> list[dict[str, Any]]:
        return self._receive_up_to(self._batch_size, wait_time_seconds)

    def _as_function(self) -> contextlib.AbstractContextManager[None]:
        return iam.acting_as(self._principal or iam.principal_of_code(self._handler))

    def _receive_up_to(self, count: int, wait_time_seconds: int) -> list[dict[str, Any]]:
        with self._as_function():
            return self._receive_as_function(count, wait_time_seconds)

    def _receive_as_function(self, count: int, wait_time_seconds: int) -> list[dict[str, Any]]:
        try:
            if self._queue_arn is None:
                self._queue_arn = self._read_queue_arn()
            response = self._sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=count,
                WaitTimeSeconds=wait_time_seconds,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
        except Exception as error:
            if not _is_sqs_failure(error):
                raise
            self._count_error(error)
            logger.warning(
                "SQS receive from %s failed (%s); retrying with backoff",
                self.queue_url,
                _describe(error),
            )
            raise SqsUnavailableError(
                f"receive from {self.queue_url}: {_describe(error)}"
            ) from error
        self._count_sqs_success()
        messages: list[dict[str, Any]] = response.get("Messages", [])
        return messages

    def _read_queue_arn(self) -> str:
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["QueueArn", "VisibilityTimeout"]
        )["Attributes"]
        visibility = float(attributes.get("VisibilityTimeout", "30"))
        if self._function_timeout > visibility:
            # Lambda refuses to create such a mapping; here it would only mean duplicate work.
            logger.warning(
                "function timeout %.0f s of %s exceeds the visibility timeout %.0f s of %s; "
                "Lambda would refuse this event source mapping",
                self._function_timeout,
                self.function_name,
                visibility,
                self.queue_url,
            )
        return str(attributes["QueueArn"])

    def _invoke(self, messages: Sequence[dict[str, Any]]) -> BatchStats:
        records = [
            lambda_record(message, event_source_arn=self._queue_arn or "", aws_region=self._region)
            for message in messages
        ]
        ids = [record["messageId"] for record in records]
        context = self._context()
        started = time.monotonic()
        error: str | None
        try:
            with self._as_function():
                response = self._handler({"Records": records}, context)
        except Exception as exception:
            logger.exception(
                "%s raised; the whole batch of %d records will be retried",
                self.function_name,
                len(records),
            )
            failed, error = set(ids), f"handler raised {type(exception).__name__}: {exception}"
        else:
            elapsed = time.monotonic() - started
            if elapsed > self._function_timeout:
                failed = set(ids)
                error = f"Task timed out after {elapsed:.2f} seconds"
                logger.error("%s: %s", self.function_name, error)
            else:
                failed, error = failed_item_ids(
                    response, ids, strict_responses=self._strict_responses
                )
                if error:
                    logger.error(
                        "%s: %s; the whole batch will be retried", self.function_name, error
                    )
        succeeded = [message for message in messages if message["MessageId"] not in failed]
        deleted, delete_failures = self._delete(succeeded)
        return BatchStats(
            batches=1,
            received=len(messages),
            succeeded=len(succeeded),
            failed=len(messages) - len(succeeded),
            deleted=deleted,
            delete_failures=delete_failures,
            failed_batches=1 if error else 0,
            succeeded_ids=tuple(message["MessageId"] for message in succeeded),
            failed_ids=tuple(id_ for id_ in ids if id_ in failed),
            error=error,
        )

    def _delete(self, messages: Sequence[dict[str, Any]]) -> tuple[int, int]:
        """Delete processed messages; one that cannot be deleted is simply processed again."""
        if not messages:
            return 0, 0
        deleted = failures = 0
        for start in range(0, len(messages), MAX_BATCH_SIZE):
            chunk = messages[start : start + MAX_BATCH_SIZE]
            entries = [
                {"Id": str(n), "ReceiptHandle": message["ReceiptHandle"]}
                for n, message in enumerate(chunk)
            ]
            try:
                with self._as_function():
                    response = self._sqs.delete_message_batch(
                        QueueUrl=self.queue_url, Entries=entries
                    )
            except Exception as error:
                if not _is_sqs_failure(error):
                    raise
                self._count_error(error)
                logger.warning(
                    "could not delete %d processed messages from %s (%s); they will be "
                    "delivered again after their visibility timeout",
                    len(chunk),
                    self.queue_url,
                    _describe(error),
                )
                failures += len(chunk)
                continue
            self._count_sqs_success()
            for failure in response.get("Failed", []):
                logger.warning(
                    "SQS did not delete message %s from %s: %s %s",
                    chunk[int(failure["Id"])]["MessageId"],
                    self.queue_url,
                    failure.get("Code"),
                    failure.get("Message", ""),
                )
            failures += len(response.get("Failed", []))
            deleted += len(response.get("Successful", []))
        return deleted, failures

    def _context(self) -> LambdaContext:
        request_id = str(uuid.uuid4())
        return LambdaContext(
            function_name=self.function_name,
            memory_limit_in_mb=self._memory_limit_in_mb,
            invoked_function_arn=(
                f"arn:aws:lambda:{self._region}:{LOCAL_ACCOUNT_ID}:function:{self.function_name}"
            ),
            aws_request_id=request_id,
            deadline=time.monotonic() + self._function_timeout,
            log_group_name=f"/aws/lambda/{self.function_name}",
            log_stream_name=f"{time.strftime('%Y/%m/%d')}/[$LATEST]{request_id.replace('-', '')}",
        )

    def _queue_is_empty(self) -> bool:
        # One count per request, in the order a message moves between them: delayed and in-flight
        # messages become visible, and only this poller's receive makes a visible one in flight.
        # A message that moves between two reads is then counted by the later one. Asked in one
        # request, moto counts each attribute at its own moment (get_queue_attributes evaluates
        # the queue's attributes once per name), so a message whose visibility timeout ended
        # between the visible count and the in-flight count was in neither: the queue looked
        # empty while a failed record was about to come back.
        for attribute in (
            "ApproximateNumberOfMessagesDelayed",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessages",
        ):
            try:
                attributes = self._sqs.get_queue_attributes(
                    QueueUrl=self.queue_url, AttributeNames=[attribute]
                )["Attributes"]
            except Exception as error:
                if not _is_sqs_failure(error):
                    raise
                self._count_error(error)
                raise SqsUnavailableError(
                    f"read depth of {self.queue_url}: {_describe(error)}"
                ) from error
            if int(attributes.get(attribute, "0")) != 0:
                return False
        return True

    def _count(self, stats: BatchStats) -> None:
        with self._changed:
            counters = self._counters
            self._counters = replace(
                counters,
                batches=counters.batches + stats.batches,
                records_received=counters.records_received + stats.received,
                records_succeeded=counters.records_succeeded + stats.succeeded,
                records_failed=counters.records_failed + stats.failed,
                records_deleted=counters.records_deleted + stats.deleted,
                delete_failures=counters.delete_failures + stats.delete_failures,
                failed_batches=counters.failed_batches + stats.failed_batches,
                last_error=stats.error or counters.last_error,
            )
            self._changed.notify_all()

    def _count_error(self, error: BaseException) -> None:
        with self._changed:
            counters = self._counters
            self._counters = replace(
                counters,
                sqs_errors=counters.sqs_errors + 1,
                consecutive_sqs_errors=counters.consecutive_sqs_errors + 1,
                last_error=_describe(error),
            )
            self._changed.notify_all()
        if self._on_error is not None and isinstance(error, Exception):
            try:
                self._on_error(error)
            except Exception:
                logger.exception("the on_error hook of %s failed", self.function_name)

    def _count_internal_error(self, error: Exception) -> None:
        with self._changed:
            self._counters = replace(
                self._counters,
                internal_errors=self._counters.internal_errors + 1,
                last_error=_describe(error),
            )
            self._changed.notify_all()

    def _count_sqs_success(self) -> None:
        with self._changed:
            if self._counters.consecutive_sqs_errors:
                logger.info("SQS at %s answers again", self.queue_url)
                self._counters = replace(self._counters, consecutive_sqs_errors=0)
                self._changed.notify_all()


def lambda_record(
    message: Mapping[str, Any], *, event_source_arn: str, aws_region: str
) -> dict[str, Any]:
    """One ReceiveMessage message in the shape of a Lambda SQS event record."""
    attributes = message.get("Attributes", {})
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": {
            name: str(attributes[name]) for name in _LAMBDA_ATTRIBUTES if name in attributes
        },
        "messageAttributes": {
            name: _lambda_message_attribute(value)
            for name, value in message.get("MessageAttributes", {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    record.update(eventSource="aws:sqs", eventSourceARN=event_source_arn, awsRegion=aws_region)
    return record


def failed_item_ids(
    response: object, message_ids: Iterable[str], *, strict_responses: bool = False
) -> tuple[set[str], str | None]:
    """The records to leave for redelivery, and why the whole batch failed (or None).

    Lambda's rules: a null response, `{}`, or a null or empty `batchItemFailures` is full
    success; anything malformed, and an identifier that is empty or not in the batch, fails
    every record. `strict_responses` also fails a null response, which in tests usually means a
    handler that forgot to return the batch response.
    """
    ids = set(message_ids)
    if response is None:
        if strict_responses:
            return ids, "handler returned None instead of a batch response"
        return set(), None
    if not isinstance(response, Mapping):
        return ids, f"handler returned {type(response).__name__}, not a batch response object"
    failures = response.get("batchItemFailures")
    if failures is None:
        return set(), None
    if not isinstance(failures, list):
        return ids, "batchItemFailures is not a list"
    failed: set[str] = set()
    for failure in failures:
        if not isinstance(failure, Mapping) or "itemIdentifier" not in failure:
            return ids, f"malformed batch item failure {failure!r}"
        identifier = failure["itemIdentifier"]
        if not isinstance(identifier, str) or not identifier:
            return ids, f"empty or non-string itemIdentifier {identifier!r}"
        if identifier not in ids:
            return ids, f"itemIdentifier {identifier!r} is not a message of this batch"
        failed.add(identifier)
    return failed, None


def _lambda_message_attribute(value: Mapping[str, Any]) -> dict[str, Any]:
    converted: dict[str, Any] = {}
    if "StringValue" in value:
        converted["stringValue"] = value["StringValue"]
    if "BinaryValue" in value:
        converted["binaryValue"] = _base64(value["BinaryValue"])
    converted["stringListValues"] = list(value.get("StringListValues", []))
    converted["binaryListValues"] = [_base64(item) for item in value.get("BinaryListValues", [])]
    converted["dataType"] = value["DataType"]
    return converted


def _base64(value: bytes | str) -> str:
    raw = value.encode() if isinstance(value, str) else value
    return base64.b64encode(raw).decode("ascii")


def _is_sqs_failure(error: BaseException) -> bool:
    from botocore.exceptions import BotoCoreError, ClientError

    return isinstance(error, BotoCoreError | ClientError)


def _describe(error: BaseException) -> str:
    response = getattr(error, "response", None)
    if isinstance(response, dict) and "Error" in response:
        return f"{response['Error'].get('Code', 'Unknown')}: {response['Error'].get('Message', '')}"
    return f"{type(error).__name__}: {error}"


def _window_poll_seconds(window_left: float) -> int:
    """The long poll that fits in what is left of a batching window (SQS allows 0 to 20 s)."""
    return min(int(window_left), 20)


def _default_sqs_client(wait_time_seconds: int) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "sqs",
        config=Config(
            # The poller owns retrying (with backoff and counters); botocore's would hide outages.
            retries={"mode": "standard", "total_max_attempts": 1},
            connect_timeout=2,
            read_timeout=wait_time_seconds + 10,
        ),
    )
