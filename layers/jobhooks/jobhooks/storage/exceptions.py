"""The errors every listing of every store raises for a bad cursor or page size."""

from __future__ import annotations

from http import HTTPStatus

from jobhooks.exceptions import JobhooksError


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
