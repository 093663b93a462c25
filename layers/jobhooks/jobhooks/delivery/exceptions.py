"""Errors of the delivery capability.

Each refusal carries a stable `code` (it appears in API error bodies, CLI output, attempt logs
and metrics) and a message that says what to do. Messages name the host and the offending
address, never the full URL: webhook URLs often carry tokens in their path or query.
"""

from __future__ import annotations

from enum import StrEnum


class RefusalCode(StrEnum):
    """Why the network policy refused a webhook URL (docs/network-policy.md)."""

    URL_INVALID = "url_invalid"
    URL_SCHEME_NOT_ALLOWED = "url_scheme_not_allowed"
    URL_CREDENTIALS_NOT_ALLOWED = "url_credentials_not_allowed"
    URL_HOST_NOT_CANONICAL = "url_host_not_canonical"
    URL_HOST_UNRESOLVABLE = "url_host_unresolvable"
    ADDRESS_NOT_PUBLIC = "address_not_public"


class RefusedUrlError(Exception):
    """The network policy will not let the bridge connect to this URL.

    `host`, `address` and `category` are set when they are known: `address` is the refused
    address and `category` what kind of address it is (e.g. "private"), both only for
    `address_not_public`.
    """

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
        self.message = message
        self.host = host
        self.address = address
        self.category = category

    def __str__(self) -> str:
        return f"{self.code.value}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"error": self.code.value, "message": self.message}
