"""The endpoint-health rules (`jobhooks.endpoint_health`), with in-memory health records whose
writes are conditional as DynamoDB's are: what is notified, once, and what is written."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from jobhooks.delivery.model import DeliveryAttempt, DeliveryOutcome, DeliveryResult
from jobhooks.delivery_task import DeliveryTask, delivery_task_for
from jobhooks.endpoint_health.failing import becomes_failing
from jobhooks.endpoint_health.model import EndpointHealth, HealthThresholds
from jobhooks.endpoint_health.observer import EndpointHealthObserver
from jobhooks.endpoint_health.owed import OwedNotification, decode_owed
from jobhooks.endpoint_health.settings import EndpointHealthSettings, parse_duration_seconds
from jobhooks.endpoint_health.sustained_failure import is_sustained
from jobhooks.exceptions import ConfigurationError
from jobhooks.notifications.exceptions import NotificationNotSentError
from jobhooks.subscriptions.model import EventType, Subscription, SubscriptionStatus

T0 = datetime(2026, 12, 6, 3, 0, 0, tzinfo=UTC)
T1 = T0 + timedelta(seconds=1)  # when a refused notification was made
THRESHOLDS = HealthThresholds(failing_after=3, auto_disable_after=timedelta(hours=120))


class Records:
    """`HealthRecords` in memory: the same conditions, counted writes."""

    def __init__(self) -> None:
        self.health: dict[str, EndpointHealth] = {}
        self.active: dict[str, bool] = {}
        self.writes = 0
        self._lock = threading.Lock()

    def record_failure(
        self, subscription_id: str, at: datetime
    ) -> tuple[EndpointHealth, bool] | None:
        with self._lock:
            self.writes += 1
            now = self.health.get(subscription_id, EndpointHealth())
            now = now.model_copy(
                update={
                    "consecutive_failures": now.consecutive_failures + 1,
                    "failing_since": now.failing_since or at,
                }
            )
            self.health[subscription_id] = now
            return now, self.active.get(subscription_id, True)

    def mark_failing(self, subscription_id: str, failing_after: int) -> bool:
        with self._lock:
            self.writes += 1
            now = self.health.get(subscription_id, EndpointHealth())
            if now.failing or now.consecutive_failures < failing_after:
                return False
            self.health[subscription_id] = now.model_copy(update={"failing": True})
            return True

    def clear_after_success(self, subscription_id: str) -> EndpointHealth | None:
        with self._lock:
            self.writes += 1
            before = self.health.get(subscription_id, EndpointHealth())
            if before.is_clean:
                return None
            self.health[subscription_id] = EndpointHealth(owed=before.owed)
            return before

    def owe(self, subscription_id: str, notification: OwedNotification) -> bool:
        with self._lock:
            self.writes += 1
            now = self.health.get(subscription_id, EndpointHealth())
            kept = [o for o in now.owed if o.attribute != notification.attribute]
            owed = (*kept, notification)
            self.health[subscription_id] = now.model_copy(update={"owed": owed})
            return True

    def sent_owed(self, subscription_id: str, notification: OwedNotification) -> bool:
        with self._lock:
            self.writes += 1
            now = self.health.get(subscription_id, EndpointHealth())
            if notification not in now.owed:
                return False
            owed = tuple(o for o in now.owed if o != notification)
            self.health[subscription_id] = now.model_copy(update={"owed": owed})
            return True


class Disabler:
    def __init__(self, records: Records) -> None:
        self.records = records
        self.calls: list[tuple[str, str, datetime | None]] = []

    def disable_once(
        self,
        subscription_id: str,
        reason: str,
        *,
        tenant_id: str | None = None,
        while_failing_since: datetime | None = None,
    ) -> Subscription | None:
        self.calls.append((subscription_id, reason, while_failing_since))
        if not self.records.active.get(subscription_id, True):
            return None
        self.records.active[subscription_id] = False
        return subscription(subscription_id).model_copy(
            update={"status": SubscriptionStatus.DISABLED}
        )


class Notifier:
    """Records what is sent; `refuse` makes the next calls fail as a refused enqueue does."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, dict[str, Any], str | None]] = []
        self.keys: list[tuple[str | None, datetime | None]] = []
        self.refuse = 0
        self._lock = threading.Lock()

    def notify(
        self,
        tenant_id: str,
        type: str,
        data: Mapping[str, Any],
        about_subscription: str | None = None,
        *,
        key: str | None = None,
        at: datetime | None = None,
    ) -> None:
        with self._lock:
            if self.refuse:
                self.refuse -= 1
                raise NotificationNotSentError(type, tenant_id, "AWS.SimpleQueueService", at=T1)
            self.sent.append((tenant_id, type, dict(data), about_subscription))
            self.keys.append((key, at))

    def types(self) -> list[str]:
        return [kind for _, kind, _, _ in self.sent]


