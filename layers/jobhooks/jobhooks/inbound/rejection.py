"""The reasons a forwarded message can be rejected (docs/forwarded-message.md).

Every message the bridge cannot deliver is classified with exactly one of these codes. They are
stable: they appear in quarantine records, logs, metrics and `jobhooks inspect` output.
"""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    MALFORMED_ENVELOPE = "malformed_envelope"
    UNSUPPORTED_EVENT = "unsupported_event"
    MISSING_SIGNATURE = "missing_signature"
    UNSUPPORTED_SIGNATURE_VERSION = "unsupported_signature_version"
    BAD_TIMESTAMP = "bad_timestamp"
    STALE_TIMESTAMP = "stale_timestamp"
    FUTURE_TIMESTAMP = "future_timestamp"
    SIGNATURE_MISMATCH = "signature_mismatch"
    TENANT_MISMATCH = "tenant_mismatch"
    EVENT_MISMATCH = "event_mismatch"
    MALFORMED_BODY = "malformed_body"
    UNTRUSTED_SOURCE = "untrusted_source"


class RejectedMessageError(Exception):
    """A message failed one rule of the inbound contract; `reason` says which one."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail

    def as_dict(self) -> dict[str, str]:
        return {"rejected": self.reason.value, "detail": self.detail}
