"""Errors of the delivery capability.

Each refusal carries a stable `code` (it appears in API error bodies, CLI output, attempt logs
and metrics), the HTTP `status` and request `field` of the API's answer (`jobhooks.exceptions`)
and a message that says what to do. Messages name the host and the offending address, never
the full URL: webhook URLs often carry tokens in their path or query.
"""

from __future__ import annotations

from enum import StrEnum
from http import HTTPStatus

from jobhooks.exceptions import JobhooksError


class DeliveryError(JobhooksError):
    code = "delivery_error"


class DeliveryNotFoundError(DeliveryError):
    code = "delivery_not_found"
    status = HTTPStatus.NOT_FOUND

    def __init__(self, delivery_id: str) -> None:
        super().__init__(
            f"no delivery {delivery_id!r} is recorded for this tenant (deliveries are kept for "
            "JOBHOOKS_ATTEMPT_LOG_DAYS days); list the subscription's or the event's deliveries "
            "to find the right id"
        )
        self.delivery_id = delivery_id


class DeliveryLogBusyError(DeliveryError):
    code = "deliveries_busy"
    status = HTTPStatus.SERVICE_UNAVAILABLE

    def __init__(self) -> None:
        super().__init__(
            "the attempt log is throttling reads right now; try again in a few seconds"
        )


class RecoveryIncompleteError(DeliveryError):
    """The delivery queue refused some of a recovery's tasks; what it took is marked sent."""

    code = "recovery_incomplete"
    status = HTTPStatus.SERVICE_UNAVAILABLE

    def __init__(self, refused: int, sent: int) -> None:
        super().__init__(
            f"the delivery queue refused {refused} deliveries ({sent} were sent); run the same "
            "recover again: what was sent is not sent twice"
        )
        self.refused = refused
        self.sent = sent


class RefusalCode(StrEnum):
    """Why the network policy refused a webhook URL (docs/network-policy.md)."""

    URL_INVALID = "url_invalid"
    URL_SCHEME_NOT_ALLOWED = "url_scheme_not_allowed"
    URL_CREDENTIALS_NOT_ALLOWED = "url_credentials_not_allowed"
    URL_HOST_NOT_CANONICAL = "url_host_not_canonical"
    URL_HOST_UNRESOLVABLE = "url_host_unresolvable"
    ADDRESS_NOT_PUBLIC = "address_not_public"


class RefusedUrlError(DeliveryError):
    """The network policy will not let the bridge connect to this URL.

    `code` is the refusal's (`RefusalCode`). `host`, `address` and `category` are set when they
    are known: `address` is the refused address and `category` what kind of address it is
    (e.g. "private"), both only for `address_not_public`.
    """

    code: RefusalCode
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    field = "url"

    def __init__(
        self,
        code: RefusalCode,
        message: str,
        *,
        host: str | None = None,
        address: str | None = None,
        category: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.host = host
        self.address = address
        self.category = category
