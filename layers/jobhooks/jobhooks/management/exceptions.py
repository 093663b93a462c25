"""Errors of the management operations, and the one mapping of every error to an API answer.

`api_error_for` turns any exception an operation can raise (its own, the subscription store's,
the network policy's, the ingest stores', botocore's) into an `ApiError`: the HTTP status, a
stable `code` and a sentence that says what to do, plus the request field at fault when there
is one. The API writes it as `{"error": {"code", "message", "field"}}`; the CLI prints
`code: message`. Messages never carry a secret or a whole webhook URL (URLs often hold tokens).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, ClassVar, Final

from botocore.exceptions import BotoCoreError, ClientError

from jobhooks.delivery.attempt_log import (
    DeliveryLogBusyError,
    DeliveryLogError,
    DeliveryNotFoundError,
    InvalidDeliveryCursorError,
    InvalidDeliveryPageSizeError,
)
from jobhooks.delivery.exceptions import RefusedUrlError
from jobhooks.errors import JobhooksError
from jobhooks.ingest.exceptions import (
    AwsServiceError,
    EventInProgressError,
    EventNotFoundError,
    IngestError,
    QuarantinedMessageIncompleteError,
    QuarantinedMessageNotFoundError,
)
from jobhooks.ingest.exceptions import (
    InvalidCursorError as IngestInvalidCursorError,
)
from jobhooks.ingest.exceptions import (
    InvalidPageSizeError as IngestInvalidPageSizeError,
)
from jobhooks.settings import ConfigurationError
from jobhooks.subscriptions.exceptions import (
    InvalidCursorError,
    InvalidDescriptionError,
    InvalidEventTypeError,
    InvalidGracePeriodError,
    InvalidPageSizeError,
    InvalidStatusError,
    InvalidTenantIdError,
    InvalidUrlError,
    KeyServiceError,
    KmsKeyNotConfiguredError,
    SecretDecryptionError,
    SubscriptionConflictError,
    SubscriptionError,
    SubscriptionNotFoundError,
    SubscriptionValidationError,
)

INTERNAL_ERROR: Final = "internal_error"
INVALID_REQUEST: Final = "invalid_request"
NOT_FOUND: Final = "not_found"

# Where a request validation error was found; the field path after it is what users wrote.
_LOCATIONS: Final = ("body", "query", "path", "header")


class ManagementError(Exception):
    """Base class: `code` is stable, `message` a sentence for the operator, `status` HTTP."""

    code: ClassVar[str] = "management_error"
    status: ClassVar[HTTPStatus] = HTTPStatus.INTERNAL_SERVER_ERROR

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class RequestBodyError(ManagementError):
    """The request's body could not be read (`jobhooks.management.request_body`)."""


class InvalidJsonError(RequestBodyError):
    code = "invalid_json"
    status = HTTPStatus.BAD_REQUEST

    def __init__(self, reason: str) -> None:
        super().__init__(f"{reason}; send a JSON object encoded as UTF-8", field="body")


class UnsupportedMediaTypeError(RequestBodyError):
    code = "unsupported_media_type"
    status = HTTPStatus.UNSUPPORTED_MEDIA_TYPE

    def __init__(self, reason: str) -> None:
        super().__init__(f"{reason}; send JSON with Content-Type: application/json")


class InvalidDeliveryFilterError(ManagementError):
    code = "invalid_delivery_filter"
    status = HTTPStatus.UNPROCESSABLE_ENTITY

    def __init__(self) -> None:
        super().__init__(
            "give exactly one of subscription_id (a subscription's deliveries, newest first) "
            "or event_id (an event's deliveries, one per subscription)",
            field="subscription_id",
        )


class EventPayloadUnavailableError(ManagementError):
    """The event's record (and with it the webhook body) is past the dedup retention."""

    code = "event_payload_unavailable"
    status = HTTPStatus.CONFLICT

    def __init__(self, event_id: str) -> None:
        super().__init__(
            f"the webhook body of event {event_id!r} is no longer kept (events are kept for "
            "JOBHOOKS_DEDUP_RETENTION_DAYS); a delivery still parked in the delivery "
            "dead-letter queue can be redriven with `jobhooks dlq redrive`"
        )
        self.event_id = event_id


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


@dataclass(frozen=True, slots=True)
class ApiError:
    """What the API answers for an error."""

    status: int
    code: str
    message: str
    field: str | None = None

    def body(self) -> dict[str, dict[str, str]]:
        error = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        return {"error": error}


# The request field each input error of the subscription store is about.
_SUBSCRIPTION_FIELDS: Final[dict[type[SubscriptionError], str]] = {
    InvalidUrlError: "url",
    InvalidEventTypeError: "event_types",
    InvalidTenantIdError: "tenant_id",
    InvalidDescriptionError: "description",
    InvalidStatusError: "status",
    InvalidGracePeriodError: "grace_seconds",
    InvalidCursorError: "cursor",
    InvalidPageSizeError: "limit",
}

