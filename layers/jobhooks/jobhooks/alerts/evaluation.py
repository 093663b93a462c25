"""Whether a rule's jobs crossed its thresholds, and what changes: the alert rule's logic, pure.

`judge` compares each job name the rule covers with its thresholds over the window:

- **degraded** when the window holds at least `min_outcomes` outcomes of the job and its
  failure rate is at or above `failure_rate`, or at least `min_outcomes` measured durations and
  their p95 is at or above `p95_ms`. A failure has no duration (Fetcher reports none), so it is
  never counted as a measurement of time: the p95 is over measured durations only;
- **healthy** when the window holds at least `min_outcomes` outcomes and neither holds;
- **no verdict** with fewer outcomes: the job keeps its state (a job that stopped running does
  not "recover", and one that ran twice does not "degrade").

Only a change of state is a transition: a job degraded in the last evaluation and degraded
now sends nothing (once per state change).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jobhooks.alerts.model import RECENT_ALERTS, AlertRecord, AlertRule, JobState
from jobhooks.storage.times import format_time
from jobhooks.subscriptions.model import EventType


@dataclass(frozen=True, slots=True)
class JobHealth:
    """One job name over the window (the reviewed question `job_health_window`)."""

    job_name: str
    outcomes: int
    failures: int
    measured_durations: int
    p95_duration_ms: int | None

    @property
    def failure_rate(self) -> float:
        return self.failures / self.outcomes if self.outcomes else 0.0


@dataclass(frozen=True, slots=True)
class Transition:
    type: EventType
    health: JobHealth
    degraded_since: datetime

    @property
    def job_name(self) -> str:
        return self.health.job_name


def is_degraded(rule: AlertRule, health: JobHealth) -> bool | None:
    """True over a threshold, False under every one, None without enough outcomes to say."""
    if health.outcomes < rule.min_outcomes:
        return None
    if rule.failure_rate is not None and health.failure_rate >= rule.failure_rate:
        return True
    return (
        rule.p95_ms is not None
        and health.measured_durations >= rule.min_outcomes
        and health.p95_duration_ms is not None
        and health.p95_duration_ms >= rule.p95_ms
    )


def judge(rule: AlertRule, healths: Iterable[JobHealth], now: datetime) -> list[Transition]:
    """The state changes of the rule's jobs, in job name order."""
    transitions = []
    for health in sorted(healths, key=lambda h: h.job_name):
        if not rule.covers(health.job_name):
            continue
        verdict = is_degraded(rule, health)
        state = rule.states.get(health.job_name)
        if verdict is True and state is None:
            transitions.append(Transition(EventType.JOB_HEALTH_DEGRADED, health, now))
        elif verdict is False and state is not None:
            transitions.append(
                Transition(EventType.JOB_HEALTH_RECOVERED, health, state.degraded_since)
            )
    return transitions


def notification_data(
    rule: AlertRule, transition: Transition, window_start: datetime, now: datetime
) -> dict[str, Any]:
    """The `data` of a job_health notification (docs/notifications.md)."""
    health = transition.health
    return {
        "rule_id": rule.rule_id,
        "job_name": health.job_name,
        "job_name_pattern": rule.job_name,
        "window": {
            "seconds": rule.window_seconds,
            "from": format_time(window_start),
            "to": format_time(now),
        },
        "outcomes": health.outcomes,
        "failures": health.failures,
        "failure_rate": round(health.failure_rate, 4),
        "measured_durations": health.measured_durations,
        "p95_duration_ms": health.p95_duration_ms,
        "thresholds": {
            "failure_rate": rule.failure_rate,
            "p95_ms": rule.p95_ms,
            "min_outcomes": rule.min_outcomes,
        },
        "degraded_since": format_time(transition.degraded_since),
    }


def notification_key(rule: AlertRule, transition: Transition) -> str:
    """Names the state change: the same change, notified again after a failed save, gets the
    same delivery ids (deliver drops a repeat)."""
    return f"{rule.rule_id}\n{transition.job_name}\n{transition.type.value}\n{rule.revision}"


def apply(
    rule: AlertRule,
    transitions: Sequence[tuple[Transition, int]],
    now: datetime,
) -> AlertRule:
    """The rule after its transitions (each with the deliveries its notification made)."""
    states = dict(rule.states)
    records: list[AlertRecord] = []
    for transition, deliveries in transitions:
        health = transition.health
        if transition.type is EventType.JOB_HEALTH_DEGRADED:
            states[health.job_name] = JobState(
                degraded_since=now,
                outcomes=health.outcomes,
                failures=health.failures,
                failure_rate=round(health.failure_rate, 4),
                p95_duration_ms=health.p95_duration_ms,
            )
        else:
            states.pop(health.job_name, None)
        records.append(
            AlertRecord(
                type=transition.type.value,
                job_name=health.job_name,
                at=now,
                outcomes=health.outcomes,
                failures=health.failures,
                failure_rate=round(health.failure_rate, 4),
                p95_duration_ms=health.p95_duration_ms,
                deliveries=deliveries,
            )
        )
    recent = (*reversed(records), *rule.recent)[:RECENT_ALERTS]
    return rule.model_copy(update={"states": states, "recent": recent})


def health_from_record(record: Mapping[str, Any]) -> JobHealth:
    p95 = record.get("p95_duration_ms")
    return JobHealth(
        job_name=str(record["job_name"]),
        outcomes=int(record["outcomes"]),
        failures=int(record["failures"]),
        measured_durations=int(record.get("measured_outcomes") or 0),
        p95_duration_ms=int(p95) if p95 is not None else None,
    )
