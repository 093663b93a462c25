"""The management API's OpenAPI description: parameters, documented answers, document metadata.

The route declarations in `functions/api/app.py` use these, so the document that
`scripts/generate-openapi.py` writes (docs/openapi.json) states every input rule the Event
Handler enforces and every answer a route can give, errors included.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any, Final

from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from pydantic import BaseModel

from jobhooks import __version__
from jobhooks.inbound.rejection import Reason
from jobhooks.management.models import (
    ALERT_RULE_ID_PATTERN,
    CURSOR_MAX_LENGTH,
    DELIVERY_ID_PATTERN,
    EVENT_ID_PATTERN,
    QUARANTINE_ID_PATTERN,
    QUERY_ID_PATTERN,
    QUESTION_NAME_PATTERN,
    SUBSCRIPTION_ID_PATTERN,
    WINDOW_BOUND_MAX_LENGTH,
    CreateAlertRuleRequest,
    CreateSubscriptionRequest,
    ErrorBody,
    RecoverRequest,
    RotateSecretRequest,
    UpdateSubscriptionRequest,
)
from jobhooks.storage.pages import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from jobhooks.subscriptions.model import MAX_TENANT_ID_LENGTH

TITLE: Final = "jobhooks management API"
DESCRIPTION: Final = (
    "Register webhook subscriptions for a tenant's Fetcher job events, rotate their signing "
    "secrets, send test webhooks, read delivery attempts, and replay deliveries, events, "
    "quarantined messages and dead-letter queues; operators also read the analytics table "
    "(every tenant's outcomes) through its reviewed questions. Every /v1 request is signed "
    "with AWS Signature Version 4 (IAM, service execute-api); an IAM caller that a grant binds "
    "to tenants acts for those tenants only. The tenant portal's routes (/portal/...) take a "
    'session cookie instead. Errors are `{"error": {"code", "message", "field"}}`. '
    "docs/api.md has examples."
)

# -- parameters ------------------------------------------------------------------------------

SubscriptionIdPath = Annotated[
    str, Path(pattern=SUBSCRIPTION_ID_PATTERN, description="a subscription id (sub_...)")
]
DeliveryIdPath = Annotated[
    str, Path(pattern=DELIVERY_ID_PATTERN, description="a delivery id (dlv_...)")
]
EventIdPath = Annotated[str, Path(pattern=EVENT_ID_PATTERN, description="an event's ce-id")]
QuarantineIdPath = Annotated[
    str, Path(pattern=QUARANTINE_ID_PATTERN, description="a quarantine id (q_...)")
]
AlertRuleIdPath = Annotated[
    str, Path(pattern=ALERT_RULE_ID_PATTERN, description="an alert rule id (alr_...)")
]
SubscriptionIdQuery = Annotated[
    str | None, Query(pattern=SUBSCRIPTION_ID_PATTERN, description="a subscription id (sub_...)")
]
EventIdQuery = Annotated[
    str | None, Query(pattern=EVENT_ID_PATTERN, description="an event's ce-id")
]
TenantQuery = Annotated[
    str,
    Query(min_length=1, max_length=MAX_TENANT_ID_LENGTH, description="the tenant id"),
]
TenantScopeQuery = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=MAX_TENANT_ID_LENGTH,
        description="when given, anything of another tenant is answered as not found",
    ),
]
LimitQuery = Annotated[
    int, Query(ge=1, le=MAX_PAGE_SIZE, description=f"page size (default {DEFAULT_PAGE_SIZE})")
]
PeekLimitQuery = Annotated[
    int, Query(ge=1, le=MAX_PAGE_SIZE, description="how many messages to peek at (default 10)")
]
ReasonQuery = Annotated[
    Reason | None, Query(description="only messages rejected for this reason (newest first)")
]
CursorQuery = Annotated[
    str | None,
    Query(
        min_length=1,
        max_length=CURSOR_MAX_LENGTH,
        description="`next_cursor` of the previous page",
    ),
]

QuestionNamePath = Annotated[
    str,
    Path(
        pattern=QUESTION_NAME_PATTERN,
        description="a reviewed question (GET /v1/analytics/questions lists them)",
    ),
]
QueryIdPath = Annotated[
    str, Path(pattern=QUERY_ID_PATTERN, description="the query_id of a 202 answer")
]
WindowFromQuery = Annotated[
    str | None,
    Query(
        alias="from",
        min_length=1,
        max_length=WINDOW_BOUND_MAX_LENGTH,
        description="the window's start, inclusive: an ISO 8601 date or time, UTC when no zone "
        "is given (default: 7 days before `to`)",
    ),
]
WindowToQuery = Annotated[
    str | None,
    Query(
        alias="to",
        min_length=1,
        max_length=WINDOW_BOUND_MAX_LENGTH,
        description="the window's end, exclusive (default: now)",
    ),
]

# -- bodies (with the examples the document shows and generated tests start from) ------------


def request_example(value: Any) -> Any:
    """An OpenAPI example object: Powertools' `Example` as the document writes it. Its model
    module (every OpenAPI object as a pydantic model) would cost the API's cold start; only
    `scripts/generate-openapi.py` and `openapi_json()` read examples."""
    return {"value": value}


CreateSubscriptionBody = Annotated[
    CreateSubscriptionRequest,
    Body(
        openapi_examples={
            "all event types": request_example(
                {"tenant_id": "acme", "url": "https://hooks.example.com/fetcher"}
            ),
            "failures only": request_example(
                {
                    "tenant_id": "acme",
                    "url": "https://hooks.example.com/failures",
                    "event_types": ["job.failed"],
                    "description": "on-call alerts",
                }
            ),
            "billing jobs and their health": request_example(
                {
                    "tenant_id": "acme",
                    "url": "https://hooks.example.com/billing",
                    "event_types": ["job.failed", "job_health.degraded", "job_health.recovered"],
                    "job_names": ["billing-*"],
                }
            ),
        }
    ),
]
UpdateSubscriptionBody = Annotated[
    UpdateSubscriptionRequest,
    Body(
        openapi_examples={
            "disable": request_example({"status": "disabled"}),
            "move": request_example({"url": "https://hooks.example.com/v2/fetcher"}),
        }
    ),
]
CreateAlertRuleBody = Annotated[
    CreateAlertRuleRequest,
    Body(
        openapi_examples={
            "failing billing jobs": request_example(
                {"tenant_id": "acme", "job_name": "billing-*", "failure_rate": 0.2}
            ),
            "slow reports": request_example(
                {
                    "tenant_id": "acme",
                    "job_name": "nightly-report",
                    "p95_ms": 60000,
                    "min_outcomes": 5,
                    "window_seconds": 3600,
                }
            ),
        }
    ),
]
RotateSecretBody = Annotated[
    RotateSecretRequest | None,
    Body(openapi_examples={"one hour of overlap": request_example({"grace_seconds": 3600})}),
]
RecoverBody = Annotated[
    RecoverRequest,
    Body(
        openapi_examples={
            "since the outage began": request_example({"since": "2026-12-06T01:00:00Z"}),
            "the next page": request_example(
                {"since": "2026-12-06T01:00:00Z", "cursor": "eyJzIjoi...", "limit": 500}
            ),
        }
    ),
]

# -- answers ---------------------------------------------------------------------------------

_ERROR_DESCRIPTIONS: Final = {
    HTTPStatus.BAD_REQUEST: "The request body is not UTF-8 JSON (or nests too deep)",
    HTTPStatus.UNSUPPORTED_MEDIA_TYPE: "The request body was not sent as application/json",
    HTTPStatus.FORBIDDEN: "The caller may not do this: no IAM identity, an IAM identity that is "
    "neither an operator nor bound by a grant, or an operator route asked by a bound caller",
    HTTPStatus.TOO_MANY_REQUESTS: "The tenant's replays and test sends of this minute are used "
    "up; retry after the Retry-After header's seconds",
    HTTPStatus.NOT_FOUND: "No such resource (or it belongs to another tenant)",
    HTTPStatus.CONFLICT: "The resource's state does not allow this now",
    HTTPStatus.UNPROCESSABLE_ENTITY: "The request is invalid; `error.field` names the field",
}

_INPUT_ERRORS: Final = (
    HTTPStatus.BAD_REQUEST,
    HTTPStatus.FORBIDDEN,
    HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
    HTTPStatus.UNPROCESSABLE_ENTITY,
)


def documented(
    status: HTTPStatus, model: type[BaseModel] | None, *errors: HTTPStatus
) -> dict[int, Any]:
    """The `responses` of a route: its success answer and the error answers it can give."""
    answers: dict[int, Any] = {}
    if model is None:
        answers[status.value] = {"description": status.phrase, "content": {}}
    else:
        answers[status.value] = {
            "description": status.phrase,
            "content": {"application/json": {"model": model}},
        }
    # Every route validates its input, so every route can answer 422; and any request that
    # carries a body has it read before routing (`request_body`), hence 400 and 415. Every
    # route checks its caller first (`jobhooks.access.callers`), hence 403.
    for error in sorted({*errors, *_INPUT_ERRORS}):
        answers[error.value] = {
            "description": _ERROR_DESCRIPTIONS.get(error, error.phrase),
            "content": {"application/json": {"model": ErrorBody}},
        }
    return answers


# -- the document ----------------------------------------------------------------------------

SIGV4: Final = "sigv4"
PORTAL_SESSION: Final = "portalSession"
PORTAL_LINK: Final = "portalLink"


def document_metadata() -> dict[str, Any]:
    """The keyword arguments of `get_openapi_json_schema` for this API."""
    from aws_lambda_powertools.event_handler.openapi.models import APIKey, Server

    return {
        "title": TITLE,
        "version": __version__,
        "description": DESCRIPTION,
        "servers": [Server(url="/", description="the stack's ApiUrl output")],
        "security_schemes": {
            SIGV4: APIKey.model_validate(
                {
                    "type": "apiKey",
                    "in": "header",
                    "name": "Authorization",
                    "description": "AWS Signature Version 4, service execute-api (IAM)",
                    "x-amazon-apigateway-authtype": "awsSigv4",
                }
            ),
            PORTAL_SESSION: APIKey.model_validate(
                {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "__Host-jobhooks-portal",
                    "description": "a tenant portal session (docs/portal.md), verified by the "
                    "portal authorizer; writes also need the header X-Jobhooks-Portal",
                }
            ),
            PORTAL_LINK: APIKey.model_validate(
                {
                    "type": "apiKey",
                    "in": "header",
                    "name": "X-Jobhooks-Portal-Link",
                    "description": "a one-time portal link's token (the #t= of its URL), "
                    "verified by the portal authorizer",
                }
            ),
        },
        "security": [{SIGV4: []}],
    }
