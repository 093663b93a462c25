"""A call the principal's policy does not allow: what it was, and the error AWS answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from botocore.exceptions import ClientError

# The error code each service answers a refused call with (most say AccessDeniedException).
_ACCESS_DENIED_CODES: Final = {
    "sqs": ("AccessDenied", 403),
    "s3": ("AccessDenied", 403),
    "sts": ("AccessDenied", 403),
    "iam": ("AccessDenied", 403),
    "sns": ("AuthorizationError", 403),
}
_DEFAULT_CODE: Final = ("AccessDeniedException", 400)


@dataclass(frozen=True, slots=True)
class Refusal:
    principal: str
    """The function's logical id (`IngestFunction`) or `Shovel`."""
    action: str
    resource: str
    reason: str

    def __str__(self) -> str:
        return f"{self.principal} may not {self.action} on {self.resource} ({self.reason})"


class AccessDenied(ClientError):  # type: ignore[misc]  # botocore ships no types
    """The `ClientError` AWS answers a call its caller's policy does not allow."""

    def __init__(self, service: str, operation: str, refusals: Sequence[Refusal]) -> None:
        self.service = service
        self.refusals = tuple(refusals)
        code, status = _ACCESS_DENIED_CODES.get(service, _DEFAULT_CODE)
        first = self.refusals[0]
        message = (
            f"User: {first.principal} is not authorized to perform: {first.action} on "
            f"resource: {first.resource} ({first.reason})"
        )
        super().__init__(
            {
                "Error": {"Code": code, "Message": message},
                "ResponseMetadata": {"HTTPStatusCode": status},
            },
            operation,
        )

    def __reduce__(
        self,
    ) -> tuple[type[AccessDenied], tuple[str, str, tuple[Refusal, ...]]]:
        return AccessDenied, (self.service, self.operation_name, self.refusals)
