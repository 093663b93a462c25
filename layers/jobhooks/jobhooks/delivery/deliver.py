"""Deliver: delivery tasks in, signed POSTs out, every outcome recorded (docs/delivery.md).

For one task (`Deliverer.deliver_task`), in order:

1. a message that is not a `jobhooks.delivery/1` task is parked as `invalid_task`;
2. a delivery already recorded as succeeded is acked without a POST (duplicate tasks happen; a
   batch reads its records together, `_BatchRecords`),
   unless the task is a replay that has not succeeded yet under this very SQS message; so is
   one the attempt log has no record of whose first attempt, made by ingest, succeeded (its
   page says so), unless the task is a replay;
3. the subscription is read (cached for a few seconds in a warm function, and kept there
   through a failure: `subscription_cache`); a deleted one, or one of another tenant, ends the
   delivery as `failed`; a disabled one, read afresh, records it `skipped` (`skipped`), acked;
4. the attempt (`attempt`): the task's payload, byte for byte, POSTed with Standard Webhooks
   headers signed by every active secret, a fresh `webhook-timestamp` and the task's fixed
   `webhook-id`;
5. the settle step (`settle`, shared with ingest's first attempts): 2xx: `succeeded`, acked.
   410: the subscription is disabled, the delivery is `gone`, acked. Anything else: `pending`,
   the message is hidden for the schedule's delay and reported as a batch item failure; after
   the last attempt the delivery is `parked` in the delivery DLQ and acked.

A batch hides its retried messages together once every record is done: one
ChangeMessageVisibilityBatch for up to ten, each for its delay less the seconds since its
attempt settled, so it comes back when the schedule says. A failing endpoint's retries cost
one SQS call a batch, not one each: fewer calls billed, and less for the tenants beside it to
wait behind on a shared local emulator (docs/performance.md, "Isolation between tenants").

The attempt number is the message's ApproximateReceiveCount plus the attempts made before the
task was enqueued (`attempts_made`: 1 when ingest's first attempt failed), so an invocation that
crashed or timed out still used up one attempt. Every outcome is one conditional UpdateItem on
the delivery (`AttemptLog.record_attempt`), written after the POST: a function that dies between
the two may POST again, with the same `webhook-id`, which is what receivers deduplicate on.

The records of a batch run on a bounded thread pool, so one slow receiver holds back nothing
but its own record.
"""

from __future__ import annotations

import functools
import logging
import random
import secrets as token_source
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from jobhooks.delivery.attempt import attempt_delivery, post_signed
from jobhooks.delivery.batch import DeliveryMessage
from jobhooks.delivery.fair_pool import FairPool
from jobhooks.delivery.model import (
    DeliveryAttempt,
    DeliveryOutcome,
    DeliveryRecord,
    DeliveryResult,
    DeliveryStatus,
    FailureClass,
    failure_class_of,
    result_label,
)
from jobhooks.delivery.retry_schedule import DEFAULT_SCHEDULE, RetrySchedule, UniformRandom
from jobhooks.delivery.settle import Settlement, SettlementObserver, task_fields
from jobhooks.delivery.subscription_cache import CacheKeepingSubscriptions, SubscriptionCache
from jobhooks.delivery_task import DeliveryTask, InvalidDeliveryTaskError
from jobhooks.storage.times import utc_now
from jobhooks.subscriptions.exceptions import SubscriptionNotFoundError
from jobhooks.subscriptions.model import Subscription

if TYPE_CHECKING:
    from jobhooks.delivery.ports import (
        DeadLetters,
        DeliveryLog,
        DeliveryMetrics,
        FirstAttemptRecords,
        QueueMessages,
        SubscriptionDirectory,
        WebhookPoster,
    )
    from jobhooks.delivery.sent_webhook import SentWebhook

_log = logging.getLogger(__name__)

