"""Errors of the management operations, and the one mapping of every error to an API answer.

`api_error_for` turns any exception an operation can raise into an `ApiError`. A
`JobhooksError` (this package's, the stores', the network policy's) says it all itself: its
`code`, its HTTP `status`, the request `field` at fault and a `message` that says what to do
(`jobhooks.exceptions`). botocore's errors become 502s; anything else is a 500 that reveals
nothing. The API writes it as `{"error": {"code", "message", "field"}}`; the CLI prints
`code: message`. Messages never carry a secret or a whole webhook URL (URLs often hold tokens).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Final

from jobhooks.exceptions import JobhooksError
from jobhooks.settings import ConfigurationError

INTERNAL_ERROR: Final = "internal_error"
INVALID_REQUEST: Final = "invalid_request"
NOT_FOUND: Final = "not_found"

# Where a request validation error was found; the field path after it is what users wrote.
_LOCATIONS: Final = ("body", "query", "path", "header")


class ManagementError(JobhooksError):
    code = "management_error"


class RequestBodyError(ManagementError):
    """The request's body could not be read (`jobhooks.management.request_body`)."""


class InvalidJsonError(RequestBodyError):
    code = "invalid_json"
    status = HTTPStatus.BAD_REQUEST
    field = "body"

    def __init__(self, reason: str) -> None:
        super().__init__(f"{reason}; send a JSON object encoded as UTF-8")


class UnsupportedMediaTypeError(RequestBodyError):
    code = "unsupported_media_type"
    status = HTTPStatus.UNSUPPORTED_MEDIA_TYPE

    def __init__(self, reason: str) -> None:
        super().__init__(f"{reason}; send JSON with Content-Type: application/json")


class InvalidDeliveryFilterError(ManagementError):
    code = "invalid_delivery_filter"
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    field = "subscription_id"

    def __init__(self) -> None:
        super().__init__(
            "give exactly one of subscription_id (a subscription's deliveries, newest first) "
            "or event_id (an event's deliveries, one per subscription)"
        )


class EventPayloadUnavailableError(ManagementError):
    """The event's record (and with it the webhook body) is no longer kept."""

    code = "event_payload_unavailable"
    status = HTTPStatus.CONFLICT

    def __init__(self, event_id: str) -> None:
        super().__init__(
            f"the webhook body of event {event_id!r} is no longer kept (events are kept for "
            "JOBHOOKS_DEDUP_RETENTION_DAYS plus the ingest queue's retention, and at least 30 "
            "days); a delivery still parked in the delivery "
            "dead-letter queue can be redriven with `jobhooks dlq redrive`"
        )
        self.event_id = event_id


class SubscriptionNotActiveError(ManagementError):
    """Recover was asked for a disabled subscription: its deliveries would only be skipped."""

    code = "subscription_not_active"
    status = HTTPStatus.CONFLICT

    def __init__(self, subscription_id: str) -> None:
        super().__init__(
            f"subscription {subscription_id!r} is disabled: enable it first (`jobhooks webhooks "
            "update SUBSCRIPTION_ID --enable`), then recover; its deliveries are kept meanwhile"
        )
        self.subscription_id = subscription_id


class InvalidSinceError(ManagementError):
    code = "invalid_since"
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    field = "since"

    def __init__(self, problem: str) -> None:
        super().__init__(
            f"{problem}; give an ISO 8601 time with a time zone, not in the future, e.g. "
            "2026-12-06T01:00:00Z"
        )


class RedriveUnavailableError(ManagementError):
    """SQS refused to start a message-move task (one is running, or the queue is no DLQ)."""

    code = "redrive_unavailable"
    status = HTTPStatus.CONFLICT

    def __init__(self, queue: str, aws_code: str) -> None:
        super().__init__(
            f"SQS did not start moving the {queue} dead-letter queue back ({aws_code}); only one "
            "move task may run per queue: wait for it (`jobhooks dlq list` shows it) and retry"
        )
        self.queue = queue
        self.aws_code = aws_code


