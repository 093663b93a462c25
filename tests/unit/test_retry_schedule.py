"""The retry schedule: its default, the jitter, Retry-After bounds and the configuration."""

from __future__ import annotations

import random

import pytest
from jobhooks.delivery.retry_schedule import (
    DEFAULT_SCHEDULE,
    MAX_RETRY_DELAY_SECONDS,
    SQS_MAX_VISIBILITY_SECONDS,
    InvalidRetryScheduleError,
    RetrySchedule,
)
from jobhooks.delivery.settings import DeliverSettings
from jobhooks.settings import ConfigurationError

REQUIRED = {
    "JOBHOOKS_DELIVERIES_TABLE": "deliveries",
    "JOBHOOKS_SUBSCRIPTIONS_TABLE": "subscriptions",
    "JOBHOOKS_CLAIMS_TABLE": "claims",
    "JOBHOOKS_FIRST_ATTEMPTS_TABLE": "first-attempts",
    "JOBHOOKS_DELIVERY_QUEUE_URL": "https://sqs.example/1/delivery",
    "JOBHOOKS_DELIVERY_DLQ_URL": "https://sqs.example/1/delivery-dlq",
}


def middle() -> float:
    return 0.5  # jitter factor exactly 1


def test_default_schedule_is_no_weaker_than_svix_eight_attempts_over_27_hours() -> None:
    assert DEFAULT_SCHEDULE.delays == (0, 5, 300, 1800, 7200, 18000, 36000, 36000)
    assert DEFAULT_SCHEDULE.max_attempts == 8
    assert 27 * 3600 <= DEFAULT_SCHEDULE.total_seconds <= 28 * 3600
    assert DEFAULT_SCHEDULE.jitter == 0.2


def test_delay_after_attempt_n_is_the_schedules_delay_before_attempt_n_plus_1() -> None:
    delays = [DEFAULT_SCHEDULE.delay_after(n, random=middle) for n in range(1, 8)]
    assert delays == [5, 300, 1800, 7200, 18000, 36000, 36000]


@pytest.mark.parametrize(("draw", "expected"), [(0.0, 240), (0.5, 300), (0.999999, 360)])
def test_jitter_is_plus_or_minus_twenty_percent(draw: float, expected: int) -> None:
    assert DEFAULT_SCHEDULE.delay_after(2, random=lambda: draw) == expected


def test_jitter_spreads_delays_over_the_whole_band() -> None:
    rng = random.Random(7)
    delays = {DEFAULT_SCHEDULE.delay_after(3, random=rng.random) for _ in range(2000)}
    assert min(delays) >= 1440 and max(delays) <= 2160
    assert min(delays) < 1460 and max(delays) > 2140


def test_retry_after_lengthens_a_delay_but_never_shortens_it() -> None:
    assert DEFAULT_SCHEDULE.delay_after(1, retry_after=120, random=middle) == 120
    assert DEFAULT_SCHEDULE.delay_after(2, retry_after=10, random=middle) == 300
    assert DEFAULT_SCHEDULE.delay_after(2, retry_after=0, random=middle) == 300


def test_no_delay_exceeds_what_sqs_visibility_allows() -> None:
    assert MAX_RETRY_DELAY_SECONDS < SQS_MAX_VISIBILITY_SECONDS
    assert DEFAULT_SCHEDULE.delay_after(1, retry_after=10**9, random=middle) == (
        MAX_RETRY_DELAY_SECONDS
    )
    # 10 h + 20 % jitter would be exactly 12 h: too late once the receive is a minute old.
    assert DEFAULT_SCHEDULE.delay_after(7, random=lambda: 0.999999) == MAX_RETRY_DELAY_SECONDS


def test_the_last_attempt_and_any_past_it_are_last() -> None:
    assert not DEFAULT_SCHEDULE.is_last(7)
    assert DEFAULT_SCHEDULE.is_last(8)
    assert DEFAULT_SCHEDULE.is_last(11)  # crashed invocations used up receives


def test_a_schedule_parses_from_its_environment_form() -> None:
    assert RetrySchedule.parse("0, 1,2").delays == (0, 1, 2)
    assert RetrySchedule.parse("0").max_attempts == 1


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("", "comma-separated whole seconds"),
        ("0,5,x", "comma-separated whole seconds"),
        ("0,-5", "comma-separated whole seconds"),
        ("0,1.5", "comma-separated whole seconds"),
        ("5,300", "first entry"),
        ("0,50000", "12 hours"),
        (",".join(["0"] * 51), "1 to 50 entries"),
    ],
)
def test_a_bad_schedule_is_refused_with_what_to_write(text: str, complaint: str) -> None:
    with pytest.raises(InvalidRetryScheduleError, match=complaint):
        RetrySchedule.parse(text)


def test_deliver_settings_read_the_schedule_and_defaults() -> None:
    settings = DeliverSettings.from_env({**REQUIRED, "JOBHOOKS_RETRY_SCHEDULE": "0,1,2"})
    assert settings.retry_schedule.delays == (0, 1, 2)
    defaults = DeliverSettings.from_env(REQUIRED)
    assert defaults.retry_schedule == DEFAULT_SCHEDULE
    assert (defaults.attempt_log_days, defaults.delivery_concurrency) == (30, 10)
    assert defaults.delivery_timeout_seconds == 15
    assert defaults.allow_private_webhooks is False


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("JOBHOOKS_RETRY_SCHEDULE", "5,10"),
        ("JOBHOOKS_DELIVERY_CONCURRENCY", "0"),
        ("JOBHOOKS_DELIVERY_TIMEOUT_SECONDS", "30"),
        ("JOBHOOKS_ATTEMPT_LOG_DAYS", "0"),
    ],
)
def test_deliver_settings_name_the_bad_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=variable):
        DeliverSettings.from_env({**REQUIRED, variable: value})


@pytest.mark.parametrize(
    "variable",
    ["JOBHOOKS_DELIVERIES_TABLE", "JOBHOOKS_CLAIMS_TABLE", "JOBHOOKS_FIRST_ATTEMPTS_TABLE"],
)
def test_deliver_settings_name_a_missing_table(variable: str) -> None:
    environment = dict(REQUIRED)
    del environment[variable]
    with pytest.raises(ConfigurationError, match=variable):
        DeliverSettings.from_env(environment)
