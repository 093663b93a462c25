"""First attempts: the deliveries of the events an ingest invocation claimed, POSTed once now.

Nearly every webhook is answered 2xx on its first attempt; making that attempt right after the
claim spares the delivery an SQS task, a deliver invocation and an attempt-log record
(docs/cost.md). Ingest hands its claimed events to `FirstAttemptStage.deliver_first` and gets
back, per event, the tasks still to enqueue. The attempt is the deliver function's
(`attempt.attempt_delivery`: the subscription's signing secrets, the task's fixed `webhook-id`,
the SSRF-safe `WebhookClient`), and so is what comes of it (`settle`); what differs is the time
it may take. The batch's POSTs run concurrently on a pool (`FirstAttemptDispatcher`), under one
deadline: the phase ends `phase_seconds` (`FirstAttemptSeconds`, default 5) after it starts, and
never later than the invocation's remaining time minus what the writes after it need. Each
POST's own timeout is the deliver function's, cut to what is left of the phase.

Each task ends as one `DeliveryOutcome`:

- succeeded (2xx): an entry in the subscription's page of the batch (`first_attempts`), written
  once for the batch;
- retry scheduled (anything else, a timeout included, or secrets that could not be read):
  attempt 1 recorded, the task enqueued with `attempts_made=1`, hidden for the retry schedule's
  delay after attempt 1 (capped at SQS's 900 s); with a one-attempt schedule it is parked, as
  deliver would;
- gone (410): the subscription disabled, the delivery recorded `gone`;
- skipped: the subscription is disabled; the delivery is recorded `skipped` (`skipped`), with no
  POST and no task;
- not started (`NotAttemptedReason`): the subscription is another tenant's, its circuit is
  open (`circuit_breaker`), the deadline came before the POST could start, or the attempt
  raised (a bug: logged); the task is enqueued as it would be without first attempts.

The outcomes that write (a failure's record and its endpoint's health, a 410's, a skip) are
settled concurrently (`settle_concurrency`): the invocation, and so its poller, is held for one
round of writes, not one per failed endpoint.

The pool is shared fairly (`fair_pool`): POSTs start in turn across tenants, and each tenant of
the batch gets an equal share of the workers. A POST still running when the deadline passes (the
HTTP client's own watchdog should have ended it), or past the latency budget once nothing else
is left to wait for, counts as failed with the client's `timeout` class, and its task goes to
the queue: the receiver may get the webhook twice, with the same `webhook-id`, which is what it
deduplicates on. Every failed or gone attempt, and every answer slower than the latency budget
(`latency_budget_seconds`, a 2xx included), trips the subscription's circuit, so one slow or bad
receiver costs each warm process at most one short wait a minute, and never delays the other
subscriptions' POSTs.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Final, Protocol

from jobhooks.delivery.attempt import post_signed, signing_secrets_for, unsigned_attempt
from jobhooks.delivery.circuit_breaker import CircuitBreaker
from jobhooks.delivery.fair_pool import FairPool
from jobhooks.delivery.first_attempts import FirstAttempt, FirstAttemptPage
from jobhooks.delivery.model import (
    DeliveryAttempt,
    DeliveryOutcome,
    DeliveryResult,
    PostError,
    failure_class_of,
    result_label,
)
from jobhooks.delivery.settle import Settlement, task_fields
from jobhooks.delivery_task import MAX_DELAY_SECONDS, DeliveryTask
from jobhooks.storage.times import utc_now
from jobhooks.subscriptions.model import Subscription

if TYPE_CHECKING:
    from jobhooks.delivery.ports import SubscriptionDirectory, WebhookPoster
    from jobhooks.queued_task import QueuedTask

_log = logging.getLogger(__name__)

# Where pages whose write failed can go instead (ingest's spill queue): True when kept there.
PageSpill = Callable[[Sequence[FirstAttemptPage], Exception], bool]

DEFAULT_PHASE_SECONDS: Final = 5.0
# How many attempts of a batch settle at once (each failed one writes its record and its
# endpoint's health).
DEFAULT_SETTLE_CONCURRENCY: Final = 8
# An answer slower than this, even a 2xx, opens the endpoint's circuit like a failure: its next
# deliveries go through the deliver function instead of holding everyone's ingest invocation.
DEFAULT_LATENCY_BUDGET_SECONDS: Final = 1.0
# What the invocation keeps for after the phase (the pages, the failed attempts' records, the
# shared SendMessageBatch calls, the analytics rows and the completion record): 10 s, or a third
# of its remaining time when that is less. They take milliseconds; the margin is for a slow AWS
# call, and an invocation that still runs out of time is retried (the claim's lease).
WRITES_MARGIN_SECONDS: Final = 10.0
# A POST that could not even connect in this long would only be cut off: leave it to deliver.
_MIN_POST_SECONDS: Final = 0.05
# How long past the deadline the phase waits for a POST whose watchdog is cutting it off.
_DEADLINE_GRACE_SECONDS: Final = 0.5
# How often the phase looks again at which POSTs are left (a POST may start in between).
_WAIT_STEP_SECONDS: Final = 0.05


class NotAttemptedReason(StrEnum):
    SUBSCRIPTION_DISABLED = "subscription_disabled"
    TENANT_MISMATCH = "tenant_mismatch"
    CIRCUIT_OPEN = "circuit_open"
    DEADLINE = "deadline"
    ERROR = "error"
    """The attempt raised (a bug, not a receiver's answer): the deliver function makes it."""


# -- what ingest hands over and gets back -------------------------------------------------------


# The records below are plain classes: `@dataclass` compiles its generated methods at import
# (about 1 ms of the ingest function's cold start each on Python 3.12), and nothing compares,
# hashes or prints these hand-overs between ingest and the stage; they use none but `__init__`.


class EventDeliveries:
    """One claimed event's deliveries, each task with its subscription as matched."""

    __slots__ = ("batch_id", "deliveries", "event_id", "tenant_id")

    def __init__(
        self,
        event_id: str,
        tenant_id: str,
        batch_id: str,
        deliveries: tuple[tuple[DeliveryTask, Subscription], ...],
    ) -> None:
        self.event_id = event_id
        self.tenant_id = tenant_id
        # The claim's batch: the sort key of the pages its successes are written to.
        self.batch_id = batch_id
        self.deliveries = deliveries


class FirstAttemptReport:
    """What the first attempts of a batch came to."""

    __slots__ = ("failed", "outcomes", "to_enqueue")

    def __init__(
        self,
        to_enqueue: dict[str, list[QueuedTask]] | None = None,
        failed: dict[str, Exception] | None = None,
        outcomes: tuple[DeliveryOutcome, ...] = (),
    ) -> None:
        # Per event whose outcomes are recorded: its tasks for the delivery queue (a failed
        # one's retry, hidden for its delay; the ones not attempted).
        self.to_enqueue: dict[str, list[QueuedTask]] = {} if to_enqueue is None else to_enqueue
        # Events whose outcomes could not be recorded: retried whole (same `webhook-id`).
        self.failed: dict[str, Exception] = {} if failed is None else failed
        self.outcomes = outcomes


class FirstAttemptPages(Protocol):
    """Where first-attempt successes are kept (`first_attempts.FirstAttemptLog`)."""

    def write(self, pages: Sequence[FirstAttemptPage]) -> None:
        """Put every page; raises when some were not written."""


# -- the stage -----------------------------------------------------------------------------------


class FirstAttemptStage:
    """Makes and settles the first attempts of a batch's events. One per process."""

    def __init__(
        self,
        *,
        dispatcher: FirstAttemptDispatcher,
        settlement: Settlement,
        pages: FirstAttemptPages,
        settle_concurrency: int = DEFAULT_SETTLE_CONCURRENCY,
    ) -> None:
        if settle_concurrency < 1:
            raise ValueError("settle_concurrency must be at least 1")
        self.dispatcher = dispatcher
        self.settlement = settlement
        self._pages = pages
        self._settlers = ThreadPoolExecutor(
            max_workers=settle_concurrency, thread_name_prefix="first-attempt-settle"
        )

    def close(self) -> None:
        self.dispatcher.close()
        self._settlers.shutdown(wait=False, cancel_futures=True)

    def deliver_first(
        self,
        events: Sequence[EventDeliveries],
        *,
        remaining_ms: int | None = None,
        spill_pages: PageSpill | None = None,
    ) -> FirstAttemptReport:
        """POST every event's deliveries now, then settle each attempt: records first (a failed
        attempt's, a gone one's, a parked one's), then the successes' pages, one per
        subscription and batch, so one write covers ten events or more.

        `spill_pages` takes the pages when their write fails; when it says it kept them, the
        events complete: retrying them would POST their webhooks again."""
        pairs = [pair for event in events for pair in event.deliveries]
        posted = self.dispatcher.attempt(pairs, remaining_ms=remaining_ms) if pairs else []
        # The settle step's observers judge an attempt by the subscription as it was matched.
        matched = {task.delivery_id: subscription for task, subscription in pairs}
        settled = self._settle_all(posted, matched)
        by_event: dict[str, list[_Settled]] = {}
        for one in settled:
            by_event.setdefault(one.posted.task.event_id, []).append(one)
        report = FirstAttemptReport()
        outcomes: list[DeliveryOutcome] = []
        pages: dict[tuple[str, str], list[tuple[str, FirstAttempt]]] = {}
        tenants: dict[str, str] = {}
        for event in events:
            source = _FirstAttemptOf()
            mine = by_event.get(event.event_id, [])
            error = next((one.error for one in mine if one.error is not None), None)
            if error is not None:
                # Its retry makes the attempts again and pages its successes then.
                report.failed[event.event_id] = error
                continue
            for one in mine:
                assert one.outcome is not None
                outcomes.append(one.outcome)
                source.queued.extend(one.source.queued)
                source.successes.extend(one.source.successes)
            report.to_enqueue[event.event_id] = source.queued
            for subscription_id, success in source.successes:
                tenants[subscription_id] = event.tenant_id
                pages.setdefault((subscription_id, event.batch_id), []).append(
                    (event.event_id, success)
                )
        self._write_pages(pages, tenants, report, spill_pages)
        return FirstAttemptReport(report.to_enqueue, report.failed, tuple(outcomes))

    def _settle_all(
        self, posted: Sequence[Posted], matched: dict[str, Subscription]
    ) -> list[_Settled]:
        """Settle every attempt, each with a source of its own; in the order given.

        The ones that write (a failure's record and its endpoint's health, a 410's disable, a
        skip) run concurrently: a batch whose new endpoints all failed has two writes or more
        per attempt to make, and its poller takes no other batch until they are made. One
        after another they held an invocation longer than the latency budget it had already
        waited (docs/performance.md, "Isolation between tenants"). A success is kept in
        memory (its page is written once for the batch) and settles here, in order."""
        settled = [_Settled(one) for one in posted]
        writing = [one for one in settled if _writes(one.posted)]
        if len(writing) > 1:
            futures = [self._settlers.submit(self._settle_one, one, matched) for one in writing]
            wait_for(futures)
        for one in settled:
            if one.outcome is None and one.error is None:
                self._settle_one(one, matched)
        return settled

    def _settle_one(self, one: _Settled, matched: dict[str, Subscription]) -> None:
        try:
            one.outcome = self._settle(
                one.posted, one.source, matched.get(one.posted.task.delivery_id)
            )
        except Exception as error:
            one.error = error

    def _settle(
        self, posted: Posted, source: _FirstAttemptOf, subscription: Subscription | None
    ) -> DeliveryOutcome:
        if posted.not_attempted is NotAttemptedReason.SUBSCRIPTION_DISABLED:
            return self.settlement.skip(posted.task, subscription)
        if posted.attempt is None:
            source.queued.append(posted.task)  # as it would be without first attempts
            return DeliveryOutcome(DeliveryResult.NOT_STARTED, posted.task.delivery_id)
        return self.settlement.settle(
            posted.task,
            posted.attempt,
            source,
            retry_after=posted.retry_after,
            subscription=subscription,
        )

    def _write_pages(
        self,
        pages: dict[tuple[str, str], list[tuple[str, FirstAttempt]]],
        tenants: dict[str, str],
        report: FirstAttemptReport,
        spill_pages: PageSpill | None,
    ) -> None:
        written = [
            FirstAttemptPage(
                subscription_id=subscription_id,
                tenant_id=tenants[subscription_id],
                batch_id=batch_id,
                successes=tuple(success for _, success in entries),
            )
            for (subscription_id, batch_id), entries in pages.items()
        ]
        if not written:
            return
        try:
            self._pages.write(written)
        except Exception as error:
            if spill_pages is not None and spill_pages(written, error):
                return
            # Which page was refused is not known: every event with a success retries.
            for entries in pages.values():
                for event_id, _ in entries:
                    report.failed.setdefault(event_id, error)
                    report.to_enqueue.pop(event_id, None)


# A plain class: `@dataclass` compiles its generated methods at import (about 1 ms of the cold
# start each on Python 3.12), and this private record uses none but `__init__`.
class _Settled:
    """One attempt being settled: its own source (what to enqueue, what to page), then its
    outcome, or what it raised."""

    __slots__ = ("error", "outcome", "posted", "source")

    def __init__(self, posted: Posted) -> None:
        self.posted = posted
        self.source = _FirstAttemptOf()
        self.outcome: DeliveryOutcome | None = None
        self.error: Exception | None = None


def _writes(posted: Posted) -> bool:
    """Whether settling it writes (anything but a success, or a task left to the queue)."""
    if posted.not_attempted is NotAttemptedReason.SUBSCRIPTION_DISABLED:
        return True
    return posted.attempt is not None and failure_class_of(posted.attempt) is not None


class _FirstAttemptOf:
    """The attempt source of one event's first attempts (`settle.AttemptSource`): successes go
    to the batch's pages, a retry to the delivery queue with its delay."""

    logged_attempts = 0  # a first attempt's delivery has no record yet

    def __init__(self) -> None:
        self.successes: list[tuple[str, FirstAttempt]] = []
        self.queued: list[QueuedTask] = []

    def record_success(self, task: DeliveryTask, attempt: DeliveryAttempt) -> None:
        assert attempt.status_code is not None
        self.successes.append(
            (
                task.subscription_id,
                FirstAttempt(
                    event_id=task.event_id,
                    event_type=task.event_type,
                    at=attempt.at,
                    status_code=attempt.status_code,
                    latency_ms=attempt.latency_ms,
                ),
            )
        )

    def retry_later(self, task: DeliveryTask, delay_seconds: int) -> int:
        # Only a failed first attempt is retried from here: the ingest function's cold start
        # does not define the delayed task, most batches never build one.
        from jobhooks.queued_task import DelayedTask

        # SendMessageBatch's DelaySeconds is at most 15 minutes; a longer delay is cut to it.
        delay = min(delay_seconds, MAX_DELAY_SECONDS)
        # Attempt 1 is made: the deliver function's first receive is attempt 2.
        retry = task.model_copy(update={"attempts_made": 1})
        self.queued.append(DelayedTask(retry, delay) if delay else retry)
        return delay

    def parked_body(self, task: DeliveryTask) -> str:
        return task.to_json()


# -- the POST phase ------------------------------------------------------------------------------


class Posted:
    """One task after the phase: its attempt (and the receiver's Retry-After), or why none.

    A plain class, as the hand-overs above: nothing compares, hashes or prints it."""

    __slots__ = ("attempt", "not_attempted", "retry_after", "task")

    def __init__(
        self,
        task: DeliveryTask,
        attempt: DeliveryAttempt | None = None,
        retry_after: int | None = None,
        not_attempted: NotAttemptedReason | None = None,
    ) -> None:
        self.task = task
        self.attempt = attempt
        self.retry_after = retry_after
        self.not_attempted = not_attempted


class FirstAttemptDispatcher:
    """POSTs a batch's deliveries concurrently before one deadline. One per process; thread
    safe."""

    def __init__(
        self,
        *,
        subscriptions: SubscriptionDirectory,
        client: WebhookPoster,
        breaker: CircuitBreaker | None = None,
        phase_seconds: float = DEFAULT_PHASE_SECONDS,
        latency_budget_seconds: float = DEFAULT_LATENCY_BUDGET_SECONDS,
        post_timeout_seconds: float = 15.0,
        concurrency: int = 10,
        writes_margin_seconds: float = WRITES_MARGIN_SECONDS,
        clock: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if phase_seconds <= 0:
            raise ValueError("phase_seconds must be more than 0")
        self._subscriptions = subscriptions
        self._client = client
        self.breaker = breaker if breaker is not None else CircuitBreaker(monotonic=monotonic)
        self._phase_seconds = phase_seconds
        self._latency_budget = latency_budget_seconds
        # When each POST still running began, by subscription: one running past the budget
        # opens the circuit for the batches that start meanwhile, before it even ends.
        self._in_flight: dict[str, dict[int, float]] = {}
        self._in_flight_lock = threading.Lock()
        self._post_timeout = post_timeout_seconds
        self._writes_margin = writes_margin_seconds
        self._clock = clock
        self._monotonic = monotonic
        self._pool = FairPool(concurrency, thread_name_prefix="first-attempt")

    def close(self) -> None:
        self._pool.shutdown()

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
    ) -> list[Posted]:
        """POST each task to its subscription, concurrently, before the phase's deadline; one
        `Posted` per task, in the order given."""
        phase = self.phase_seconds(remaining_ms)
        deadline = self._monotonic() + phase
        posted: list[Posted | None] = [None] * len(deliveries)
        running: dict[Future[Posted], int] = {}
        started: dict[int, float] = {}  # when each POST began, by its index
        # Each tenant of the batch gets an equal share of the workers: a tenant with many slow
        # endpoints waits for its own, never for the others' (`fair_pool`).
        share = math.ceil(self._pool.workers / max(1, len({t.tenant_id for t, _ in deliveries})))
        for index, (task, subscription) in enumerate(deliveries):
            skipped = self._reason_to_skip(task, subscription)
            if skipped is None and phase < _MIN_POST_SECONDS:
                skipped = NotAttemptedReason.DEADLINE
            if skipped is not None:
                posted[index] = Posted(task, not_attempted=skipped)
                continue
            future = self._pool.submit(
                task.tenant_id,
                task.subscription_id,
                functools.partial(self._post, task, subscription, deadline, started, index),
                per_tenant=share,
            )
            running[future] = index
        if running:
            self._wait_for(running, started, deadline)
            for future in running:
                self._pool.withdraw(future)  # not started: left to deliver
            if self._monotonic() >= deadline:
                wait_for(running, timeout=_DEADLINE_GRACE_SECONDS)
        for future, index in running.items():
            posted[index] = self._result_of(future, deliveries[index][0])
        done = [one for one in posted if one is not None]
        for one in done:
            if one.attempt is not None and self._trips_the_breaker(one.attempt):
                self.breaker.trip(one.task.subscription_id)
            _log_posted(one)
        return done

    def _wait_for(
        self, running: dict[Future[Posted], int], started: dict[int, float], deadline: float
    ) -> None:
        """Until every POST is done, or the deadline, or only POSTs running past the latency
        budget are left: a tenant whose endpoints are that slow has had its share of the
        invocation, and those POSTs are left to the deliver function (their tasks are retried
        as after a timeout, with the same `webhook-id`)."""
        while True:
            now = self._monotonic()
            pending = [index for future, index in running.items() if not future.done()]
            if not pending or now >= deadline:
                return
            if all(now - started.get(index, now) > self._latency_budget for index in pending):
                return
            checks = [started[i] + self._latency_budget for i in pending if i in started]
            wake = min([deadline, *checks, now + _WAIT_STEP_SECONDS])
            wait_for(
                [f for f in running if not f.done()],
                timeout=max(0.0, wake - now),
                return_when=FIRST_COMPLETED,
            )

    def _trips_the_breaker(self, attempt: DeliveryAttempt) -> bool:
        """A failure, a 410, or an answer slower than the latency budget, success or not: the
        endpoint's next deliveries go through the deliver function for a while."""
        if failure_class_of(attempt) is not None:
            return True
        return attempt.latency_ms > self._latency_budget * 1000

    def _slow_in_flight(self, subscription_id: str) -> bool:
        now = self._monotonic()
        with self._in_flight_lock:
            started = self._in_flight.get(subscription_id, {})
            return any(now - at > self._latency_budget for at in started.values())

    @contextlib.contextmanager
    def _in_flight_to(self, subscription_id: str) -> Iterator[None]:
        token = object()
        with self._in_flight_lock:
            self._in_flight.setdefault(subscription_id, {})[id(token)] = self._monotonic()
        try:
            yield
        finally:
            with self._in_flight_lock:
                started = self._in_flight[subscription_id]
                del started[id(token)]
                if not started:
                    del self._in_flight[subscription_id]

    def _result_of(self, future: Future[Posted], task: DeliveryTask) -> Posted:
        if future.done() and not future.cancelled():
            error = future.exception()
            if error is None:
                return future.result()
            _log.error(
                "first attempt raised; the task goes to the delivery queue",
                exc_info=error,
                extra=task_fields(task),
            )
            return Posted(task, not_attempted=NotAttemptedReason.ERROR)
        if future.cancel():
            return Posted(task, not_attempted=NotAttemptedReason.DEADLINE)
        # Still running: the client's watchdog failed to end it. The task goes to the queue;
        # whatever the POST does now is not recorded (same webhook-id if resent).
        return Posted(task, DeliveryAttempt(n=1, at=self._clock(), error=PostError.TIMEOUT.value))

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
        if self._slow_in_flight(subscription.subscription_id):
            # Another batch's POST to it is already slower than the budget: it will trip.
            self.breaker.trip(subscription.subscription_id)
            return NotAttemptedReason.CIRCUIT_OPEN
        return None

    def _post(
        self,
        task: DeliveryTask,
        subscription: Subscription,
        deadline: float,
        started: dict[int, float],
        index: int,
    ) -> Posted:
        started[index] = self._monotonic()
        if deadline - self._monotonic() < _MIN_POST_SECONDS:
            return Posted(task, not_attempted=NotAttemptedReason.DEADLINE)
        now = self._clock()
        signing_secrets = signing_secrets_for(task, subscription, now, self._subscriptions)
        if not signing_secrets:
            return Posted(task, unsigned_attempt(1, now))
        # What is left of the phase once the secrets are read.
        timeout = min(self._post_timeout, deadline - self._monotonic())
        if timeout < _MIN_POST_SECONDS:
            return Posted(task, not_attempted=NotAttemptedReason.DEADLINE)
        with self._in_flight_to(subscription.subscription_id):
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
        return Posted(task, attempt, retry_after)


def _log_posted(posted: Posted) -> None:
    attempt = posted.attempt
    if attempt is None:
        _log.debug(
            "first attempt not made: %s",
            posted.not_attempted.value if posted.not_attempted else "unknown",
            extra=task_fields(posted.task),
        )
        return
    failed = failure_class_of(attempt) is not None
    # Successes at debug, as in the deliver function: the page and the metrics have them.
    _log.log(
        logging.INFO if failed else logging.DEBUG,
        "first attempt %s",
        result_label(attempt),
        extra={
            **task_fields(posted.task),
            "attempt": attempt.n,
            "status_code": attempt.status_code,
            "error": attempt.error,
            "latency_ms": attempt.latency_ms,
        },
    )
