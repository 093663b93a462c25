"""The base of every error a user or operator can hit and act on.

Each capability keeps its errors in its own `exceptions.py` (`subscriptions`, `ingest`,
`delivery`, `management`, `analytics`, `storage`), every one a `JobhooksError` whose class says:

- `code`: stable, for API bodies, CLI output, logs and metrics (`subscription_not_found`);
- `status`: the HTTP status the management API answers with (500 unless the caller can act);
- `field`: the request field at fault, when there is one (`url`, `cursor`, `limit`).

The management API's one error mapping (`jobhooks.management.exceptions.api_error_for`) reads
these three and the instance's `message`: a sentence that says what to do, which never holds a
secret or a whole webhook URL (URLs often carry tokens).
"""

from __future__ import annotations

from http import HTTPStatus


class JobhooksError(Exception):
    code: str = "jobhooks_error"
    status: int = HTTPStatus.INTERNAL_SERVER_ERROR
    field: str | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"error": self.code, "message": self.message}


class ConfigurationError(JobhooksError, ValueError):
    """The process cannot start: a variable is missing or invalid (the message says which)."""

    code = "configuration_error"
    status = HTTPStatus.SERVICE_UNAVAILABLE

    def __str__(self) -> str:
        # What the cold start's traceback shows: the variable's name first.
        return self.message
