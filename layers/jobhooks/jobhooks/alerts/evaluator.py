"""The scheduled evaluation of every alert rule: the use case behind the alerts function.

`AlertEvaluator.evaluate()`, in the order the data flows:

1. read every rule (`AlertRuleStore.every_rule`) and group them by tenant and window;
2. per group, ask the analytics engine the reviewed question `job_health_window`, scoped to
   the tenant (its pseudonym when the table is pseudonymized): one query answers every rule of
   the group, whatever jobs they name. The numbers are those of the analytics table, the same
   rows `jobhooks analytics` reads;
3. per rule, `evaluation.judge` the covered jobs against the thresholds: the state changes;
4. per change, notify (`job_health.degraded` / `job_health.recovered`) the tenant's
   subscriptions that list the type, and the operators;
5. save the rule's new states and recent alerts, conditional on its revision.

A notification that fails leaves the rule unsaved: the next evaluation finds the same change
and notifies again with the same key (the same delivery ids). A query still running when its
wait ends, or failing, skips its group until the next evaluation.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

from jobhooks.alerts.evaluation import (
    JobHealth,
    apply,
    health_from_record,
    judge,
    notification_data,
    notification_key,
)
from jobhooks.alerts.exceptions import AlertRuleConflictError
from jobhooks.alerts.model import AlertRule
from jobhooks.alerts.store import AlertRuleStore
from jobhooks.analytics.results import PendingQuery, QueryEngine
from jobhooks.analytics.window import QueryWindow
from jobhooks.notifications.exceptions import NotificationNotSentError
from jobhooks.storage.times import utc_now

QUESTION: Final = "job_health_window"
_log = logging.getLogger("jobhooks.alerts")


class Notify(Protocol):
    def notify(
        self,
        tenant_id: str,
        type: str,
        data: dict[str, Any],
        about_subscription: str | None = None,
        *,
        key: str | None = None,
    ) -> Any: ...


class AccountPseudonyms(Protocol):
    def pseudonym(self, column: str, value: str) -> str: ...


@dataclass
class EvaluationSummary:
    rules: int = 0
    queries: int = 0
    degraded: int = 0
    recovered: int = 0
    skipped_groups: int = 0
    unsaved_rules: int = 0
    notified: list[str] = field(default_factory=list)


class AlertEvaluator:
    def __init__(
        self,
        *,
        rules: AlertRuleStore,
        engine: QueryEngine,
        notifier: Notify,
        pseudonymizer: AccountPseudonyms | None = None,
        wait_seconds: float = 40,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.rules = rules
        self.engine = engine
        self.notifier = notifier
        self.pseudonymizer = pseudonymizer
        self.wait_seconds = wait_seconds
        self._clock = clock

    def evaluate(self) -> EvaluationSummary:
        now = self._clock()
        now = now.replace(microsecond=now.microsecond // 1000 * 1000)
        summary = EvaluationSummary()
        groups: dict[tuple[str, int], list[AlertRule]] = defaultdict(list)
        for rule in self.rules.every_rule():
            groups[(rule.tenant_id, rule.window_seconds)].append(rule)
            summary.rules += 1
        for (tenant_id, window_seconds), rules in sorted(groups.items()):
            start = now - timedelta(seconds=window_seconds)
            summary.queries += 1
            healths = self._job_health(tenant_id, start, now)
            if healths is None:
                summary.skipped_groups += 1
                continue
            for rule in rules:
                self._evaluate_rule(rule, healths, start, now, summary)
        _log.info(
            "alert rules evaluated",
            extra={
                "rules": summary.rules,
                "queries": summary.queries,
                "degraded": summary.degraded,
                "recovered": summary.recovered,
                "skipped_groups": summary.skipped_groups,
            },
        )
        return summary

    def _job_health(self, tenant_id: str, start: datetime, now: datetime) -> list[JobHealth] | None:
        account = (
            self.pseudonymizer.pseudonym("account_id", tenant_id)
            if self.pseudonymizer is not None
            else tenant_id
        )
        try:
            answer = self.engine.answer(
                QUESTION,
                QueryWindow(start, now, account_id=account),
                wait_seconds=self.wait_seconds,
            )
        except Exception as error:  # one tenant's failed query must not stop the others
            _log.warning(
                "job health query failed; its rules wait for the next evaluation",
                extra={
                    "tenant_id": tenant_id,
                    "error": getattr(error, "code", type(error).__name__),
                },
            )
            return None
        if isinstance(answer, PendingQuery):
            _log.warning(
                "job health query still running; its rules wait for the next evaluation",
                extra={"tenant_id": tenant_id, "query_id": answer.query_id},
            )
            return None
        return [health_from_record(record) for record in answer.records()]

    def _evaluate_rule(
        self,
        rule: AlertRule,
        healths: list[JobHealth],
        start: datetime,
        now: datetime,
        summary: EvaluationSummary,
    ) -> None:
        transitions = judge(rule, healths, now)
        if not transitions:
            return
        sent = []
        for transition in transitions:
            try:
                result = self.notifier.notify(
                    rule.tenant_id,
                    transition.type.value,
                    notification_data(rule, transition, start, now),
                    key=notification_key(rule, transition),
                )
            except NotificationNotSentError:
                # Unsaved: the next evaluation finds the change again and sends it, same key.
                summary.unsaved_rules += 1
                return
            sent.append((transition, len(getattr(result, "subscription_ids", ()))))
        try:
            self.rules.save_evaluation(apply(rule, sent, now), expected_revision=rule.revision)
        except AlertRuleConflictError:
            summary.unsaved_rules += 1  # removed or evaluated concurrently: nothing to keep
            return
        for transition, _ in sent:
            if transition.type.value.endswith("degraded"):
                summary.degraded += 1
            else:
                summary.recovered += 1
            summary.notified.append(f"{transition.type.value} {rule.rule_id} {transition.job_name}")
            _log.info(
                "job health changed",
                extra={
                    "notification_type": transition.type.value,
                    "tenant_id": rule.tenant_id,
                    "rule_id": rule.rule_id,
                    "job_name": transition.job_name,
                },
            )