_DELIVERY_LOG_STATUSES: Final[dict[type[DeliveryLogError], tuple[HTTPStatus, str | None]]] = {
    DeliveryNotFoundError: (HTTPStatus.NOT_FOUND, None),
    DeliveryLogBusyError: (HTTPStatus.SERVICE_UNAVAILABLE, None),
    InvalidDeliveryCursorError: (HTTPStatus.UNPROCESSABLE_ENTITY, "cursor"),
    InvalidDeliveryPageSizeError: (HTTPStatus.UNPROCESSABLE_ENTITY, "limit"),
}

_INGEST_STATUSES: Final[dict[type[IngestError], tuple[HTTPStatus, str | None]]] = {
    EventNotFoundError: (HTTPStatus.NOT_FOUND, None),
    QuarantinedMessageNotFoundError: (HTTPStatus.NOT_FOUND, None),
    EventInProgressError: (HTTPStatus.CONFLICT, None),
    QuarantinedMessageIncompleteError: (HTTPStatus.CONFLICT, None),
    IngestInvalidCursorError: (HTTPStatus.UNPROCESSABLE_ENTITY, "cursor"),
    IngestInvalidPageSizeError: (HTTPStatus.UNPROCESSABLE_ENTITY, "limit"),
    AwsServiceError: (HTTPStatus.BAD_GATEWAY, None),
}


def with_field(field: str | None, message: str) -> str:
    """`field: message`, so that the message alone names the field at fault."""
    return f"{field}: {message}" if field else message


def api_error_for(error: BaseException) -> ApiError:
    """The API answer for `error`; anything unforeseen is a 500 that reveals nothing."""
    if isinstance(error, ManagementError):
        return ApiError(
            error.status, error.code, with_field(error.field, error.message), error.field
        )
    if isinstance(error, JobhooksError) and hasattr(type(error), "status"):
        # Errors that carry their own answer (`code`, `status` and `field` class attributes).
        status = getattr(type(error), "status")  # noqa: B009 - not every JobhooksError has one
        field = getattr(error, "field", None)
        return ApiError(int(status), error.code, with_field(field, error.message), field)
    if isinstance(error, RefusedUrlError):
        return ApiError(
            HTTPStatus.UNPROCESSABLE_ENTITY,
            error.code.value,
            with_field("url", error.message),
            "url",
        )
    if isinstance(error, SubscriptionError):
        return _subscription_error(error)
    if isinstance(error, DeliveryLogError):
        status, field = _DELIVERY_LOG_STATUSES.get(
            type(error), (HTTPStatus.INTERNAL_SERVER_ERROR, None)
        )
        return ApiError(status, error.code, with_field(field, error.message), field)
    if isinstance(error, IngestError):
        status, field = _INGEST_STATUSES.get(type(error), (HTTPStatus.INTERNAL_SERVER_ERROR, None))
        return ApiError(status, error.code, with_field(field, error.message), field)
    own_status = getattr(error, "status", None)
    if isinstance(error, JobhooksError) and isinstance(own_status, int):
        # Errors that carry their own answer (`code`, `status`, `field`), as analytics' do.
        own_field = getattr(error, "field", None)
        return ApiError(own_status, error.code, with_field(own_field, error.message), own_field)
    if isinstance(error, ConfigurationError):
        return ApiError(
            HTTPStatus.SERVICE_UNAVAILABLE,
            "configuration_error",
            f"the management API is misconfigured: {error}",
        )
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


def _subscription_error(error: SubscriptionError) -> ApiError:
    if isinstance(error, SubscriptionValidationError):
        field = next(
            (name for kind, name in _SUBSCRIPTION_FIELDS.items() if isinstance(error, kind)),
            None,
        )
        return ApiError(
            HTTPStatus.UNPROCESSABLE_ENTITY, error.code, with_field(field, error.message), field
        )
    if isinstance(error, SubscriptionNotFoundError):
        return ApiError(HTTPStatus.NOT_FOUND, error.code, error.message)
    if isinstance(error, SubscriptionConflictError | SecretDecryptionError):
        return ApiError(HTTPStatus.CONFLICT, error.code, error.message)
    if isinstance(error, KmsKeyNotConfiguredError):
        return ApiError(HTTPStatus.SERVICE_UNAVAILABLE, error.code, error.message)
    if isinstance(error, KeyServiceError):
        return ApiError(HTTPStatus.BAD_GATEWAY, error.code, error.message)
    return ApiError(HTTPStatus.INTERNAL_SERVER_ERROR, error.code, error.message)


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