# What a record needs after its POST: two DynamoDB writes at most, or a write and an SQS call.
_RECORDING_MARGIN_SECONDS: Final = 5.0
# How old the batch's read of its records may be for a task's duplicate check (`_BatchRecords`).
_BATCH_READ_FRESH_SECONDS: Final = 1.0
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
        queue: QueueMessages,
        dead_letters: DeadLetters,
        schedule: RetrySchedule = DEFAULT_SCHEDULE,
        concurrency: int = 10,
        max_per_endpoint: int | None = None,
        max_per_tenant: int | None = None,
        post_timeout_seconds: float = 15.0,
        subscription_cache_seconds: float = 0.0,
        subscription_cache: SubscriptionCache | None = None,
        metrics: DeliveryMetrics | None = None,
        first_attempts: FirstAttemptRecords | None = None,
        observers: Sequence[SettlementObserver] = (),
        clock: Callable[[], datetime] = utc_now,
        random_source: UniformRandom = random.random,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`first_attempts`: the pages of ingest's first-attempt successes, read by the
        duplicate check (`deliver_task`); the deliver function's wiring always passes them.
        Without them only the attempt log is read (benches and tests of the queue path).
        `observers` hear of every settled attempt (`settle.SettlementObserver`).
        `subscription_cache`: shared with the observers' writes (`subscription_cache`, as the
        wiring does); None: one of `subscription_cache_seconds` of the deliverer's own. An
        observer that writes the subscription item without going through that module's
        wrappers leaves its change to be seen when the entry expires, as a change made by
        another process is.
        `max_per_endpoint` / `max_per_tenant`: at most this many POSTs to one subscription (of
        one tenant) at once, so one tenant's slow endpoints never take every worker; None: no
        cap below `concurrency`."""
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._log = attempt_log
        self._cache = subscription_cache or SubscriptionCache(
            subscription_cache_seconds, monotonic=monotonic
        )
        # Reads through it are kept in the cache; a 410's disable forgets the entry at once.
        subscriptions = CacheKeepingSubscriptions(subscriptions, self._cache)
        self._subscriptions = subscriptions
        self._client = client
        self._queue = queue
        self._dead_letters = dead_letters
        self.settlement = Settlement(
            attempt_log=attempt_log,
            subscriptions=subscriptions,
            dead_letters=dead_letters,
            schedule=schedule,
            random_source=random_source,
            observers=observers,
        )
        self._post_timeout = post_timeout_seconds
        self._metrics = metrics
        self._first_attempts = first_attempts
        self._clock = clock
        self._monotonic = monotonic
        self._pool = FairPool(concurrency, thread_name_prefix="deliver")
        self._max_per_endpoint = max_per_endpoint
        self._max_per_tenant = max_per_tenant

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
        messages = [DeliveryMessage.from_record(record) for record in event.get("Records") or []]
        deadline = self._monotonic() + remaining_ms() / 1000 if remaining_ms is not None else None
        tasks = [_task_of(message) for message in messages]
        known = self._read_records(tasks)
        futures: list[tuple[str, Future[DeliveryOutcome]]] = []
        hides = _Hides(self._monotonic)
        for message, task in zip(messages, tasks, strict=True):
            # A message that is not a task is parked without a POST: it counts against no one.
            tenant, endpoint = (task.tenant_id, task.subscription_id) if task else ("", "")
            future = self._pool.submit(
                tenant,
                endpoint,
                functools.partial(self._deliver_in_time, message, deadline, hides, task, known),
                per_tenant=self._max_per_tenant,
                per_endpoint=self._max_per_endpoint,
            )
            futures.append((message.message_id, future))
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
        if hides.due:
            try:
                self._queue.hide_many(hides.now_due())
            except Exception:  # best effort, as one hide: they come back after the queue's timeout
                _log.exception("hiding the batch's retried messages failed")
        if self._metrics is not None and outcomes:
            try:
                self._metrics.record_outcomes(outcomes)
            except Exception:  # metrics must never turn delivered records into failures
                _log.exception("recording delivery metrics failed")
        return {"batchItemFailures": failures}

    def _read_records(self, tasks: Sequence[DeliveryTask | None]) -> _BatchRecords | None:
        """What the batch's duplicate checks read, read together: the delivery records (one
        BatchGetItem), then for the tasks with none that are not replays, ingest's first-attempt
        successes (two more: their claims, their pages). None when there is one task (a
        GetItem costs the same) or the records' read failed: each task then reads its own, as
        does each task without a record when the successes' read failed."""
        valid = [task for task in tasks if task is not None]
        if len(valid) < 2:
            return None
        try:
            records = self._log.find_many(task.delivery_id for task in valid)
            read_at = self._monotonic()  # the older of the two reads says how fresh both are
        except Exception:  # the tasks' own reads decide: they raise if DynamoDB is really down
            _log.warning("reading the batch's delivery records failed", exc_info=True)
            return None
        unrecorded = [
            (task.event_id, task.subscription_id)
            for task in valid
            if task.delivery_id not in records and not task.replay
        ]
        successes: dict[tuple[str, str], DeliveryRecord] | None = {}
        if unrecorded and self._first_attempts is not None:
            try:
                successes = self._first_attempts.find_many(unrecorded)
            except Exception:
                _log.warning("reading the batch's first-attempt successes failed", exc_info=True)
                successes = None
        return _BatchRecords(records, successes, read_at)

    def _deliver_in_time(
        self,
        message: DeliveryMessage,
        deadline: float | None,
        hides: _Hides | None = None,
        task: DeliveryTask | None = None,
        known: _BatchRecords | None = None,
    ) -> DeliveryOutcome:
        needed = self._post_timeout + _RECORDING_MARGIN_SECONDS
        if deadline is not None and self._monotonic() + needed > deadline:
            _log.warning(
                "not enough time left in the invocation for another attempt; the task comes back "
                "after the queue's visibility timeout",
                extra={"message_id": message.message_id},
            )
            return DeliveryOutcome(DeliveryResult.NOT_STARTED)
        return self.deliver_task(message, hides=hides, task=task, known=known)

    # -- one task ----------------------------------------------------------------------------

    def deliver_task(
        self,
        message: DeliveryMessage,
        *,
        hides: _Hides | None = None,
        task: DeliveryTask | None = None,
        known: _BatchRecords | None = None,
    ) -> DeliveryOutcome:
        """Deliver one task now; what became of it. Raises only for AWS errors (DynamoDB, SQS).

        `hides`: where a retry's message is noted to be hidden with the batch's others (see the
        module docstring); None hides it at once. `task`: the message's task, when the batch
        already read it. `known`: the batch's records, read together (`_BatchRecords`).

        The duplicate check reads the delivery's record (one strongly consistent GetItem, or
        its share of the batch's BatchGetItem when that read is still fresh). A
        task the attempt log has no record of, and that is not a replay, also asks whether
        ingest's first attempt succeeded: the event's claim, then its batch's page (two more
        reads). Only such tasks pay them: a management re-fan-out, and the tasks ingest
        enqueued without attempting them (circuit open, deadline passed, subscription
        disabled). A failed first attempt's task has its record, written by ingest.
        """
        try:
            task = task if task is not None else DeliveryTask.from_json(message.body)
        except InvalidDeliveryTaskError as error:
            # Here, not at import: only a message that is not a task (or a delivery's last
            # failed attempt, `settle`) is parked.
            from jobhooks.delivery.parking import ParkingSummary, ParkReason

            self._dead_letters.park(message.body, ParkingSummary(ParkReason.INVALID_TASK, 0))
            _log.error(
                "parked a message that is not a delivery task",
                extra={"message_id": message.message_id, "problem": str(error)},
            )
            return DeliveryOutcome(DeliveryResult.PARKED)

        if known is not None and known.fresh(self._monotonic()):
            existing = known.records.get(task.delivery_id)
        else:
            existing = self._log.find(task.delivery_id)
        if existing is not None and _already_delivered(existing, task, message):
            _log.info("delivery already succeeded; not sending it again", extra=task_fields(task))
            return DeliveryOutcome(DeliveryResult.DUPLICATE, task.delivery_id)
        if existing is None and not task.replay and self._first_attempt_succeeded(task, known):
            # No record: its success is an entry of a page (ingest's first attempt), and a
            # re-fan-out of the event must not POST it again (docs/delivery.md).
            _log.info(
                "first attempt already succeeded; not sending it again", extra=task_fields(task)
            )
            return DeliveryOutcome(DeliveryResult.DUPLICATE, task.delivery_id)

        subscription = self._subscription(task.subscription_id)
        if subscription is None or subscription.tenant_id != task.tenant_id:
            # Never POST across tenants; a deleted subscription has nowhere to deliver to.
            reason = "subscription_not_found" if subscription is None else "tenant_mismatch"
            (_log.warning if subscription is None else _log.error)(
                "delivery dropped: %s", reason, extra=task_fields(task)
            )
            if not self._log.record_attempt(task, DeliveryStatus.FAILED, reason=reason):
                return DeliveryOutcome(DeliveryResult.DUPLICATE, task.delivery_id)
            return DeliveryOutcome(DeliveryResult.DROPPED, task.delivery_id)
        if not subscription.is_active:
            # The cache may hold it from before it was enabled again a moment ago (and its
            # deliveries recovered): only a fresh read may turn a task into `skipped`.
            self._cache.forget(task.subscription_id)
            fresh = self._subscription(task.subscription_id)
            if fresh is None or fresh.tenant_id != task.tenant_id or not fresh.is_active:
                # Kept as `skipped`, for `recover` once it is active again.
                return self.settlement.skip(task, fresh)
            subscription = fresh
        source = _QueuedAttempt(self._log, self._queue, message, existing, hides)

        # Attempts ingest made before enqueueing (its first attempt) count: the first receive
        # of such a task is attempt 2, and the schedule's end comes as many receives sooner.
        attempted_at = self._cache.monotonic()
        attempt, retry_after = attempt_delivery(
            task,
            subscription,
            message.receive_count + task.attempts_made,
            self._clock(),
            subscriptions=self._subscriptions,
            client=self._client,
        )
        failure = failure_class_of(attempt)
        # Successes at debug: one log line per delivery would cost about as much as its
        # DynamoDB write (docs/delivery.md, "Cost"); the attempt log and metrics have them.
        _log.log(
            logging.DEBUG if failure is None else logging.INFO,
            "delivery attempt %s",
            result_label(attempt),
            extra={
                **task_fields(task),
                "attempt": attempt.n,
                "status_code": attempt.status_code,
                "error": attempt.error,
                "latency_ms": attempt.latency_ms,
            },
        )
        outcome = self.settlement.settle(
            task, attempt, source, retry_after=retry_after, subscription=subscription
        )
        healthy_success = (
            outcome.result is DeliveryResult.SUCCEEDED and subscription.health.is_clean
        )
        if not healthy_success and not self._cache.kept_since(task.subscription_id, attempted_at):
            # Its health (`jobhooks.endpoint_health`) or status may have changed, and no write
            # since the attempt put the item as it is now: the next delivery reads it afresh.
            # A failure's write does put it (`subscription_cache`), so a failing endpoint's
            # retries read it once per cache period, not once each.
            self._cache.forget(task.subscription_id)
        return outcome

    def _first_attempt_succeeded(self, task: DeliveryTask, known: _BatchRecords | None) -> bool:
        if self._first_attempts is None:
            return False
        key = (task.event_id, task.subscription_id)
        if known is not None and known.successes is not None and known.fresh(self._monotonic()):
            return key in known.successes
        return self._first_attempts.find(*key) is not None

    def _subscription(self, subscription_id: str) -> Subscription | None:
        cached = self._cache.get(subscription_id)
        if cached is not None:
            return cached
        try:
            return self._subscriptions.get(subscription_id)  # kept in the cache
        except SubscriptionNotFoundError:
            return None


