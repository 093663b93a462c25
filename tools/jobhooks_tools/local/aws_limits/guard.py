"""The botocore hook that holds every SQS and DynamoDB request to the real services' limits.

`install()` adds the hook to botocore's built-in handlers, which every botocore session (so
every boto3 `Session`, and boto3's default session behind `boto3.client`) registers when it is
created, and to boto3's default session if that already exists. Clients take a copy of their
session's handlers when they are made, so a client made before `install()` is not covered:
install first (the test suite does it at start-up, the local stack before it creates anything).

The hook runs on `before-parameter-build`, before botocore validates and serializes the request,
with the parameters as the caller passed them. A request that breaks a rule is not sent: the
violation is logged as an error, recorded for `take_violations()` (the test suite fails a test
that made one), and raised as an `AwsLimitViolation`, the `ClientError` AWS would answer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any, Final

import botocore.handlers

from jobhooks_tools.local.aws_limits import dynamodb, sqs
from jobhooks_tools.local.aws_limits.violations import AwsLimitViolation, Violation

# Named in the `jobhooks` logger tree, where the local stack routes the package's records.
logger = logging.getLogger("jobhooks.local.aws_limits.guard")

_EVENTS: Final = ("before-parameter-build.sqs", "before-parameter-build.dynamodb")
_UNIQUE_ID: Final = "jobhooks-aws-limits"

_lock = threading.Lock()
_installed = False
_recorded: list[Violation] = []
# Tables created through guarded clients: which of their attributes are keys.
_key_schemas = dynamodb.KeySchemas()


def check_request(
    service: str,
    operation: str,
    params: Mapping[str, Any],
    *,
    key_schemas: dynamodb.KeySchemas | None = None,
) -> list[Violation]:
    """Every limit of the real `service` that the request breaks; empty when AWS would take it.

    `service` is botocore's name (`sqs`, `dynamodb`); `params` what the boto3 method was called
    with. DynamoDB key rules on items need the table's schema, from `key_schemas`.
    """
    if service == "sqs":
        return sqs.check(operation, params)
    if service == "dynamodb":
        return dynamodb.check(operation, params, key_schemas)
    return []


def install() -> bool:
    """Enforce the limits on every SQS and DynamoDB client made from now on in this process;
    False when they already were."""
    global _installed
    with _lock:
        if _installed:
            return False
        for event in _EVENTS:
            botocore.handlers.BUILTIN_HANDLERS.append((event, _before_parameter_build))
        session = _boto3_default_session()
        if session is not None:
            for event in _EVENTS:
                session.events.register(
                    event, _before_parameter_build, unique_id=_UNIQUE_ID + event
                )
        _installed = True
        return True


def uninstall() -> None:
    """Stop enforcing on sessions made from now on and on boto3's default session."""
    global _installed
    with _lock:
        if not _installed:
            return
        for event in _EVENTS:
            spec = (event, _before_parameter_build)
            while spec in botocore.handlers.BUILTIN_HANDLERS:
                botocore.handlers.BUILTIN_HANDLERS.remove(spec)
        session = _boto3_default_session()
        if session is not None:
            for event in _EVENTS:
                session.events.unregister(event, unique_id=_UNIQUE_ID + event)
                session.events.unregister(event, _before_parameter_build)
        _installed = False


def is_installed() -> bool:
    with _lock:
        return _installed


def take_violations() -> list[Violation]:
    """The violations refused since the last call, oldest first (and forget them)."""
    with _lock:
        taken = list(_recorded)
        _recorded.clear()
        return taken


def _before_parameter_build(params: dict[str, Any], model: Any, **_: Any) -> None:
    service = str(model.service_model.service_name)
    operation = str(model.name)
    if service == "dynamodb":
        _key_schemas.observe(operation, params)
    violations = check_request(service, operation, params, key_schemas=_key_schemas)
    if not violations:
        return
    with _lock:
        _recorded.extend(violations)
    logger.error(
        "AWS would refuse %s %s: %s",
        service,
        operation,
        "; ".join(str(violation) for violation in violations),
        extra={"aws_limit_rules": sorted({violation.rule for violation in violations})},
    )
    raise AwsLimitViolation(operation, violations)


def _boto3_default_session() -> Any:
    try:
        import boto3
    except ImportError:  # botocore alone: every session is new, and covered
        return None
    return boto3.DEFAULT_SESSION
