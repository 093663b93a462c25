"""The first-attempt stage's deadline and its decisions (jobhooks.delivery.first_attempt).

The POSTs themselves are the deliver function's (tested against loopback receivers in
tests/integration/test_ingest_first_attempts.py); here a poster that takes as long as it is
allowed shows how the phase's deadline is shared out, and in-memory stores show what the settle
step does with each answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from jobhooks.delivery.first_attempt import (
    EventDeliveries,
    FirstAttemptDispatcher,
    FirstAttemptStage,
    NotAttemptedReason,
)
from jobhooks.delivery.first_attempts import FirstAttemptPage
from jobhooks.delivery.model import (
    DeliveryAttempt,
    DeliveryOutcome,
    DeliveryRecord,
    DeliveryResult,
    DeliveryStatus,
    PostError,
    PostResult,
)
from jobhooks.delivery.parking import ParkingSummary, ParkReason
from jobhooks.delivery.retry_schedule import DEFAULT_SCHEDULE, RetrySchedule
from jobhooks.delivery.settle import Settlement
from jobhooks.delivery_task import DelayedTask, DeliveryTask, delivery_task_for
from jobhooks.subscriptions import EventType, Subscription, SubscriptionStatus
from jobhooks.webhook_signature import generate_secret

NOW = datetime(2026, 7, 13, 18, 4, 11, tzinfo=UTC)


class Secrets:
    def signing_secrets(self, subscription: Subscription, now: datetime | None = None) -> list[str]:
        return [generate_secret()]

    def get(self, subscription_id: str, *, tenant_id: str | None = None) -> Subscription:
        raise NotImplementedError

    def disable_once(
        self,
        subscription_id: str,
        reason: str,
        *,
        tenant_id: str | None = None,
        while_failing_since: datetime | None = None,
    ) -> Subscription | None:
        raise NotImplementedError


class UsesItsWholeTimeout:
    """Answers 500 at once, or (`hang`) never: the POST ends when its timeout does."""

    def __init__(self, *, hang: bool) -> None:
        self.hang = hang
        self.timeouts: list[float | None] = []
        self._lock = threading.Lock()

    def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, timeout: float | None = None
    ) -> PostResult:
        with self._lock:
            self.timeouts.append(timeout)
        if not self.hang:
            return PostResult(500, None, None, 1)
        time.sleep(timeout or 0)
        return PostResult(None, PostError.TIMEOUT, "deadline", round((timeout or 0) * 1000))


def subscription(n: int, **changes: object) -> Subscription:
    made = Subscription(
        subscription_id=f"sub_acme_{n}",
        tenant_id="acme",
        url="https://example.com/hook",
        event_types=(EventType.JOB_COMPLETED,),
        created_at=NOW,
        updated_at=NOW,
        data_key=b"",
    )
    return made.model_copy(update=changes) if changes else made


def task_for(subscription: Subscription, event: str = "e") -> DeliveryTask:
    return delivery_task_for(
        event_id=f"fetcher.job.completed.{event}",
        tenant_id="acme",
        event_type="job.completed",
        payload="{}",
        subscription_id=subscription.subscription_id,
    )


def dispatcher(poster: UsesItsWholeTimeout, **options: object) -> FirstAttemptDispatcher:
    return FirstAttemptDispatcher(
        subscriptions=Secrets(),
        client=poster,
        **options,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("remaining_ms", "phase"),
    [(None, 30.0), (40_000, 30.0), (35_000, 25.0), (6_000, 4.0), (0, 0.0)],
)
def test_the_phase_leaves_the_writes_ten_seconds_or_a_third_of_what_remains(
    remaining_ms: int | None, phase: float
) -> None:
    longest = dispatcher(UsesItsWholeTimeout(hang=False), phase_seconds=30.0)
    assert longest.phase_seconds(remaining_ms) == phase


def test_each_post_gets_what_is_left_of_the_phase_at_most_the_post_timeout() -> None:
    poster = UsesItsWholeTimeout(hang=False)
    first = dispatcher(poster, phase_seconds=5.0, post_timeout_seconds=2.0)
    first.attempt([(task_for(subscription(1)), subscription(1))])
    short = dispatcher(poster, phase_seconds=1.0, post_timeout_seconds=2.0)
    short.attempt([(task_for(subscription(2)), subscription(2))])

    assert poster.timeouts[0] == 2.0
    assert poster.timeouts[1] is not None and 0.9 < poster.timeouts[1] <= 1.0


def test_a_post_that_cannot_start_before_the_deadline_is_not_attempted() -> None:
    poster = UsesItsWholeTimeout(hang=True)
    one_at_a_time = dispatcher(poster, phase_seconds=0.5, concurrency=1)
    a, b = subscription(1), subscription(2)

    started = time.monotonic()
    batch = one_at_a_time.attempt([(task_for(a), a), (task_for(b), b)])

    assert time.monotonic() - started < 1.5
    hung, waited = batch
    assert hung.attempt is not None and hung.attempt.error == "timeout"
    assert (waited.attempt, waited.not_attempted) == (None, NotAttemptedReason.DEADLINE)
    assert one_at_a_time.breaker.is_open(a.subscription_id)
    assert not one_at_a_time.breaker.is_open(b.subscription_id)


def test_disabled_or_foreign_subscriptions_are_not_attempted_and_no_time_means_no_post() -> None:
    poster = UsesItsWholeTimeout(hang=False)
    first = dispatcher(poster)
    disabled = subscription(1, status=SubscriptionStatus.DISABLED)
    foreign = subscription(2, tenant_id="globex")

    batch = first.attempt([(task_for(disabled), disabled), (task_for(foreign), foreign)])
    no_time = first.attempt([(task_for(subscription(3)), subscription(3))], remaining_ms=0)

    assert [o.not_attempted for o in batch + no_time] == [
        NotAttemptedReason.SUBSCRIPTION_DISABLED,
        NotAttemptedReason.TENANT_MISMATCH,
        NotAttemptedReason.DEADLINE,
    ]
    assert poster.timeouts == []


class Log:
    """The attempt log in memory: every record written, by delivery id."""

    def __init__(self) -> None:
        self.records: dict[str, list[tuple[DeliveryStatus, str | None]]] = {}

    def find(self, delivery_id: str) -> DeliveryRecord | None:
        return None

    def find_many(self, delivery_ids: Iterable[str]) -> dict[str, DeliveryRecord]:
        return {}

    def record_attempt(
        self,
        task: DeliveryTask,
        status: DeliveryStatus,
        attempt: DeliveryAttempt | None = None,
        *,
        reason: str | None = None,
        message_id: str | None = None,
        logged_attempts: int = 0,
    ) -> bool:
        self.records.setdefault(task.delivery_id, []).append((status, reason))
        return True

    def append_attempt(self, task: DeliveryTask, attempt: DeliveryAttempt) -> None:
        raise AssertionError("a first attempt never appends")


class DeadLetters:
    def __init__(self) -> None:
        self.parked: list[tuple[str, ParkingSummary]] = []

    def park(self, body: str, summary: ParkingSummary) -> str:
        self.parked.append((body, summary))
        return f"m{len(self.parked)}"


class Pages:
    def __init__(self) -> None:
        self.written: list[FirstAttemptPage] = []

    def write(self, pages: Sequence[FirstAttemptPage]) -> None:
        self.written.extend(pages)


@dataclass
class Stage:
    stage: FirstAttemptStage
    log: Log
    dead_letters: DeadLetters
    pages: Pages


def stage(
    poster: object, schedule: RetrySchedule = DEFAULT_SCHEDULE, log: Log | None = None
) -> Stage:
    log, dead_letters, pages = log or Log(), DeadLetters(), Pages()
    made = FirstAttemptStage(
        dispatcher=dispatcher(poster),  # type: ignore[arg-type]
        settlement=Settlement(
            attempt_log=log,
            subscriptions=Secrets(),
            dead_letters=dead_letters,
            schedule=schedule,
            random_source=lambda: 0.5,
        ),
        pages=pages,
    )
    return Stage(made, log, dead_letters, pages)


def one_event(*subscriptions: Subscription, event: str = "e") -> EventDeliveries:
    return EventDeliveries(
        event_id=f"fetcher.job.completed.{event}",
        tenant_id="acme",
        batch_id="1752429851000-0a1b2c3d4e5f.0",
        deliveries=tuple((task_for(s, event), s) for s in subscriptions),
    )


def test_a_failure_waits_the_schedules_delay_capped_at_900_s_or_parks_with_one_attempt() -> None:
    poster = UsesItsWholeTimeout(hang=False)
    a = subscription(1)
    long_wait = stage(poster, RetrySchedule.parse("0,3600"))
    one_attempt = stage(poster, RetrySchedule.parse("0"))
    default = stage(poster)

    capped = long_wait.stage.deliver_first([one_event(a)])
    parked = one_attempt.stage.deliver_first([one_event(a)])
    retried = default.stage.deliver_first([one_event(a)])

    [(event_id, [queued])] = capped.to_enqueue.items()
    assert isinstance(queued, DelayedTask) and queued.delay_seconds == 900
    assert queued.task.attempts_made == 1  # the deliver function's first receive is attempt 2
    assert [o.result for o in capped.outcomes] == [DeliveryResult.RETRY_SCHEDULED]
    assert long_wait.log.records == {queued.task.delivery_id: [(DeliveryStatus.PENDING, None)]}

    assert parked.to_enqueue == {event_id: []}
    assert [o.result for o in parked.outcomes] == [DeliveryResult.PARKED]
    [(body, summary)] = one_attempt.dead_letters.parked
    assert DeliveryTask.from_json(body).delivery_id == queued.task.delivery_id
    assert (summary.reason, summary.attempts, summary.last_result) == (
        ParkReason.ATTEMPTS_EXHAUSTED,
        1,
        "http_500",
    )

    [retry] = retried.to_enqueue[event_id]
    assert isinstance(retry, DelayedTask)
    assert retry.delay_seconds == 5  # jitter drawn at the middle: the schedule's 5 s


def test_successes_are_paged_by_subscription_and_batch_and_leave_nothing_to_enqueue() -> None:
    made = stage(AnswersAfter(0))
    a, b = subscription(1), subscription(2)

    report = made.stage.deliver_first([one_event(a, b, event="x"), one_event(a, event="y")])

    assert report.to_enqueue == {"fetcher.job.completed.x": [], "fetcher.job.completed.y": []}
    assert report.failed == {}
    assert made.log.records == {}  # a success has no attempt-log record
    pages = {
        page.subscription_id: [s.event_id for s in page.successes] for page in made.pages.written
    }
    assert pages == {
        a.subscription_id: ["fetcher.job.completed.x", "fetcher.job.completed.y"],
        b.subscription_id: ["fetcher.job.completed.x"],
    }


class Refuses(Pages):
    def write(self, pages: Sequence[FirstAttemptPage]) -> None:
        raise RuntimeError("throttled")


def test_an_event_whose_page_cannot_be_written_is_retried_whole() -> None:
    made = stage(AnswersAfter(0))
    made.stage._pages = Refuses()
    a = subscription(1)

    report = made.stage.deliver_first([one_event(a)])

    assert report.to_enqueue == {}
    assert list(report.failed) == ["fetcher.job.completed.e"]


class Observer:
    def __init__(self) -> None:
        self.seen: list[tuple[str, DeliveryResult, Subscription | None]] = []

    def settled(
        self, task: DeliveryTask, outcome: DeliveryOutcome, subscription: Subscription | None
    ) -> None:
        self.seen.append((task.subscription_id, outcome.result, subscription))


def test_the_settle_step_tells_its_observers_of_every_settled_attempt() -> None:
    made = stage(UsesItsWholeTimeout(hang=False))
    observer = Observer()
    made.stage.settlement.observers.append(observer)
    a = subscription(1)

    made.stage.deliver_first([one_event(a)])

    # With the subscription as matched: the endpoint-health rules read its health from it.
    assert observer.seen == [(a.subscription_id, DeliveryResult.RETRY_SCHEDULED, a)]


class Raises:
    def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, timeout: float | None = None
    ) -> PostResult:
        raise RuntimeError("a bug in the client")


def test_an_attempt_that_raises_leaves_its_task_to_the_deliver_function() -> None:
    broken = FirstAttemptDispatcher(subscriptions=Secrets(), client=Raises())
    a = subscription(1)

    [outcome] = broken.attempt([(task_for(a), a)])

    assert (outcome.attempt, outcome.not_attempted) == (None, NotAttemptedReason.ERROR)


class AnswersAfter:
    """Answers 200 after `seconds`, as a receiver across the internet would."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, timeout: float | None = None
    ) -> PostResult:
        time.sleep(self.seconds)
        return PostResult(200, None, None, round(self.seconds * 1000))