# -- sending one webhook -------------------------------------------------------------------------


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
    # A test send's answer: the deliver function, which sends none, does not define it.
    from jobhooks.delivery.sent_webhook import SentWebhook

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


class _QueuedAttempt:
    """An attempt of a delivery-queue message (`settle.AttemptSource`): a success is its
    record's, the next try the same message hidden for the delay.

    A plain class: nothing compares or prints one, so a dataclass's generated methods would be
    compiled at import for nothing."""

    __slots__ = ("existing", "hides", "log", "message", "queue")

    def __init__(
        self,
        log: DeliveryLog,
        queue: QueueMessages,
        message: DeliveryMessage,
        existing: DeliveryRecord | None,
        hides: _Hides | None = None,
    ) -> None:
        self.log = log
        self.queue = queue
        self.message = message
        self.existing = existing
        self.hides = hides

    @property
    def logged_attempts(self) -> int:
        return len(self.existing.attempts) if self.existing is not None else 0

    def record_success(self, task: DeliveryTask, attempt: DeliveryAttempt) -> None:
        if not self.log.record_attempt(
            task,
            DeliveryStatus.SUCCEEDED,
            attempt,
            message_id=self.message.message_id,
            logged_attempts=self.logged_attempts,
        ):
            self.log.append_attempt(task, attempt)  # a duplicate task succeeded first

    def retry_later(self, task: DeliveryTask, delay_seconds: int) -> int:
        if self.hides is not None:
            self.hides.add(self.message.receipt_handle, delay_seconds)
        else:
            self.queue.hide(self.message.receipt_handle, delay_seconds)
        return delay_seconds

    def parked_body(self, task: DeliveryTask) -> str:
        return self.message.body  # the task as it arrived: a redrive delivers it again


