"""Errors of the analytics capability: each has a stable `code`, the HTTP `status` of the API's
answer (`jobhooks.exceptions`) and a sentence saying what to do."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from jobhooks.exceptions import JobhooksError


class AnalyticsError(JobhooksError):
    code = "analytics_error"


class AnalyticsWriteError(AnalyticsError):
    """Rows were not accepted by the sink after a bounded number of attempts.

    The ingest function sends them to the spill queue and completes the events
    (`jobhooks.spill`): their webhooks already went out, and a retry would POST them again.
    Without a spill queue (the management API's replays), or when it refuses too, the record is
    not completed: its claim is released and SQS delivers it again. Some rows of the call may
    have been written already: the outcomes view reads one row per `event_id`, so a second
    copy changes no answer.
    """

    code = "analytics_write_failed"
    # A quarantine replay through the API writes a row too: the sink is the dependency that
    # failed.
    status = HTTPStatus.SERVICE_UNAVAILABLE

    def __init__(self, failed: int, total: int, cause: str) -> None:
        super().__init__(
            # The sink raises this for every writer (ingest, the spill function, a replay) and
            # cannot know which: what happens to the rows next is the writer's to log.
            f"{failed} of {total} analytics rows were not written ({cause}) after the sink's "
            "attempts; they are not dropped: the writer keeps them for another attempt. If it "
            'persists, check the sink: docs/analytics.md, "When a row cannot be written"'
        )
        self.failed = failed
        self.total = total
        self.cause = cause


class AnalyticsRowTooLargeError(AnalyticsError):
    """One row is larger than a Firehose record may be: nothing a retry can change."""

    code = "analytics_row_too_large"

    def __init__(self, event_id: str, size: int, limit: int) -> None:
        super().__init__(
            f"the analytics row of event {event_id[:200]!r} is {size} bytes, above the "
            f"{limit}-byte record limit; an identifier of that event is far longer than any "
            "producer sends: inspect the message (jobhooks dlq list)"
        )
        self.event_id = event_id
        self.size = size


class PseudonymizationKeyError(AnalyticsError):
    """The pseudonymization key is missing, unreadable or too short."""

    code = "pseudonymization_key_unavailable"
    status = HTTPStatus.SERVICE_UNAVAILABLE

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"the analytics pseudonymization key is unavailable ({detail}); no row is written "
            "without it: check the secret JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_SECRET_ARN names "
            "(or JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_KEY locally) and the function's grant "
            "to read it"
        )


class UnknownQuestionError(AnalyticsError):
    code = "unknown_question"
    status = HTTPStatus.NOT_FOUND

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(
            f"there is no analytics question {name[:100]!r}; the questions are: {', '.join(known)}"
        )
        self.name = name


class AnalyticsNotConfiguredError(AnalyticsError):
    code = "analytics_not_configured"
    status = HTTPStatus.SERVICE_UNAVAILABLE

    def __init__(self) -> None:
        super().__init__(
            "analytics queries are not configured: set JOBHOOKS_ANALYTICS_WORKGROUP and "
            "JOBHOOKS_ANALYTICS_DATABASE (a deployed stack) or JOBHOOKS_ANALYTICS_DIR (local)"
        )


class InvalidWindowError(AnalyticsError):
    code = "invalid_window"
    status = HTTPStatus.UNPROCESSABLE_ENTITY

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class QueryFailedError(AnalyticsError):
    """The engine ran the query and it failed, or was cancelled (e.g. by the scan limit)."""

    code = "query_failed"
    status = HTTPStatus.BAD_GATEWAY


class QueryNotFoundError(AnalyticsError):
    code = "query_not_found"
    status = HTTPStatus.NOT_FOUND

    def __init__(self, query_id: str) -> None:
        super().__init__(
            f"no analytics query {query_id[:128]!r} exists in this stack's workgroup; start the "
            "question again"
        )
        self.query_id = query_id


class QuestionFileError(AnalyticsError):
    """A reviewed .sql file does not have the header or placeholders every question needs."""

    code = "question_file_invalid"


def aws_error_code(error: BaseException) -> str:
    """The AWS error code of a botocore `ClientError`, also when it is the cause of another
    error (Powertools wraps them); else the class name of the innermost error."""
    cause = error.__cause__ or error.__context__
    for candidate in (error, cause):
        response: Any = getattr(candidate, "response", None)
        if isinstance(response, dict):
            return str(response.get("Error", {}).get("Code", "Unknown"))
    return type(cause or error).__name__