def test_a_full_batch_to_two_subscriptions_is_posted_in_one_wave_by_default() -> None:
    # 10 events to 2 subscriptions: 20 POSTs. Each wave is one more answer time of duration.
    from jobhooks.ingest.settings import IngestSettings

    concurrency = IngestSettings.model_fields["first_attempt_concurrency"].default
    assert concurrency >= 20
    subscriptions = [subscription(1), subscription(2)]
    pairs = [(task_for(s, f"e{n}"), s) for n in range(10) for s in subscriptions]
    default = dispatcher(AnswersAfter(0.3), concurrency=concurrency)  # type: ignore[arg-type]

    started = time.monotonic()
    batch = default.attempt(pairs)

    assert time.monotonic() - started < 0.55
    assert [o.attempt and o.attempt.status_code for o in batch] == [200] * 20


class SlowFor:
    """Answers 200 after `seconds` to `slow_url`, at once to any other; notes when each
    POST started."""

    def __init__(self, slow_url: str, seconds: float) -> None:
        self.slow_url, self.seconds = slow_url, seconds
        self.started: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, timeout: float | None = None
    ) -> PostResult:
        with self._lock:
            self.started.setdefault(url, []).append(time.monotonic())
        wait = self.seconds if url == self.slow_url else 0.0
        time.sleep(wait)
        return PostResult(200, None, None, round(wait * 1000))


