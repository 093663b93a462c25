"""Errors of the shovel. Each says what went wrong and what to do about it."""

from __future__ import annotations


class ShovelError(Exception):
    """Base class of the shovel's own errors."""


class ShovelSettingsError(ShovelError):
    """A flag or environment variable is missing or invalid; the message names it."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class ShovelTopologyError(ShovelError):
    """The broker refused the exchange, queues or bindings: a configuration conflict that
    retrying cannot fix (an existing queue of another type, missing permissions, no vhost)."""


class ShovelAuthenticationError(ShovelError):
    """The broker rejected the credentials of the AMQP URL."""
