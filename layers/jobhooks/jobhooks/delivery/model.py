"""What delivery works with: attempts, deliveries, their statuses, and why an attempt failed.

Plain data, no AWS or HTTP client: the use case (`deliver`), its ports (`ports`), the attempt
log's DynamoDB adapter (`attempt_log`), the HTTP client (`http_client`), the metrics and the
management API all speak in these types.
"""

from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ConfigDict, Field

from jobhooks.frozen_record import FrozenRecord
from jobhooks.moved_names import moved_name

if TYPE_CHECKING:
    from jobhooks.delivery.batch import DeliveryMessage as DeliveryMessage
    from jobhooks.delivery.pages import DeliveryPage as DeliveryPage
    from jobhooks.delivery.sent_webhook import SentWebhook as SentWebhook

# The attempt log keeps this much of a response body: DynamoDB bills writes per started KiB of
# the whole item, and a first-attempt success with a short excerpt stays a one-unit write; a
# failure's body is what someone debugs, so it keeps more (docs/delivery.md).
SUCCESS_RESPONSE_BYTES: Final = 256
FAILURE_RESPONSE_BYTES: Final = 1024
# Receivers are told to answer fast; a longer wait only holds a Lambda (and its batch) hostage.
# Here rather than in the HTTP client, so that the settings that bound a POST's timeout do not
# import the client (urllib3) into a function's cold start.
MAX_TOTAL_TIMEOUT_SECONDS: Final = 15.0

# -- one POST ------------------------------------------------------------------------------------


class PostError(StrEnum):
    """Why an attempt ended without an HTTP status from the receiver."""

    DNS_ERROR = "dns_error"
    ADDRESS_NOT_PUBLIC = "address_not_public"
    URL_NOT_ALLOWED = "url_not_allowed"  # the other refusal codes of the network policy
    CONNECT_ERROR = "connect_error"
    TLS_ERROR = "tls_error"
    TIMEOUT = "timeout"
    PROTOCOL_ERROR = "protocol_error"


class PostResult(FrozenRecord):
    """One attempt: a status code, or an `error` with a `detail` sentence, never both.

    `response_excerpt` is at most `RESPONSE_EXCERPT_BYTES` of the body (as UTF-8), and only a
    prefix when the body was longer or the deadline cut it short. A 3xx is a result like any
    other; whether it counts as delivered is the caller's decision (`succeeded` says no).
    """

    __slots__ = (
        "address",
        "detail",
        "error",
        "latency_ms",
        "response_excerpt",
        "retry_after_seconds",
        "status_code",
    )
    status_code: int | None
    error: PostError | None
    detail: str | None
    latency_ms: int
    response_excerpt: str
    retry_after_seconds: int | None
    address: str | None  # where the request went; None when no connection was made

    def __init__(
        self,
        status_code: int | None,
        error: PostError | None,
        detail: str | None,
        latency_ms: int,
        response_excerpt: str = "",
        retry_after_seconds: int | None = None,
        address: str | None = None,
    ) -> None:
        object.__setattr__(self, "status_code", status_code)
        object.__setattr__(self, "error", error)
        object.__setattr__(self, "detail", detail)
        object.__setattr__(self, "latency_ms", latency_ms)
        object.__setattr__(self, "response_excerpt", response_excerpt)
        object.__setattr__(self, "retry_after_seconds", retry_after_seconds)
        object.__setattr__(self, "address", address)

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


# -- attempts and deliveries --------------------------------------------------------------------


class DeliveryStatus(StrEnum):
    PENDING = "pending"
    """An attempt failed and another one is scheduled."""
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    """Ended without a chance to deliver: the subscription was deleted, or is another tenant's."""
    PARKED = "parked"
    """In the delivery DLQ (attempts exhausted, or the subscription is disabled): replayable."""
    GONE = "gone"
    """The receiver answered 410 Gone; its subscription was disabled."""
    SKIPPED = "skipped"
    """Not sent: the subscription was disabled when the event came (`skipped`). Kept so that
    `recover` can send it once the endpoint is back (`recovery`)."""


class DeliveryAttempt(BaseModel):
    """One POST (or a try that failed before sending): a status code or an error class."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    n: int
    """The attempt number: 1 for ingest's first attempt; in the deliver function, the task's SQS
    receive count plus the attempts made before it was enqueued (`DeliveryTask.attempts_made`)."""
    at: datetime
    status_code: int | None = None
    error: str | None = None
    """Why no status came back: the HTTP client's error class (`timeout`, `connect_error`, ...)
    or `signing_error` when the subscription's secrets could not be read."""
    latency_ms: int = 0
    response: str = ""
    """The start of the response body, cut to a few hundred bytes (module docstring)."""

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    def bounded(self) -> "DeliveryAttempt":
        """This attempt with its excerpt cut to what the log keeps."""
        limit = SUCCESS_RESPONSE_BYTES if self.succeeded else FAILURE_RESPONSE_BYTES
        cut = _cut_utf8(self.response, limit)
        return self if cut == self.response else self.model_copy(update={"response": cut})