def tenant_subscription(tenant: str, n: int, url: str) -> Subscription:
    return subscription(n, tenant_id=tenant, subscription_id=f"sub_{tenant}_{n}", url=url)


def tenant_task(made: Subscription, event: str) -> DeliveryTask:
    return delivery_task_for(
        event_id=f"fetcher.job.completed.{event}",
        tenant_id=made.tenant_id,
        event_type="job.completed",
        payload="{}",
        subscription_id=made.subscription_id,
    )


def test_a_tenant_with_many_slow_endpoints_holds_only_its_share_of_the_workers() -> None:
    poster = SlowFor("https://noisy.example/hook", 0.4)
    noisy = [tenant_subscription("noisy", n, "https://noisy.example/hook") for n in range(8)]
    quiet = tenant_subscription("quiet", 1, "https://quiet.example/hook")
    # The quiet tenant's delivery comes last in the batch, after eight slow ones.
    pairs = [(tenant_task(s, "e1"), s) for s in noisy] + [(tenant_task(quiet, "e1"), quiet)]
    four_workers = dispatcher(poster, concurrency=4)  # type: ignore[arg-type]

    started = time.monotonic()
    posted = four_workers.attempt(pairs)

    [quiet_start] = poster.started["https://quiet.example/hook"]
    assert quiet_start - started < 0.2  # not behind the noisy tenant's first wave (0.4 s)
    assert [o.attempt and o.attempt.status_code for o in posted] == [200] * 9
    # Each tenant's share of 4 workers is 2: the noisy tenant's POSTs ran two at a time.
    noisy_starts = sorted(poster.started["https://noisy.example/hook"])
    assert noisy_starts[2] - noisy_starts[0] >= 0.35


