"""Deliver: delivery tasks in, signed POSTs out, every outcome recorded (docs/delivery.md).

For one task (`Deliverer.deliver_task`), in order:

1. a message that is not a `jobhooks.delivery/1` task is parked as `invalid_task`;
2. a delivery already recorded as succeeded is acked without a POST (duplicate tasks happen),
   unless the task is a replay that has not succeeded yet under this very SQS message; so is
   one the attempt log has no record of whose first attempt, made by ingest, succeeded (its
   page says so), unless the task is a replay;
3. the subscription is read (cached for a few seconds in a warm function); a deleted one, or one
   of another tenant, ends the delivery as `failed`; a disabled one parks it;
4. the task's payload, byte for byte, is POSTed with Standard Webhooks headers signed by every
   active secret, a fresh `webhook-timestamp` and the task's fixed `webhook-id`;
5. 2xx: `succeeded`, acked. 410: the subscription is disabled, the delivery is `gone`, acked.
   Anything else: `pending`, the message is hidden for the schedule's delay
   (ChangeMessageVisibility) and reported as a batch item failure; after the last attempt the
   delivery is `parked` in the delivery DLQ and acked.

The attempt number is the message's ApproximateReceiveCount plus the attempts made before the
task was enqueued (`attempts_made`: 1 when ingest's first attempt failed), so an invocation that
crashed or timed out still used up one attempt. Every outcome is one conditional UpdateItem on
the delivery (`AttemptLog.record_attempt`), written after the POST: a function that dies between
the two may POST again, with the same `webhook-id`, which is what receivers deduplicate on.

The records of a batch run on a bounded thread pool, so one slow receiver holds back nothing
but its own record.
"""

from __future__ import annotations

import contextlib
import logging
import random
import secrets as token_source
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Any, Final

from botocore.exceptions import ClientError

from jobhooks.delivery.model import (
    DeliveryAttempt,
    DeliveryMessage,
    DeliveryOutcome,
    DeliveryRecord,
    DeliveryResult,
    DeliveryStatus,
    FailureClass,
    SentWebhook,
    failure_class_of,
    result_label,
)
from jobhooks.delivery.parking import ParkingSummary, ParkReason, park_delivery
from jobhooks.delivery.ports import (
    DeliveryLog,
    DeliveryMetrics,
    FirstAttemptRecords,
    SubscriptionDirectory,
    WebhookPoster,
)
from jobhooks.delivery.retry_schedule import DEFAULT_SCHEDULE, RetrySchedule, UniformRandom
from jobhooks.delivery_task import DeliveryTask, InvalidDeliveryTaskError
from jobhooks.storage.times import utc_now
from jobhooks.subscriptions.exceptions import SubscriptionError, SubscriptionNotFoundError
from jobhooks.subscriptions.model import Subscription
from jobhooks.webhook_signature import webhook_headers

_log = logging.getLogger(__name__)

# What a record needs after its POST: two DynamoDB writes at most, or a write and an SQS call.
_RECORDING_MARGIN_SECONDS: Final = 5.0
TEST_WEBHOOK_ID_PREFIX: Final = "msg_test_"


# -- the use case --------------------------------------------------------------------------------


