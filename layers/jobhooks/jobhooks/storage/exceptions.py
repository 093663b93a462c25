"""The errors every listing of every store raises for a bad cursor or page size."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from jobhooks.exceptions import JobhooksError
from jobhooks.storage.clients import aws_error_code


class InvalidCursorError(JobhooksError):
    """The cursor was not issued by this listing (another tenant's, forged, or damaged)."""

    code = "invalid_cursor"
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    field = "cursor"

    def __init__(self, scope: str = "") -> None:
        """`scope` says what the listing is bound to, e.g. "for this tenant"."""
        returned = f"the cursor is not one this listing returned {scope}".rstrip()
        super().__init__(f"{returned}; start again without a cursor")


class InvalidPageSizeError(JobhooksError):
    code = "invalid_page_size"
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    field = "limit"

    def __init__(self, maximum: int) -> None:
        super().__init__(f"the page size must be between 1 and {maximum}")


class ClaimsBusyError(JobhooksError):
    code = "claims_busy"
    status = HTTPStatus.SERVICE_UNAVAILABLE

    def __init__(self) -> None:
        super().__init__(
            "the claims table is throttling reads right now; try again in a few seconds"
        )


class AwsServiceError(JobhooksError):
    """A DynamoDB, SQS or Secrets Manager call failed after botocore's own retries."""

    code = "aws_service_error"
    status = HTTPStatus.BAD_GATEWAY

    def __init__(self, operation: str, aws_code: str) -> None:
        super().__init__(
            f"{operation} failed with {aws_code}; the record is retried (check throttling, "
            "permissions and that the table or queue exists)"
        )
        self.operation = operation
        self.aws_code = aws_code

    @classmethod
    def from_client_error(cls, operation: str, error: Any) -> AwsServiceError:
        """From a botocore `ClientError`."""
        return cls(operation, aws_error_code(error))