def test_a_success_slower_than_the_latency_budget_opens_the_circuit_like_a_failure() -> None:
    poster = SlowFor("https://slow.example/hook", 0.3)
    slow = tenant_subscription("acme", 1, "https://slow.example/hook")
    fast = tenant_subscription("acme", 2, "https://fast.example/hook")
    # One worker: the fast POST waits for the slow one, so the batch waits for its answer.
    budgeted = dispatcher(poster, latency_budget_seconds=0.2, concurrency=1)  # type: ignore[arg-type]

    posted = budgeted.attempt([(tenant_task(slow, "e"), slow), (tenant_task(fast, "e"), fast)])

    assert [o.attempt and o.attempt.status_code for o in posted] == [200, 200]
    assert budgeted.breaker.is_open(slow.subscription_id)
    assert not budgeted.breaker.is_open(fast.subscription_id)
    [later] = budgeted.attempt([(tenant_task(slow, "f"), slow)])
    assert later.not_attempted is NotAttemptedReason.CIRCUIT_OPEN  # left to the deliver function


def test_the_batch_does_not_wait_for_posts_running_past_the_latency_budget() -> None:
    poster = SlowFor("https://slow.example/hook", 1.0)
    slow = tenant_subscription("noisy", 1, "https://slow.example/hook")
    fast = tenant_subscription("quiet", 2, "https://fast.example/hook")
    budgeted = dispatcher(poster, latency_budget_seconds=0.2)  # type: ignore[arg-type]

    started = time.monotonic()
    left, done = budgeted.attempt([(tenant_task(slow, "e"), slow), (tenant_task(fast, "e"), fast)])

    assert time.monotonic() - started < 0.6  # not the slow endpoint's whole second
    # Left behind as a timeout: its task is retried by the deliver function (same webhook-id).
    assert left.attempt is not None and left.attempt.error == "timeout"
    assert done.attempt is not None and done.attempt.status_code == 200
    assert budgeted.breaker.is_open(slow.subscription_id)


