"""AWS's real request limits, enforced before a request reaches the local emulator.

moto accepts requests real AWS refuses: a U+FFFE in an SQS message body, an eleventh message
attribute, a reserved word as a bare attribute name in a DynamoDB expression, an empty string
key. A bug that only real AWS exposes would then pass every local test and fail in production.
This guard closes that gap: a botocore hook (`guard.py`) checks every SQS and DynamoDB request
against the real services' rules (`sqs.py`, `dynamodb.py`, `dynamodb_expressions.py`) and
refuses a violating one with an `AwsLimitViolation` whose message starts with the rule's name.

The test suite (tests/fixtures/aws.py) and the local stack (`jobhooks dev`, `DevStack`) install
it; Lambda code never imports it: on AWS, the services enforce their own limits.
`python -m jobhooks_tools.local.aws_limits ARGS` runs the `jobhooks` CLI with it installed (the
local stack's shovel process). docs/architecture.md lists every rule.
"""

from __future__ import annotations

from typing import Final

from jobhooks_tools.local.aws_limits import dynamodb, sqs
from jobhooks_tools.local.aws_limits.guard import (
    check_request,
    install,
    is_installed,
    take_violations,
    uninstall,
)
from jobhooks_tools.local.aws_limits.violations import AwsLimitViolation, Violation

RULES: Final[dict[str, str]] = {**sqs.RULES, **dynamodb.RULES}
"""Every rule the guard checks, by name, with the limit it enforces."""

__all__ = [
    "RULES",
    "AwsLimitViolation",
    "Violation",
    "check_request",
    "install",
    "is_installed",
    "take_violations",
    "uninstall",
]
