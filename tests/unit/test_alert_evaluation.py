"""The job-health rule's logic: when a job is degraded, when it recovers, once per change."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from jobhooks.alerts.evaluation import (
    JobHealth,
    apply,
    is_degraded,
    judge,
    notification_data,
    notification_key,
)
from jobhooks.alerts.exceptions import InvalidThresholdError, InvalidWindowError
from jobhooks.alerts.model import (
    RECENT_ALERTS,
    AlertRule,
    validate_thresholds,
    validate_window,
)
from jobhooks.subscriptions.model import EventType

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)


def rule(**fields: object) -> AlertRule:
    values: dict[str, object] = {
        "rule_id": "alr_1",
        "tenant_id": "acme",
        "job_name": "billing-*",
        "failure_rate": 0.5,
        "min_outcomes": 4,
        "created_at": T0,
        "revision": 1,
    }
    values.update(fields)
    return AlertRule.model_validate(values)


def health(
    job: str = "billing-invoices",
    outcomes: int = 10,
    failures: int = 0,
    measured: int | None = None,
    p95: int | None = 100,
) -> JobHealth:
    return JobHealth(
        job, outcomes, failures, outcomes - failures if measured is None else measured, p95
    )


def test_a_failure_rate_at_the_threshold_degrades_with_enough_outcomes() -> None:
    assert is_degraded(rule(), health(failures=5)) is True
    assert is_degraded(rule(), health(failures=4)) is False
    assert is_degraded(rule(), health(outcomes=3, failures=3)) is None  # too few to say


def test_the_p95_counts_measured_durations_only() -> None:
    slow = rule(failure_rate=None, p95_ms=1000)
    assert is_degraded(slow, health(p95=1000)) is True
    assert is_degraded(slow, health(p95=999)) is False
    # Eight failures (no duration) and two slow successes: two measurements are too few.
    assert is_degraded(slow, health(failures=8, measured=2, p95=5000)) is False
    assert is_degraded(slow, health(outcomes=10, failures=10, measured=0, p95=None)) is False


def test_judge_reports_each_change_once_and_only_for_covered_jobs() -> None:
    failing = [health(failures=6), health("payments", failures=10)]
    (first,) = judge(rule(), failing, T0)
    assert (first.type, first.job_name) == (EventType.JOB_HEALTH_DEGRADED, "billing-invoices")

    degraded = apply(rule(), [(first, 2)], T0)
    assert judge(degraded, failing, T0 + timedelta(minutes=5)) == []  # still degraded: silent
    assert judge(degraded, [health(outcomes=2, failures=0)], T0) == []  # too few: state kept

    (back,) = judge(degraded, [health(failures=1)], T0 + timedelta(minutes=10))
    assert back.type is EventType.JOB_HEALTH_RECOVERED
    assert back.degraded_since == T0
    recovered = apply(degraded, [(back, 1)], T0 + timedelta(minutes=10))
    assert recovered.states == {}
    assert [r.type for r in recovered.recent] == ["job_health.recovered", "job_health.degraded"]


def test_recent_alerts_are_capped() -> None:
    current = rule()
    for n in range(RECENT_ALERTS + 5):
        kind = judge(current, [health(failures=10 if n % 2 == 0 else 0)], T0)
        current = apply(current, [(kind[0], 1)], T0 + timedelta(minutes=n))
    assert len(current.recent) == RECENT_ALERTS


def test_the_notification_names_the_rule_the_window_the_numbers_and_the_thresholds() -> None:
    (change,) = judge(rule(p95_ms=2000), [health(failures=7, p95=150)], T0)
    data = notification_data(rule(p95_ms=2000), change, T0 - timedelta(minutes=15), T0)
    assert data["rule_id"] == "alr_1"
    assert data["job_name"] == "billing-invoices"
    assert data["window"] == {
        "seconds": 900,
        "from": "2026-03-01T11:45:00.000Z",
        "to": "2026-03-01T12:00:00.000Z",
    }
    assert (data["outcomes"], data["failures"], data["failure_rate"]) == (10, 7, 0.7)
    assert (data["measured_durations"], data["p95_duration_ms"]) == (3, 150)
    assert data["thresholds"] == {"failure_rate": 0.5, "p95_ms": 2000, "min_outcomes": 4}


def test_the_same_change_has_the_same_key_and_the_next_change_another() -> None:
    (change,) = judge(rule(), [health(failures=9)], T0)
    assert notification_key(rule(), change) == notification_key(rule(), change)
    assert notification_key(rule(), change) != notification_key(rule(revision=2), change)


@pytest.mark.parametrize(
    ("failure_rate", "p95_ms"), [(None, None), (0.0, None), (1.5, None), (None, 0)]
)
def test_rejects_rules_without_a_sound_threshold(
    failure_rate: float | None, p95_ms: int | None
) -> None:
    with pytest.raises(InvalidThresholdError) as caught:
        validate_thresholds(failure_rate, p95_ms)
    assert caught.value.code == "invalid_alert_threshold"


@pytest.mark.parametrize("seconds", [59, 86_401])
def test_rejects_windows_out_of_range(seconds: int) -> None:
    with pytest.raises(InvalidWindowError):
        validate_window(seconds)