class TenantSendLimitError(ManagementError):
    """A tenant's callers made more replays and test sends this minute than its share."""

    code = "too_many_sends"
    status = HTTPStatus.TOO_MANY_REQUESTS

    def __init__(self, limit: int, retry_after: int) -> None:
        super().__init__(
            f"this tenant may replay or test-send {limit} times a minute; retry after "
            f"{retry_after} s (the Retry-After header)"
        )
        self.retry_after = retry_after


class ManagementMisconfiguredError(ConfigurationError):
    """A setting the management API (or the ingest path it replays through) needs is bad."""

    def __init__(self, problems: str) -> None:
        super().__init__(f"the management API is misconfigured: {problems}")


@dataclass(frozen=True, slots=True)
class ApiError:
    """What the API answers for an error."""

    status: int
    code: str
    message: str
    field: str | None = None
    retry_after: int | None = None
    """Seconds, for the Retry-After header of a 429."""

    def body(self) -> dict[str, dict[str, str]]:
        error = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        return {"error": error}


def with_field(field: str | None, message: str) -> str:
    """`field: message`, so that the message alone names the field at fault."""
    return f"{field}: {message}" if field else message


def api_error_for(error: BaseException) -> ApiError:
    """The API answer for `error`; anything unforeseen is a 500 that reveals nothing."""
    if isinstance(error, JobhooksError):
        retry_after = getattr(error, "retry_after", None)
        return ApiError(
            int(error.status),
            str(error.code),
            with_field(error.field, error.message),
            error.field,
            retry_after if isinstance(retry_after, int) else None,
        )
    # botocore loads with the first AWS client; an error of its own implies it is loaded.
    from botocore.exceptions import BotoCoreError, ClientError

    if isinstance(error, ClientError):
        aws_code = str(error.response.get("Error", {}).get("Code", "Unknown"))
        operation = getattr(error, "operation_name", "an AWS call")
        return ApiError(
            HTTPStatus.BAD_GATEWAY,
            "aws_error",
            f"{operation} failed with {aws_code}; retry, and check the function's permissions "
            "and that the stack's tables and queues exist",
        )
    if isinstance(error, BotoCoreError):
        return ApiError(
            HTTPStatus.BAD_GATEWAY,
            "aws_unreachable",
            f"an AWS service could not be reached ({type(error).__name__}); retry shortly",
        )
    return ApiError(
        HTTPStatus.INTERNAL_SERVER_ERROR,
        INTERNAL_ERROR,
        "the management API failed unexpectedly; the function's log has the details "
        "(search it for this request id)",
    )


def api_error_for_invalid_request(errors: Sequence[Mapping[str, Any]]) -> ApiError:
    """The answer to a request the Event Handler's validation refused (pydantic's errors).

    Every problem is named by its field path and pydantic's sentence; the input itself is never
    echoed (it may be a secret pasted into the wrong field).
    """
    problems: list[str] = []
    fields: list[str] = []
    for error in errors:
        location = [str(part) for part in error.get("loc", ())]
        path = location[1:] if location and location[0] in _LOCATIONS else location
        name, field = ".".join(path), path[0] if path else None
        kind = str(error.get("type", ""))
        if kind == "json_invalid":
            name, field, sentence = "body", "body", "the request body is not valid JSON"
        elif not path and kind == "missing":
            name, field, sentence = "body", "body", "a JSON request body is required"
        elif not path and kind == "model_attributes_type":
            name, field, sentence = "body", "body", "the request body must be a JSON object"
        else:
            sentence = str(error.get("msg", "is invalid")).rstrip(".")
        problems.append(f"{name or 'request'}: {sentence}")
        fields.append(field or "request")
    return ApiError(
        HTTPStatus.UNPROCESSABLE_ENTITY,
        INVALID_REQUEST,
        "; ".join(problems) or "the request is invalid",
        fields[0] if fields else None,
    )


def api_error_for_unknown_route(method: str, path: str) -> ApiError:
    return ApiError(
        HTTPStatus.NOT_FOUND,
        NOT_FOUND,
        f"no route {method} {path[:200]}; the routes are listed in docs/api.md",
    )
