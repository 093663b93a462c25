"""The base of every error a user or operator can hit and act on."""

from __future__ import annotations

from typing import ClassVar


class JobhooksError(Exception):
    """`code` is stable (API bodies, CLI output, logs); `message` says what to do."""

    code: ClassVar[str] = "jobhooks_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"error": self.code, "message": self.message}