class Deliverer:
    """Delivers tasks from the delivery queue. One instance per process; thread-safe."""

    def __init__(
        self,
        *,
        attempt_log: DeliveryLog,
        subscriptions: SubscriptionDirectory,
        client: WebhookPoster,
        sqs: Any,
        delivery_queue_url: str,
        delivery_dlq_url: str,
        schedule: RetrySchedule = DEFAULT_SCHEDULE,
        concurrency: int = 10,
        post_timeout_seconds: float = 15.0,
        subscription_cache_seconds: float = 0.0,
        metrics: DeliveryMetrics | None = None,
        first_attempts: FirstAttemptRecords | None = None,
        clock: Callable[[], datetime] = utc_now,
        random_source: UniformRandom = random.random,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`first_attempts`: the pages of ingest's first-attempt successes, read by the
        duplicate check (`deliver_task`); the deliver function's wiring always passes them.
        Without them only the attempt log is read (benches and tests of the queue path)."""
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._log = attempt_log
        self._subscriptions = subscriptions
        self._client = client
        self._sqs = sqs
        self._queue_url = delivery_queue_url
        self._dlq_url = delivery_dlq_url
        self._schedule = schedule
        self._post_timeout = post_timeout_seconds
        self._metrics = metrics
        self._first_attempts = first_attempts
        self._clock = clock
        self._random = random_source
        self._monotonic = monotonic
        self._cache = _SubscriptionCache(subscription_cache_seconds, monotonic)
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="deliver")

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    # -- a batch -----------------------------------------------------------------------------

    def deliver_batch(
        self, event: Mapping[str, Any], *, remaining_ms: Callable[[], int] | None = None
    ) -> dict[str, list[dict[str, str]]]:
        """Deliver an SQS event's records concurrently; the partial batch response.

        Never raises: a record whose delivery raised is reported as failed, and SQS hands it
        back after the queue's visibility timeout. `remaining_ms` is the Lambda context's
        `get_remaining_time_in_millis`: a record that could not finish in time is not started.
        """
        records = list(event.get("Records") or [])
        deadline = self._monotonic() + remaining_ms() / 1000 if remaining_ms is not None else None
        futures: list[tuple[str, Future[DeliveryOutcome]]] = []
        for record in records:
            message = DeliveryMessage.from_record(record)
            futures.append(
                (message.message_id, self._pool.submit(self._deliver_in_time, message, deadline))
            )
        failures: list[dict[str, str]] = []
        outcomes: list[DeliveryOutcome] = []
        for message_id, future in futures:
            try:
                outcome = future.result()
            except Exception:
                _log.exception(
                    "delivery raised; SQS will hand the record back after its visibility timeout",
                    extra={"message_id": message_id},
                )
                failures.append({"itemIdentifier": message_id})
                continue
            outcomes.append(outcome)
            if not outcome.acked:
                failures.append({"itemIdentifier": message_id})
        if self._metrics is not None and outcomes:
            try:
                self._metrics.record_outcomes(outcomes)
            except Exception:  # metrics must never turn delivered records into failures
                _log.exception("recording delivery metrics failed")
        return {"batchItemFailures": failures}

    def _deliver_in_time(self, message: DeliveryMessage, deadline: float | None) -> DeliveryOutcome:
        needed = self._post_timeout + _RECORDING_MARGIN_SECONDS
        if deadline is not None and self._monotonic() + needed > deadline:
            _log.warning(
                "not enough time left in the invocation for another attempt; the task comes back "
                "after the queue's visibility timeout",
                extra={"message_id": message.message_id},
            )
            return DeliveryOutcome(DeliveryResult.NOT_STARTED)
        return self.deliver_task(message)

    # -- one task ----------------------------------------------------------------------------

    def deliver_task(self, message: DeliveryMessage) -> DeliveryOutcome:
        """Deliver one task now; what became of it. Raises only for AWS errors (DynamoDB, SQS).

        The duplicate check reads the delivery's record (one strongly consistent GetItem). A
        task the attempt log has no record of, and that is not a replay, also asks whether
        ingest's first attempt succeeded: the event's claim, then its batch's page (two more
        reads). Only such tasks pay them: a management re-fan-out, and the tasks ingest
        enqueued without attempting them (circuit open, deadline passed, subscription
        disabled). A failed first attempt's task has its record, written by ingest.
        """
        try:
            task = DeliveryTask.from_json(message.body)
        except InvalidDeliveryTaskError as error:
            park_delivery(
                self._sqs, self._dlq_url, message.body, ParkingSummary(ParkReason.INVALID_TASK, 0)
            )
            _log.error(
                "parked a message that is not a delivery task",
                extra={"message_id": message.message_id, "problem": str(error)},
            )
            return DeliveryOutcome(DeliveryResult.PARKED)

        existing = self._log.find(task.delivery_id)
        if existing is not None and _already_delivered(existing, task, message):
            _log.info("delivery already succeeded; not sending it again", extra=_fields(task))
            return DeliveryOutcome(DeliveryResult.DUPLICATE, task.delivery_id)
        if existing is None and not task.replay and self._first_attempt_succeeded(task):
            # No record: its success is an entry of a page (ingest's first attempt), and a
            # re-fan-out of the event must not POST it again (docs/delivery.md).
            _log.info("first attempt already succeeded; not sending it again", extra=_fields(task))
            return DeliveryOutcome(DeliveryResult.DUPLICATE, task.delivery_id)

        subscription = self._subscription(task.subscription_id)
        if subscription is None or subscription.tenant_id != task.tenant_id:
            # Never POST across tenants; a deleted subscription has nowhere to deliver to.
            reason = "subscription_not_found" if subscription is None else "tenant_mismatch"
            (_log.warning if subscription is None else _log.error)(
                "delivery dropped: %s", reason, extra=_fields(task)
            )
            if not self._log.record_attempt(task, DeliveryStatus.FAILED, reason=reason):
                return DeliveryOutcome(DeliveryResult.DUPLICATE, task.delivery_id)
            return DeliveryOutcome(DeliveryResult.DROPPED, task.delivery_id)
        if not subscription.is_active:
            return self._park(task, message, None, ParkReason.SUBSCRIPTION_DISABLED, existing)

        # Attempts ingest made before enqueueing (its first attempt) count: the first receive
        # of such a task is attempt 2, and the schedule's end comes as many receives sooner.
        attempt, retry_after = self._attempt(
            task, subscription, message.receive_count + task.attempts_made
        )
        logged = len(existing.attempts) if existing is not None else 0
        failure = failure_class_of(attempt)
        # Successes at debug: one log line per delivery would cost about as much as its
        # DynamoDB write (docs/delivery.md, "Cost"); the attempt log and metrics have them.
        _log.log(
            logging.DEBUG if failure is None else logging.INFO,
            "delivery attempt %s",
            result_label(attempt),
            extra={
                **_fields(task),
                "attempt": attempt.n,
                "status_code": attempt.status_code,
                "error": attempt.error,
                "latency_ms": attempt.latency_ms,
            },
        )

        if failure is None:
            if not self._log.record_attempt(
                task,
                DeliveryStatus.SUCCEEDED,
                attempt,
                message_id=message.message_id,
                logged_attempts=logged,
            ):
                self._log.append_attempt(task, attempt)  # a duplicate task succeeded first
            return DeliveryOutcome(DeliveryResult.SUCCEEDED, task.delivery_id, attempt)

        if failure is FailureClass.HTTP_410:
            # Deleted meanwhile: nothing left to disable, the delivery is gone all the same.
            with contextlib.suppress(SubscriptionNotFoundError):
                self._subscriptions.disable(
                    task.subscription_id,
                    f"the endpoint answered 410 Gone to delivery {task.delivery_id} "
                    f"at {attempt.at.isoformat()}",
                )
            self._cache.forget(task.subscription_id)
            _log.warning("receiver answered 410 Gone; subscription disabled", extra=_fields(task))
            self._log.record_attempt(
                task, DeliveryStatus.GONE, attempt, reason="gone", logged_attempts=logged
            )
            return DeliveryOutcome(DeliveryResult.GONE, task.delivery_id, attempt, failure)

        if self._schedule.is_last(attempt.n):
            return self._park(task, message, attempt, ParkReason.ATTEMPTS_EXHAUSTED, existing)

        delay = self._schedule.delay_after(attempt.n, retry_after=retry_after, random=self._random)
        if not self._log.record_attempt(
            task, DeliveryStatus.PENDING, attempt, logged_attempts=logged
        ):
            return DeliveryOutcome(DeliveryResult.DUPLICATE, task.delivery_id, attempt, failure)
        self._hide(message, delay, task)
        return DeliveryOutcome(
            DeliveryResult.RETRY_SCHEDULED, task.delivery_id, attempt, failure, delay
        )

    def _first_attempt_succeeded(self, task: DeliveryTask) -> bool:
        if self._first_attempts is None:
            return False
        return self._first_attempts.find(task.event_id, task.subscription_id) is not None

    def _attempt(
        self, task: DeliveryTask, subscription: Subscription, n: int
    ) -> tuple[DeliveryAttempt, int | None]:
        now = self._clock()
        try:
            signing_secrets = self._subscriptions.signing_secrets(subscription, now)
        except SubscriptionError as error:
            _log.error(
                "cannot read the subscription's signing secrets: %s",
                error.code,
                extra=_fields(task),
            )
            signing_secrets = []
        if not signing_secrets:
            return DeliveryAttempt(n=n, at=now, error=FailureClass.SIGNING_ERROR.value), None
        return post_signed(
            self._client, subscription.url, task.webhook_id, task.payload, signing_secrets, n, now
        )

    def _park(
        self,
        task: DeliveryTask,
        message: DeliveryMessage,
        attempt: DeliveryAttempt | None,
        reason: ParkReason,
        existing: DeliveryRecord | None,
    ) -> DeliveryOutcome:
        # Recorded first: the condition refuses to park a delivery a duplicate already made.
        logged = len(existing.attempts) if existing is not None else 0
        if not self._log.record_attempt(
            task, DeliveryStatus.PARKED, attempt, reason=reason.value, logged_attempts=logged
        ):
            return DeliveryOutcome(DeliveryResult.DUPLICATE, task.delivery_id, attempt)
        last = attempt or (existing.last_attempt if existing is not None else None)
        attempts = attempt.n if attempt is not None else existing.attempt_count if existing else 0
        park_delivery(
            self._sqs,
            self._dlq_url,
            message.body,
            ParkingSummary(reason, attempts, result_label(last) if last else None),
        )
        _log.warning("delivery parked: %s", reason.value, extra=_fields(task))
        failure = failure_class_of(attempt) if attempt is not None else None
        return DeliveryOutcome(DeliveryResult.PARKED, task.delivery_id, attempt, failure)

    def _hide(self, message: DeliveryMessage, delay: int, task: DeliveryTask) -> None:
        try:
            self._sqs.change_message_visibility(
                QueueUrl=self._queue_url,
                ReceiptHandle=message.receipt_handle,
                VisibilityTimeout=delay,
            )
        except ClientError as error:
            # The message still comes back, after the visibility already in effect (the queue's
            # 6 minutes): sooner than planned, never lost.
            _log.warning(
                "could not delay the next attempt: %s",
                error.response.get("Error", {}).get("Code", "unknown"),
                extra=_fields(task),
            )

    def _subscription(self, subscription_id: str) -> Subscription | None:
        cached = self._cache.get(subscription_id)
        if cached is not None:
            return cached
        try:
            subscription = self._subscriptions.get(subscription_id)
        except SubscriptionNotFoundError:
            return None
        self._cache.put(subscription)
        return subscription


# -- sending one webhook -------------------------------------------------------------------------


def post_signed(
    client: WebhookPoster,
    url: str,
    webhook_id: str,
    payload: str,
    signing_secrets: Sequence[str],
    n: int,
    now: datetime,
    *,
    timeout: float | None = None,
) -> tuple[DeliveryAttempt, int | None]:
    """POST `payload` signed with every secret; the attempt and the receiver's Retry-After.

    `timeout` shortens the client's total timeout for this POST (ingest's first attempts).
    """
    body = payload.encode("utf-8")
    headers = webhook_headers(webhook_id, int(now.timestamp()), body, signing_secrets)
    result = client.post(url, body, headers, timeout=timeout)
    attempt = DeliveryAttempt(
        n=n,
        at=now,
        status_code=result.status_code,
        error=result.error.value if result.error is not None else None,
        latency_ms=result.latency_ms,
        response=result.response_excerpt,
    )
    return attempt, result.retry_after_seconds


def send_webhook_now(
    subscription_id: str,
    payload: str,
    *,
    subscriptions: SubscriptionDirectory,
    client: WebhookPoster,
    tenant_id: str | None = None,
    webhook_id: str | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> SentWebhook:
    """POST one payload to one subscription now ("test send"): no queue, no retry, no log.

    The subscription's status is not checked (a tenant may test an endpoint before enabling
    it) and a 410 answer does not disable it. Raises `SubscriptionNotFoundError` (also for
    another tenant's subscription when `tenant_id` is given) and `SecretDecryptionError` /
    `KeyServiceError` when the secrets cannot be read; network outcomes are in the attempt.
    """
    subscription = subscriptions.get(subscription_id, tenant_id=tenant_id)
    webhook_id = webhook_id or TEST_WEBHOOK_ID_PREFIX + token_source.token_hex(16)
    now = clock()
    signing_secrets = subscriptions.signing_secrets(subscription, now)
    if not signing_secrets:
        return SentWebhook(
            webhook_id, DeliveryAttempt(n=1, at=now, error=FailureClass.SIGNING_ERROR.value)
        )
    attempt, _ = post_signed(client, subscription.url, webhook_id, payload, signing_secrets, 1, now)
    return SentWebhook(webhook_id, attempt)


# -- internals -----------------------------------------------------------------------------------


def _already_delivered(
    existing: DeliveryRecord, task: DeliveryTask, message: DeliveryMessage
) -> bool:
    if existing.status is not DeliveryStatus.SUCCEEDED:
        return False
    # A replay is POSTed once more; the same replay message handed back by SQS is not.
    return not task.replay or existing.succeeded_message_id == message.message_id


def _fields(task: DeliveryTask) -> dict[str, str]:
    # Ids only: the URL may carry a token, and the payload is the customer's data.
    return {
        "delivery_id": task.delivery_id,
        "event_id": task.event_id,
        "subscription_id": task.subscription_id,
        "tenant_id": task.tenant_id,
    }


class _SubscriptionCache:
    def __init__(self, ttl_seconds: float, monotonic: Callable[[], float]) -> None:
        self._ttl = ttl_seconds
        self._monotonic = monotonic
        self._entries: dict[str, tuple[float, Subscription]] = {}
        self._lock = threading.Lock()

    def get(self, subscription_id: str) -> Subscription | None:
        if self._ttl <= 0:
            return None
        with self._lock:
            entry = self._entries.get(subscription_id)
            if entry is None or self._monotonic() >= entry[0]:
                return None
            return entry[1]

    def put(self, subscription: Subscription) -> None:
        if self._ttl <= 0:
            return
        with self._lock:
            if len(self._entries) >= 4096:
                self._entries.clear()
            self._entries[subscription.subscription_id] = (
                self._monotonic() + self._ttl,
                subscription,
            )

    def forget(self, subscription_id: str) -> None:
        with self._lock:
            self._entries.pop(subscription_id, None)
