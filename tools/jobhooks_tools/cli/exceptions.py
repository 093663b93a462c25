"""Errors the CLI reports as one line on stderr with a non-zero exit code."""

from __future__ import annotations


class CliError(Exception):
    """A failure the user can act on: `message` says what went wrong and what to do."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
