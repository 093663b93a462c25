"""One error hierarchy: every error a user can hit says its code, HTTP status and field itself."""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections import Counter
from http import HTTPStatus
from pathlib import Path

import jobhooks
import jobhooks_tools
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from jobhooks.delivery.exceptions import RefusalCode, RefusedUrlError
from jobhooks.exceptions import JobhooksError
from jobhooks.ingest.exceptions import EventNotFoundError
from jobhooks.management.exceptions import (
    InvalidJsonError,
    ManagementMisconfiguredError,
    api_error_for,
)
from jobhooks.settings import ConfigurationError
from jobhooks.storage.exceptions import InvalidCursorError, InvalidPageSizeError
from jobhooks.subscriptions.exceptions import InvalidUrlError, SubscriptionNotFoundError

CODE = re.compile(r"[a-z][a-z0-9_]*")


def every_error_class() -> list[type[JobhooksError]]:
    for module in pkgutil.walk_packages(jobhooks.__path__, "jobhooks."):
        importlib.import_module(module.name)
    found: list[type[JobhooksError]] = []
    pending = [JobhooksError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def test_every_error_states_a_code_an_http_status_and_maybe_a_field() -> None:
    classes = every_error_class()
    assert len(classes) > 40
    for cls in classes:
        assert isinstance(cls.code, str) and CODE.fullmatch(cls.code), cls
        assert 400 <= HTTPStatus(cls.status) < 600, cls
        assert cls.field is None or CODE.fullmatch(cls.field), cls


def test_each_error_code_has_one_class() -> None:
    # A class inheriting its parent's code is the parent's kind (a specialised message).
    own_codes = Counter(cls.code for cls in every_error_class() if "code" in vars(cls))
    assert [code for code, count in own_codes.items() if count > 1] == []
    assert own_codes["invalid_cursor"] == own_codes["invalid_page_size"] == 1


def test_error_modules_are_all_named_exceptions() -> None:
    for package in (jobhooks, jobhooks_tools):
        root = Path(package.__path__[0])
        assert sorted(root.rglob("errors.py")) == []


@pytest.mark.parametrize(
    ("error", "status", "code", "message", "field"),
    [
        (
            SubscriptionNotFoundError("sub_1"),
            404,
            "subscription_not_found",
            "no subscription 'sub_1' exists for this tenant; "
            "list the tenant's subscriptions to find the right id",
            None,
        ),
        (InvalidUrlError("too long"), 422, "invalid_url", "url: too long", "url"),
        (
            RefusedUrlError(RefusalCode.ADDRESS_NOT_PUBLIC, "private"),
            422,
            "address_not_public",
            "url: private",
            "url",
        ),
        (
            InvalidCursorError("for this tenant"),
            422,
            "invalid_cursor",
            "cursor: the cursor is not one this listing returned for this tenant; start again "
            "without a cursor",
            "cursor",
        ),
        (
            InvalidPageSizeError(100),
            422,
            "invalid_page_size",
            "limit: the page size must be between 1 and 100",
            "limit",
        ),
        (
            InvalidJsonError("the request body is not valid JSON"),
            400,
            "invalid_json",
            "body: the request body is not valid JSON; send a JSON object encoded as UTF-8",
            "body",
        ),
        (EventNotFoundError("e"), 404, "event_not_found", None, None),
        (
            ManagementMisconfiguredError("JOBHOOKS_CLAIMS_TABLE: Field required"),
            503,
            "configuration_error",
            "the management API is misconfigured: JOBHOOKS_CLAIMS_TABLE: Field required",
            None,
        ),
    ],
)
def test_the_api_answer_is_read_from_the_error(
    error: JobhooksError, status: int, code: str, message: str | None, field: str | None
) -> None:
    answer = api_error_for(error)
    assert (answer.status, answer.code, answer.field) == (status, code, field)
    assert answer.message == (message if message is not None else error.message)


def test_a_configuration_error_names_the_variable_first() -> None:
    error = ConfigurationError("JOBHOOKS_RETRY_SCHEDULE: the first entry must be 0")
    assert str(error) == "JOBHOOKS_RETRY_SCHEDULE: the first entry must be 0"
    assert (error.code, error.status) == ("configuration_error", 503)


def test_aws_failures_are_bad_gateway_answers_and_anything_else_reveals_nothing() -> None:
    throttled = ClientError({"Error": {"Code": "ThrottlingException"}}, "Query")
    assert (api_error_for(throttled).status, api_error_for(throttled).code) == (502, "aws_error")
    unreachable = EndpointConnectionError(endpoint_url="https://dynamodb")
    assert api_error_for(unreachable).code == "aws_unreachable"
    hidden = api_error_for(RuntimeError("secret whsec_abc"))
    assert (hidden.status, hidden.code) == (500, "internal_error")
    assert "whsec_abc" not in hidden.message
