"""Conditional writes: whether one failed because its condition did not hold.

Every store makes its writes conditional (a claim's lease, a subscription's revision, a
delivery not already succeeded): a failed condition is an answer the store turns into its own
outcome (a duplicate, a conflict, "not found"), never an error to retry.
"""

from __future__ import annotations

from typing import Final

from jobhooks.storage.clients import aws_error_code

CONDITION_FAILED: Final = "ConditionalCheckFailedException"


def is_condition_failure(error: BaseException) -> bool:
    """A DynamoDB conditional write (or delete) whose condition did not hold."""
    return aws_error_code(error) == CONDITION_FAILED
