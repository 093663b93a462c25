"""First attempts: ingest POSTs every delivery of the events it claimed, once, before enqueueing.

Nearly every webhook is answered 2xx on its first attempt; making that attempt in ingest spares
the delivery an SQS task, a deliver invocation and an attempt-log record (docs/cost.md). The POST
is exactly the deliver function's (`jobhooks.delivery.deliver.post_signed`: the subscription's
signing secrets, the task's fixed `webhook-id`, the SSRF-safe `WebhookClient`); what differs is
the time it may take. The batch's POSTs run concurrently on a pool, under one deadline: the phase
ends `phase_seconds` (`FirstAttemptSeconds`, default 5) after it starts, and never later than the
invocation's remaining time minus what the writes after it need. Each POST's own timeout is the
deliver function's, cut to what is left of the phase.

Each task ends as one `FirstAttemptOutcome`:

- succeeded (2xx): the caller writes it into the subscription's page of the batch;
- failed (anything else, a timeout included, or secrets that could not be read): the caller
  records attempt 1 and enqueues the task with `attempts_made=1`, hidden for `retry_in_seconds`
  (the retry schedule's delay after attempt 1, capped at SQS's 900 s); with a one-attempt
  schedule `retry_in_seconds` is None and the delivery is parked, as deliver would;
- gone (410): the caller disables the subscription and records the delivery `gone`;
- not attempted (`NotAttemptedReason`): the subscription is disabled or another tenant's, its
  circuit is open (`circuit_breaker`), the deadline came before the POST could start, or the
  attempt raised (a bug: logged); the task is enqueued as it would be without first attempts.

A POST still running when the deadline passes (the HTTP client's own watchdog should have ended
it) counts as failed with the client's `timeout` class, and its task goes to the queue: the
receiver may get the webhook twice, with the same `webhook-id`, which is what it deduplicates on.
Every failed or gone attempt trips the subscription's circuit, so one bad receiver costs each
warm process at most one deadline a minute, and never delays the other subscriptions' POSTs.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

from jobhooks.delivery.deliver import post_signed
from jobhooks.delivery.model import (
    DeliveryAttempt,
    FailureClass,
    PostError,
    failure_class_of,
    result_label,
)
from jobhooks.delivery.ports import SubscriptionDirectory, WebhookPoster
from jobhooks.delivery.retry_schedule import DEFAULT_SCHEDULE, RetrySchedule, UniformRandom
from jobhooks.delivery_task import DeliveryTask
from jobhooks.ingest.circuit_breaker import CircuitBreaker
from jobhooks.storage.times import utc_now
from jobhooks.subscriptions.exceptions import SubscriptionError
from jobhooks.subscriptions.model import Subscription

_log = logging.getLogger(__name__)

DEFAULT_PHASE_SECONDS: Final = 5.0
# What the invocation keeps for after the phase (the pages, the failed attempts' records, the
# shared SendMessageBatch calls, the analytics rows and the completion record): 10 s, or a third
# of its remaining time when that is less. They take milliseconds; the margin is for a slow AWS
# call, and an invocation that still runs out of time is retried (the claim's lease).
WRITES_MARGIN_SECONDS: Final = 10.0
# SendMessageBatch's DelaySeconds is at most 15 minutes; a longer first delay is cut to it.
MAX_ENQUEUE_DELAY_SECONDS: Final = 900
# A POST that could not even connect in this long would only be cut off: leave it to deliver.
_MIN_POST_SECONDS: Final = 0.05
# How long past the deadline the phase waits for a POST whose watchdog is cutting it off.
_DEADLINE_GRACE_SECONDS: Final = 0.5


class FirstAttemptResult(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    GONE = "gone"
    NOT_ATTEMPTED = "not_attempted"


class NotAttemptedReason(StrEnum):
    SUBSCRIPTION_DISABLED = "subscription_disabled"
    TENANT_MISMATCH = "tenant_mismatch"
    CIRCUIT_OPEN = "circuit_open"
    DEADLINE = "deadline"
    ERROR = "error"
    """The attempt raised (a bug, not a receiver's answer): the deliver function makes it."""


@dataclass(frozen=True, slots=True)
class FirstAttemptOutcome:
    task: DeliveryTask
    result: FirstAttemptResult
    attempt: DeliveryAttempt | None = None
    retry_in_seconds: int | None = None
    """Failed: seconds until the deliver function's attempt 2 (the task's DelaySeconds); None
    when the schedule has no attempt 2 (the delivery is parked)."""
    not_attempted: NotAttemptedReason | None = None

    @property
    def failure_class(self) -> FailureClass | None:
        return failure_class_of(self.attempt) if self.attempt is not None else None


@dataclass(frozen=True, slots=True)
class FirstAttemptBatch:
    """The phase's outcomes, one per task, in the order the tasks were given."""

    outcomes: tuple[FirstAttemptOutcome, ...]

    def count(self, result: FirstAttemptResult) -> int:
        return sum(1 for outcome in self.outcomes if outcome.result is result)


class FirstAttemptDispatcher:
    """Makes the first attempts of a batch's deliveries. One per process; thread safe."""

    def __init__(
        self,
        *,
        subscriptions: SubscriptionDirectory,
        client: WebhookPoster,
        breaker: CircuitBreaker | None = None,
        schedule: RetrySchedule = DEFAULT_SCHEDULE,
        phase_seconds: float = DEFAULT_PHASE_SECONDS,
        post_timeout_seconds: float = 15.0,
        concurrency: int = 10,
        writes_margin_seconds: float = WRITES_MARGIN_SECONDS,
        clock: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
        random_source: UniformRandom = random.random,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if phase_seconds <= 0:
            raise ValueError("phase_seconds must be more than 0")
        self._subscriptions = subscriptions
        self._client = client
        self.breaker = breaker if breaker is not None else CircuitBreaker(monotonic=monotonic)
        self.schedule = schedule
        self._phase_seconds = phase_seconds
        self._post_timeout = post_timeout_seconds
        self._writes_margin = writes_margin_seconds
        self._clock = clock
        self._monotonic = monotonic
        self._random = random_source
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="first-attempt")
        self._random_lock = threading.Lock()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def phase_seconds(self, remaining_ms: int | None) -> float:
        """How long this invocation's phase may last (0: no time for it)."""
        seconds = self._phase_seconds
        if remaining_ms is not None:
            remaining = remaining_ms / 1000
            seconds = min(seconds, remaining - min(self._writes_margin, remaining / 3))
        return max(0.0, seconds)

    def attempt(
        self,
        deliveries: Sequence[tuple[DeliveryTask, Subscription]],
        *,
        remaining_ms: int | None = None,
    ) -> FirstAttemptBatch:
        """POST each task to its subscription, concurrently, before the phase's deadline."""
        phase = self.phase_seconds(remaining_ms)
        deadline = self._monotonic() + phase
        outcomes: list[FirstAttemptOutcome | None] = [None] * len(deliveries)
        running: dict[Future[FirstAttemptOutcome], int] = {}
        for index, (task, subscription) in enumerate(deliveries):
            skipped = self._reason_to_skip(task, subscription)
            if skipped is None and phase < _MIN_POST_SECONDS:
                skipped = NotAttemptedReason.DEADLINE
            if skipped is not None:
                outcomes[index] = _not_attempted(task, skipped)
                continue
            future = self._pool.submit(self._post, task, subscription, deadline)
            running[future] = index
        if running:
            wait_for(
                running, timeout=max(0.0, deadline - self._monotonic()) + _DEADLINE_GRACE_SECONDS
            )
        for future, index in running.items():
            task = deliveries[index][0]
            if future.done() and not future.cancelled():
                error = future.exception()
                if error is None:
                    outcomes[index] = future.result()
                else:
                    _log.error(
                        "first attempt raised; the task goes to the delivery queue",
                        exc_info=error,
                        extra=_ids(task),
                    )
                    outcomes[index] = _not_attempted(task, NotAttemptedReason.ERROR)
            elif future.cancel():
                outcomes[index] = _not_attempted(task, NotAttemptedReason.DEADLINE)
            else:
                # Still running: the client's watchdog failed to end it. The task goes to the
                # queue; whatever the POST does now is not recorded (same webhook-id if resent).
                attempt = DeliveryAttempt(n=1, at=self._clock(), error=PostError.TIMEOUT.value)
                outcomes[index] = self._failed(task, attempt, None)
        done = tuple(outcome for outcome in outcomes if outcome is not None)
        for outcome in done:
            if outcome.result in (FirstAttemptResult.FAILED, FirstAttemptResult.GONE):
                self.breaker.trip(outcome.task.subscription_id)
            _log_outcome(outcome)
        return FirstAttemptBatch(done)

    # -- one task ----------------------------------------------------------------------------

    def _reason_to_skip(
        self, task: DeliveryTask, subscription: Subscription
    ) -> NotAttemptedReason | None:
        if subscription.subscription_id != task.subscription_id:
            raise ValueError("a task paired with another subscription")
        if subscription.tenant_id != task.tenant_id:
            # Never POST across tenants; the deliver function records it as it always has.
            return NotAttemptedReason.TENANT_MISMATCH
        if not subscription.is_active:
            return NotAttemptedReason.SUBSCRIPTION_DISABLED
        if self.breaker.is_open(subscription.subscription_id):
            return NotAttemptedReason.CIRCUIT_OPEN
        return None

    def _post(
        self, task: DeliveryTask, subscription: Subscription, deadline: float
    ) -> FirstAttemptOutcome:
        left = deadline - self._monotonic()
        if left < _MIN_POST_SECONDS:
            return _not_attempted(task, NotAttemptedReason.DEADLINE)
        now = self._clock()
        try:
            signing_secrets = self._subscriptions.signing_secrets(subscription, now)
        except SubscriptionError as error:
            _log.error(
                "cannot read the subscription's signing secrets: %s", error.code, extra=_ids(task)
            )
            signing_secrets = []
        if not signing_secrets:
            attempt = DeliveryAttempt(n=1, at=now, error=FailureClass.SIGNING_ERROR.value)
            return self._failed(task, attempt, None)
        timeout = min(self._post_timeout, deadline - self._monotonic())
        if timeout < _MIN_POST_SECONDS:
            return _not_attempted(task, NotAttemptedReason.DEADLINE)
        attempt, retry_after = post_signed(
            self._client,
            subscription.url,
            task.webhook_id,
            task.payload,
            signing_secrets,
            1,
            now,
            timeout=timeout,
        )
        failure = failure_class_of(attempt)
        if failure is None:
            return FirstAttemptOutcome(task, FirstAttemptResult.SUCCEEDED, attempt)
        if failure is FailureClass.HTTP_410:
            return FirstAttemptOutcome(task, FirstAttemptResult.GONE, attempt)
        return self._failed(task, attempt, retry_after)

    def _failed(
        self, task: DeliveryTask, attempt: DeliveryAttempt, retry_after: int | None
    ) -> FirstAttemptOutcome:
        if self.schedule.is_last(1):
            return FirstAttemptOutcome(task, FirstAttemptResult.FAILED, attempt, None)
        with self._random_lock:  # `random.random` is safe; an injected source may not be
            delay = self.schedule.delay_after(1, retry_after=retry_after, random=self._random)
        return FirstAttemptOutcome(
            task, FirstAttemptResult.FAILED, attempt, min(delay, MAX_ENQUEUE_DELAY_SECONDS)
        )


def _not_attempted(task: DeliveryTask, reason: NotAttemptedReason) -> FirstAttemptOutcome:
    return FirstAttemptOutcome(task, FirstAttemptResult.NOT_ATTEMPTED, not_attempted=reason)


def _log_outcome(outcome: FirstAttemptOutcome) -> None:
    attempt = outcome.attempt
    if attempt is None:
        _log.debug(
            "first attempt not made: %s",
            outcome.not_attempted.value if outcome.not_attempted else "unknown",
            extra=_ids(outcome.task),
        )
        return
    # Successes at debug, as in the deliver function: the page and the metrics have them.
    _log.log(
        logging.DEBUG if outcome.result is FirstAttemptResult.SUCCEEDED else logging.INFO,
        "first attempt %s",
        result_label(attempt),
        extra={
            **_ids(outcome.task),
            "attempt": attempt.n,
            "status_code": attempt.status_code,
            "error": attempt.error,
            "latency_ms": attempt.latency_ms,
            "retry_in_seconds": outcome.retry_in_seconds,
        },
    )


def _ids(task: DeliveryTask) -> dict[str, str]:
    # Ids only: the URL may carry a token, and the payload is the customer's data.
    return {
        "delivery_id": task.delivery_id,
        "event_id": task.event_id,
        "subscription_id": task.subscription_id,
        "tenant_id": task.tenant_id,
    }
