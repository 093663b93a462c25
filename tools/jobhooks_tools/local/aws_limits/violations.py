"""What a broken AWS limit looks like: the rule's name, what was wrong, and AWS's own error code."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from botocore.exceptions import ClientError


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    """`sqs.message_characters`, `dynamodb.reserved_words`, ...: docs/architecture.md lists them."""
    detail: str
    """Where in the request and what is wrong, never a whole value (bodies carry payloads)."""
    aws_code: str = "ValidationException"
    """The error code the real service answers with, so callers handle it as they would on AWS."""

    def __str__(self) -> str:
        return f"{self.rule}: {self.detail}"


class AwsLimitViolation(ClientError):  # type: ignore[misc]  # botocore ships no types
    """A request the real AWS service would refuse; raised before it reaches the emulator.

    A `ClientError` with AWS's own error code, so the caller's error handling runs as it would
    on AWS; its message starts with the rule's name (`sqs.message_characters: ...`).
    """

    def __init__(self, operation: str, violations: Sequence[Violation]) -> None:
        self.violations = tuple(violations)
        message = "; ".join(str(violation) for violation in self.violations)
        super().__init__(
            {
                "Error": {"Code": self.violations[0].aws_code, "Message": message},
                "ResponseMetadata": {"HTTPStatusCode": 400},
            },
            operation,
        )

    def __str__(self) -> str:
        return "; ".join(str(violation) for violation in self.violations)

    def __reduce__(self) -> tuple[type[AwsLimitViolation], tuple[str, tuple[Violation, ...]]]:
        return AwsLimitViolation, (self.operation_name, self.violations)