class _Hides:
    """The retried messages of one batch, hidden together once the batch is done."""

    def __init__(self, monotonic: Callable[[], float]) -> None:
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._due: list[tuple[str, int, float]] = []  # receipt handle, delay, when noted

    @property
    def due(self) -> bool:
        with self._lock:
            return bool(self._due)

    def add(self, receipt_handle: str, delay_seconds: int) -> None:
        with self._lock:
            self._due.append((receipt_handle, delay_seconds, self._monotonic()))

    def now_due(self) -> list[tuple[str, int]]:
        """Each message with what is left of its delay: the seconds since its attempt settled
        are taken off (whole seconds, so it never comes back before the schedule says)."""
        now = self._monotonic()
        with self._lock:
            return [
                (receipt_handle, max(0, delay - int(now - noted)))
                for receipt_handle, delay, noted in self._due
            ]


class _BatchRecords:
    """A batch's delivery records, and the first-attempt successes of its tasks without one,
    read together when the batch began (`Deliverer._read_records`).

    The duplicate check must see a success another copy of the task recorded before this one
    POSTs. A task that starts within `_BATCH_READ_FRESH_SECONDS` of the read takes its record
    from it, as it would from a read of its own made as late; one held longer (behind the
    per-endpoint and per-tenant caps, or a slow POST of the batch) reads its record again."""

    __slots__ = ("read_at", "records", "successes")

    def __init__(
        self,
        records: dict[str, DeliveryRecord],
        successes: dict[tuple[str, str], DeliveryRecord] | None,
        read_at: float,
    ) -> None:
        self.records = records
        # Ingest's first-attempt successes of the tasks without a record, by (event,
        # subscription); None when that read failed.
        self.successes = successes
        self.read_at = read_at

    def fresh(self, now: float) -> bool:
        return now - self.read_at <= _BATCH_READ_FRESH_SECONDS


def _task_of(message: DeliveryMessage) -> DeliveryTask | None:
    """The message's task; None for a message that is not one (`deliver_task` parks it)."""
    try:
        return DeliveryTask.from_json(message.body)
    except InvalidDeliveryTaskError:
        return None


def _already_delivered(
    existing: DeliveryRecord, task: DeliveryTask, message: DeliveryMessage
) -> bool:
    if existing.status is not DeliveryStatus.SUCCEEDED:
        return False
    # A replay is POSTed once more; the same replay message handed back by SQS is not.
    return not task.replay or existing.succeeded_message_id == message.message_id