class World:
    def __init__(self, thresholds: HealthThresholds = THRESHOLDS) -> None:
        self.records = Records()
        self.disabler = Disabler(self.records)
        self.notifier = Notifier()
        self.observer = EndpointHealthObserver(
            records=self.records,
            subscriptions=self.disabler,
            notifier=self.notifier,
            thresholds=thresholds,
        )

    def fail(
        self,
        sub: str = "sub_a",
        at: datetime = T0,
        result: DeliveryResult = DeliveryResult.RETRY_SCHEDULED,
    ) -> None:
        attempt = DeliveryAttempt(n=1, at=at, status_code=503)
        self.observer.settled(task(sub), DeliveryOutcome(result, "d", attempt), subscription(sub))

    def read(self, sub: str = "sub_a", status: SubscriptionStatus | None = None) -> Subscription:
        """The subscription as a process reads it: with the records' health."""
        update: dict[str, Any] = {"health": self.records.health.get(sub, EndpointHealth())}
        if status is not None:
            update["status"] = status
        return subscription(sub).model_copy(update=update)

    def skip(self, sub: str = "sub_a") -> None:
        """A delivery to the disabled endpoint, skipped: no attempt, the endpoint read."""
        self.observer.settled(
            task(sub),
            DeliveryOutcome(DeliveryResult.SKIPPED, "d"),
            self.read(sub, SubscriptionStatus.DISABLED),
        )

    def succeed(self, sub: str = "sub_a", at: datetime = T0) -> None:
        """A success, the subscription read as the records hold it now."""
        attempt = DeliveryAttempt(n=1, at=at, status_code=200)
        read = subscription(sub).model_copy(
            update={"health": self.records.health.get(sub, EndpointHealth())}
        )
        self.observer.settled(
            task(sub), DeliveryOutcome(DeliveryResult.SUCCEEDED, "d", attempt), read
        )


def subscription(subscription_id: str = "sub_a") -> Subscription:
    return Subscription(
        subscription_id=subscription_id,
        tenant_id="acme",
        url="https://hooks.example.com/a",
        event_types=(EventType.JOB_COMPLETED,),
        created_at=T0,
        updated_at=T0,
        data_key=b"k",
    )


def task(subscription_id: str = "sub_a", event_type: str = "job.completed") -> DeliveryTask:
    return delivery_task_for(
        event_id="fetcher.job.completed.e1",
        tenant_id="acme",
        event_type=event_type,
        payload="{}",
        subscription_id=subscription_id,
    )


# -- endpoint.failing ------------------------------------------------------------------------


def test_failing_goes_out_once_when_the_run_of_failures_reaches_the_threshold() -> None:
    world = World()
    world.fail()
    world.fail()
    assert world.notifier.sent == []

    world.fail()
    world.fail()
    world.fail()

    [(tenant, kind, data, about)] = world.notifier.sent
    assert (tenant, kind, about) == ("acme", "endpoint.failing", "sub_a")
    assert data["subscription_id"] == "sub_a"
    assert data["consecutive_failures"] == 3
    assert data["last_result"] == "http_503"