class DeliveryRecord(BaseModel):
    """A delivery as the log holds it; safe to return from the API (no payload, no secret)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    delivery_id: str
    event_id: str
    webhook_id: str
    subscription_id: str
    tenant_id: str
    event_type: str
    status: DeliveryStatus
    status_reason: str | None = None
    attempts: tuple[DeliveryAttempt, ...] = ()
    attempt_count: int = 0
    created_at: datetime
    updated_at: datetime
    succeeded_at: datetime | None = None
    expires_at: datetime
    succeeded_message_id: str | None = Field(default=None, exclude=True, repr=False)
    """The SQS message whose POST succeeded: a redelivered replay task is not POSTed again."""

    @property
    def last_attempt(self) -> DeliveryAttempt | None:
        return self.attempts[-1] if self.attempts else None


# -- outcomes -----------------------------------------------------------------------------------


class FailureClass(StrEnum):
    """Why an attempt failed: the `failure_class` metric dimension, so a small closed set."""

    HTTP_3XX = "http_3xx"
    HTTP_4XX = "http_4xx"
    HTTP_410 = "http_410"
    HTTP_429 = "http_429"
    HTTP_5XX = "http_5xx"
    DNS_ERROR = PostError.DNS_ERROR.value
    ADDRESS_NOT_PUBLIC = PostError.ADDRESS_NOT_PUBLIC.value
    URL_NOT_ALLOWED = PostError.URL_NOT_ALLOWED.value
    CONNECT_ERROR = PostError.CONNECT_ERROR.value
    TLS_ERROR = PostError.TLS_ERROR.value
    TIMEOUT = PostError.TIMEOUT.value
    PROTOCOL_ERROR = PostError.PROTOCOL_ERROR.value
    SIGNING_ERROR = "signing_error"
    """The subscription's secrets could not be read (KMS, a damaged item): nothing was sent."""


def failure_class_of(attempt: DeliveryAttempt) -> FailureClass | None:
    """None for a success."""
    code = attempt.status_code
    if code is not None:
        if 200 <= code < 300:
            return None
        if code == 410:
            return FailureClass.HTTP_410
        if code == 429:
            return FailureClass.HTTP_429
        if 300 <= code < 400:
            return FailureClass.HTTP_3XX
        if 400 <= code < 500:
            return FailureClass.HTTP_4XX
        if code >= 500:
            return FailureClass.HTTP_5XX
        return FailureClass.PROTOCOL_ERROR
    try:
        return FailureClass(attempt.error or "")
    except ValueError:
        return FailureClass.PROTOCOL_ERROR


def result_label(attempt: DeliveryAttempt) -> str:
    """`http_503`, `timeout`, ...: how an attempt ended, in a word fit for logs and attributes."""
    if attempt.status_code is not None:
        return f"http_{attempt.status_code}"
    return attempt.error or FailureClass.PROTOCOL_ERROR.value


class DeliveryResult(StrEnum):
    SUCCEEDED = "succeeded"
    DUPLICATE = "duplicate"
    """Already delivered (or already settled by a concurrent copy): acked without a POST."""
    RETRY_SCHEDULED = "retry_scheduled"
    PARKED = "parked"
    GONE = "gone"
    DROPPED = "dropped"
    """The subscription no longer exists or is another tenant's: recorded as failed, acked."""
    SKIPPED = "skipped"
    """The subscription is disabled: recorded as skipped without a POST, acked."""
    NOT_STARTED = "not_started"
    """Too little of the invocation was left to make the attempt; SQS brings the task back."""


class DeliveryOutcome(FrozenRecord):
    """What one delivery task came to: its result, the attempt made, when to retry."""

    __slots__ = (
        "attempt",
        "delivery_id",
        "disabled_subscription",
        "failure_class",
        "result",
        "retry_in_seconds",
    )
    result: DeliveryResult
    delivery_id: str | None
    attempt: DeliveryAttempt | None
    failure_class: FailureClass | None
    retry_in_seconds: int | None
    disabled_subscription: bool
    """A 410 whose settle disabled the subscription (not one a concurrent 410 disabled)."""

    def __init__(
        self,
        result: DeliveryResult,
        delivery_id: str | None = None,
        attempt: DeliveryAttempt | None = None,
        failure_class: FailureClass | None = None,
        retry_in_seconds: int | None = None,
        disabled_subscription: bool = False,
    ) -> None:
        object.__setattr__(self, "result", result)
        object.__setattr__(self, "delivery_id", delivery_id)
        object.__setattr__(self, "attempt", attempt)
        object.__setattr__(self, "failure_class", failure_class)
        object.__setattr__(self, "retry_in_seconds", retry_in_seconds)
        object.__setattr__(self, "disabled_subscription", disabled_subscription)

    @property
    def acked(self) -> bool:
        """False: report the record as a batch item failure so SQS delivers it again."""
        return self.result not in (DeliveryResult.RETRY_SCHEDULED, DeliveryResult.NOT_STARTED)


def _cut_utf8(text: str, limit: int) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode("utf-8", errors="ignore")


# Names that live in modules of their own, still importable from here: `pages` (the management
# reads') and `sent_webhook` (the test send's), so that no delivery function's cold start defines
# them, and `batch` (the deliver function's own), so that ingest's does not.
_MOVED: Final = {
    "DeliveryPage": "jobhooks.delivery.pages",
    "DeliveryMessage": "jobhooks.delivery.batch",
    "SentWebhook": "jobhooks.delivery.sent_webhook",
}


def __getattr__(name: str) -> Any:
    return moved_name(__name__, name, _MOVED)
