"""Errors of the job-health alerts capability (stable codes; the API answers with them)."""

from __future__ import annotations

from http import HTTPStatus

from jobhooks.exceptions import JobhooksError


class AlertError(JobhooksError):
    code = "alert_error"


class AlertRuleNotFoundError(AlertError):
    code = "alert_rule_not_found"
    status = HTTPStatus.NOT_FOUND

    def __init__(self, rule_id: str) -> None:
        super().__init__(
            f"no alert rule {rule_id!r} exists for this tenant; list the tenant's rules "
            "(jobhooks alerts list --tenant T) to find the right id"
        )
        self.rule_id = rule_id


class AlertRuleValidationError(AlertError):
    code = "invalid_alert_rule"
    status = HTTPStatus.UNPROCESSABLE_ENTITY


class InvalidThresholdError(AlertRuleValidationError):
    code = "invalid_alert_threshold"
    field = "failure_rate"


class InvalidWindowError(AlertRuleValidationError):
    code = "invalid_alert_window"
    field = "window_seconds"


class InvalidJobNamePatternError(AlertRuleValidationError):
    code = "invalid_alert_job_name"
    field = "job_name"


class TooManyAlertRulesError(AlertError):
    code = "too_many_alert_rules"
    status = HTTPStatus.CONFLICT

    def __init__(self, tenant_id: str, limit: int) -> None:
        super().__init__(
            f"tenant {tenant_id!r} has {limit} alert rules, the most a tenant may have; remove "
            "one first (a pattern such as billing-* covers many jobs)"
        )


class AlertRuleConflictError(AlertError):
    code = "alert_rule_conflict"
    status = HTTPStatus.CONFLICT

    def __init__(self, rule_id: str) -> None:
        super().__init__(f"alert rule {rule_id!r} changed concurrently; try again")