def test_failures_of_concurrent_deliveries_notify_failing_once() -> None:
    world = World()
    threads = [threading.Thread(target=world.fail) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert world.notifier.types() == ["endpoint.failing"]
    assert world.records.health["sub_a"].consecutive_failures == 40


def test_an_attempt_the_bridge_could_not_sign_is_not_the_endpoints_failure() -> None:
    world = World()
    unsigned = DeliveryAttempt(n=1, at=T0, error="signing_error")
    for _ in range(5):
        world.observer.settled(
            task(), DeliveryOutcome(DeliveryResult.RETRY_SCHEDULED, "d", unsigned), subscription()
        )
    assert (world.records.writes, world.notifier.sent) == (0, [])


def test_endpoints_are_counted_apart() -> None:
    world = World()
    for sub in ("sub_a", "sub_b", "sub_a", "sub_b"):
        world.fail(sub)
    assert world.notifier.sent == []


# -- a notification whose sending failed (`owed`) -------------------------------------------


def test_a_refused_failing_notification_is_kept_and_sent_by_the_next_read_of_the_endpoint() -> None:
    world = World()
    world.notifier.refuse = 1
    for _ in range(3):
        world.fail()
    assert world.notifier.sent == []
    [owed] = world.records.health["sub_a"].owed
    assert (owed.type, owed.about_subscription, owed.at) == ("endpoint.failing", "sub_a", T1)
    assert world.records.health["sub_a"].failing  # the state change stands

    # The next delivery to the endpoint reads it owing the notification: sent, then removed.
    world.observer.settled(
        task(), DeliveryOutcome(DeliveryResult.RETRY_SCHEDULED, "d", None), world.read()
    )
    assert world.notifier.types() == ["endpoint.failing"]
    assert world.notifier.sent[0][2]["consecutive_failures"] == 3
    assert world.notifier.keys == [(owed.key, T1)]  # same key and time: same ids and body
    assert world.records.health["sub_a"].owed == ()

    world.fail()
    world.succeed()
    assert world.notifier.types() == ["endpoint.failing", "endpoint.recovered"]


def test_a_refused_disabled_notification_is_sent_by_the_next_skipped_delivery_once() -> None:
    world = World()
    attempt = DeliveryAttempt(n=1, at=T0, status_code=410)
    world.notifier.refuse = 1
    world.observer.settled(
        task(),
        DeliveryOutcome(DeliveryResult.GONE, "d", attempt, disabled_subscription=True),
        subscription(),
    )
    assert world.notifier.sent == []

    world.skip()
    world.skip()

    [(_, kind, data, about)] = world.notifier.sent
    assert (kind, data["reason"], about) == ("endpoint.disabled", "gone", "sub_a")


def test_an_owed_notification_refused_again_stays_owed_until_sent() -> None:
    world = World()
    world.notifier.refuse = 2
    world.observer.settled(
        task(),
        DeliveryOutcome(DeliveryResult.PARKED, "d", DeliveryAttempt(n=8, at=T0, error="timeout")),
        subscription(),
    )
    world.skip()
    assert world.notifier.sent == []
    assert [o.type for o in world.records.health["sub_a"].owed] == ["delivery.exhausted"]

    world.skip()
    assert world.notifier.types() == ["delivery.exhausted"]
    assert world.records.health["sub_a"].owed == ()


def test_concurrent_reads_of_an_owing_endpoint_send_it_once() -> None:
    world = World()
    world.observer = EndpointHealthObserver(
        records=world.records,
        subscriptions=world.disabler,
        notifier=world.notifier,
        thresholds=THRESHOLDS,
        cache_seconds=60,  # a warm process: its reads may show it owed after it was sent
    )
    world.notifier.refuse = 1
    for _ in range(3):
        world.fail()
    cached = world.read()
    threads = [
        threading.Thread(
            target=world.observer.settled,
            args=(task(), DeliveryOutcome(DeliveryResult.SKIPPED, "d"), cached),
        )
        for _ in range(20)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert world.notifier.types() == ["endpoint.failing"]


def test_an_owed_notification_round_trips_its_record() -> None:
    owed = OwedNotification(
        tenant_id="acme",
        type="endpoint.disabled",
        data={"subscription_id": "sub_a", "reason": "gone", "detail": "ü"},
        about_subscription="sub_a",
        key="sub_a.disabled.2026-12-06T03:00:00Z",
        at=T0 + timedelta(microseconds=123456),
    )
    assert decode_owed(owed.encoded()) == owed
    assert owed.attribute.startswith("health_owed_") and len(owed.attribute) == 28


# -- endpoint.recovered ----------------------------------------------------------------------


def test_the_first_success_after_failing_recovers_once() -> None:
    world = World()
    for _ in range(3):
        world.fail()
    world.succeed()
    world.succeed()

    assert world.notifier.types() == ["endpoint.failing", "endpoint.recovered"]
    data = world.notifier.sent[1][2]
    assert (data["subscription_id"], data["failed_attempts"]) == ("sub_a", 3)
    assert world.records.health["sub_a"] == EndpointHealth()


def test_a_success_on_a_healthy_endpoint_writes_nothing() -> None:
    world = World()
    world.succeed()
    world.succeed()
    assert (world.records.writes, world.notifier.sent) == (0, [])


def test_a_success_ends_a_short_run_silently_and_the_count_starts_again() -> None:
    world = World()
    world.fail()
    world.fail()
    world.succeed()
    world.fail()
    world.fail()

    assert world.notifier.sent == []
    assert world.records.health["sub_a"].consecutive_failures == 2


def test_failing_after_a_recovery_is_a_new_state_change() -> None:
    world = World()
    for _ in range(3):
        world.fail()
    world.succeed()
    for _ in range(3):
        world.fail()
    assert world.notifier.types() == ["endpoint.failing", "endpoint.recovered", "endpoint.failing"]


# -- sustained failure -----------------------------------------------------------------------


def test_every_attempt_failing_for_the_period_disables_the_endpoint_once() -> None:
    world = World()
    world.fail(at=T0)
    world.fail(at=T0 + timedelta(hours=119))
    assert world.disabler.calls == []

    world.fail(at=T0 + timedelta(hours=120))
    world.fail(at=T0 + timedelta(hours=121))  # parked: the subscription is disabled now

    disabled = [s for s in world.notifier.sent if s[1] == "endpoint.disabled"]
    [(_, _, data, about)] = disabled
    assert about == "sub_a"
    assert data["reason"] == "sustained_failure"
    assert data["detail"].startswith("every attempt failed from 2026-12-06T03:00:00.000Z")
    # The disable is conditional on the same run of failures (a success racing it wins).
    assert world.disabler.calls[0][2] == T0


def test_sustained_failure_can_be_turned_off() -> None:
    world = World(HealthThresholds(failing_after=3, auto_disable_after=None))
    world.fail(at=T0)
    world.fail(at=T0 + timedelta(days=30))
    assert world.disabler.calls == []


def test_a_success_restarts_the_sustained_failure_clock() -> None:
    world = World()
    world.fail(at=T0)
    world.succeed(at=T0 + timedelta(hours=100))
    world.fail(at=T0 + timedelta(hours=110))
    world.fail(at=T0 + timedelta(hours=125))
    assert world.disabler.calls == []


# -- endpoint.disabled (gone) and delivery.exhausted ---------------------------------------


def test_a_410_that_disabled_the_endpoint_notifies_gone_and_one_that_did_not_is_silent() -> None:
    world = World()
    attempt = DeliveryAttempt(n=1, at=T0, status_code=410)
    gone = DeliveryOutcome(DeliveryResult.GONE, "d", attempt, disabled_subscription=True)
    again = DeliveryOutcome(DeliveryResult.GONE, "d2", attempt, disabled_subscription=False)

    world.observer.settled(task(), gone, subscription())
    world.observer.settled(task(), again, subscription())

    [(_, kind, data, about)] = world.notifier.sent
    assert (kind, data["reason"], about) == ("endpoint.disabled", "gone", "sub_a")
    assert world.records.writes == 0  # a 410 is not a failure to count: it disables


def test_an_exhausted_delivery_notifies_with_its_ids() -> None:
    world = World()
    parked = task()
    attempt = DeliveryAttempt(n=8, at=T0, error="timeout")

    world.observer.settled(
        parked, DeliveryOutcome(DeliveryResult.PARKED, parked.delivery_id, attempt), subscription()
    )

    [(_, kind, data, about)] = world.notifier.sent
    assert (kind, about) == ("delivery.exhausted", "sub_a")
    assert (data["delivery_id"], data["event_id"], data["subscription_id"]) == (
        parked.delivery_id,
        parked.event_id,
        "sub_a",
    )
    assert (data["attempts"], data["last_result"]) == (8, "timeout")
    assert world.records.health["sub_a"].consecutive_failures == 1  # and counted


def test_a_notifications_own_exhaustion_is_never_notified() -> None:
    world = World()
    notification = task(event_type="delivery.exhausted")
    attempt = DeliveryAttempt(n=8, at=T0, status_code=500)

    world.observer.settled(
        notification, DeliveryOutcome(DeliveryResult.PARKED, "d", attempt), subscription()
    )

    assert world.notifier.sent == []


def test_a_parked_delivery_of_a_disabled_endpoint_is_not_exhausted() -> None:
    world = World()
    world.observer.settled(task(), DeliveryOutcome(DeliveryResult.PARKED, "d"), subscription())
    assert (world.notifier.sent, world.records.writes) == ([], 0)


# -- the pure rules and the settings ---------------------------------------------------------


def test_the_rules_judge_the_health_alone() -> None:
    assert becomes_failing(EndpointHealth(consecutive_failures=3), THRESHOLDS)
    assert not becomes_failing(EndpointHealth(consecutive_failures=9, failing=True), THRESHOLDS)
    run = EndpointHealth(consecutive_failures=2, failing_since=T0)
    assert is_sustained(run, T0 + timedelta(hours=120), THRESHOLDS)
    assert not is_sustained(run, T0 + timedelta(hours=119, minutes=59), THRESHOLDS)


@pytest.mark.parametrize(
    ("text", "seconds"), [("120h", 432000), ("15s", 15), ("30m", 1800), ("5d", 432000), ("90", 90)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration_seconds(text) == seconds


def test_settings_read_the_template_s_variables_with_their_defaults() -> None:
    base = {"JOBHOOKS_SUBSCRIPTIONS_TABLE": "s", "JOBHOOKS_DELIVERY_QUEUE_URL": "q"}
    default = EndpointHealthSettings.from_env(base).health_thresholds()
    assert default == HealthThresholds(5, timedelta(hours=120))
    changed = EndpointHealthSettings.from_env(
        {**base, "JOBHOOKS_ENDPOINT_FAILING_AFTER": "2", "JOBHOOKS_AUTO_DISABLE_AFTER": "0h"}
    ).health_thresholds()
    assert changed == HealthThresholds(2, None)
    with pytest.raises(ConfigurationError, match="JOBHOOKS_AUTO_DISABLE_AFTER"):
        EndpointHealthSettings.from_env({**base, "JOBHOOKS_AUTO_DISABLE_AFTER": "soon"})