def test_a_post_already_slower_than_the_budget_sends_the_next_batches_elsewhere_at_once() -> None:
    poster = SlowFor("https://slow.example/hook", 0.6)
    slow = tenant_subscription("acme", 1, "https://slow.example/hook")
    budgeted = dispatcher(poster, latency_budget_seconds=0.1)  # type: ignore[arg-type]
    first = threading.Thread(target=budgeted.attempt, args=([(tenant_task(slow, "e"), slow)],))
    first.start()
    wait_until = time.monotonic() + 5
    while not poster.started.get("https://slow.example/hook"):
        assert time.monotonic() < wait_until
        time.sleep(0.01)
    time.sleep(0.2)  # the first POST is now past the budget, still running

    started = time.monotonic()
    [second] = budgeted.attempt([(tenant_task(slow, "f"), slow)])

    assert time.monotonic() - started < 0.2  # no second wait on the same slow endpoint
    assert second.not_attempted is NotAttemptedReason.CIRCUIT_OPEN
    first.join(5)
    assert len(poster.started["https://slow.example/hook"]) == 1


class WaitsForAnotherWriter(Log):
    """An attempt log whose writes each wait until another write is under way too."""

    def __init__(self) -> None:
        super().__init__()
        self.together = threading.Barrier(2, timeout=5)

    def record_attempt(self, task: DeliveryTask, status: DeliveryStatus, *args, **kwargs) -> bool:  # type: ignore[no-untyped-def]
        self.together.wait()  # raises BrokenBarrierError when the writes come one at a time
        return super().record_attempt(task, status, *args, **kwargs)


def test_the_failures_of_a_batch_are_settled_together_not_one_after_another() -> None:
    log = WaitsForAnotherWriter()
    made = stage(UsesItsWholeTimeout(hang=False), log=log)
    a, b = subscription(1), subscription(2)

    report = made.stage.deliver_first([one_event(a, b)])

    assert report.failed == {}
    assert [o.result for o in report.outcomes] == [DeliveryResult.RETRY_SCHEDULED] * 2
    # In the order the event's deliveries were given, whichever settled first.
    assert [t.task.subscription_id for t in report.to_enqueue["fetcher.job.completed.e"]] == [  # type: ignore[union-attr]
        a.subscription_id,
        b.subscription_id,
    ]
    assert sorted(log.records) == sorted([task_for(a).delivery_id, task_for(b).delivery_id])
