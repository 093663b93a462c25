"""Management API function: subscriptions, deliveries, quarantine, dead-letter queues,
analytics, grants and the tenant portal.

Wiring only: the resolver, its error handlers, the caller gate, the request-body guard and the
handler. The routes are Powertools `Router`s, one module per resource in
`jobhooks.management.routes`, each route one call into `jobhooks.management` or
`jobhooks.portal` (docs/api.md). API Gateway authorizes every /v1 request with IAM (SigV4) and
every portal API request with the portal authorizer before it gets here; `gate_request` refuses
one that arrives without that identity all the same. Request bodies, answers and events are
never logged: a create or rotate answer carries a signing secret, a portal request a session
cookie or a link.
"""

from __future__ import annotations

import json
import os
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from jobhooks.management.exceptions import (
    ApiError,
    RequestBodyError,
    api_error_for,
    api_error_for_invalid_request,
    api_error_for_unknown_route,
)
from jobhooks.management.openapi import document_metadata
from jobhooks.management.request_body import accept_request_body
from jobhooks.management.routes import (
    alerts,
    analytics,
    deliveries,
    dlq,
    events,
    grants,
    portal,
    quarantine,
    subscriptions,
)
from jobhooks.management.routes.dependencies import management_context
from jobhooks.portal.callers import gate_request
from jobhooks.portal.pages import is_portal_path, portal_headers

__all__ = ["app", "handler", "management_context", "openapi_json"]

logger = Logger()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "jobhooks"))
app = APIGatewayHttpResolver(enable_validation=True)
# In this order: it is the order of docs/openapi.json's paths.
app.include_router(subscriptions.router)
app.include_router(deliveries.router)
app.include_router(events.router)
app.include_router(quarantine.router)
app.include_router(dlq.router)
app.include_router(analytics.router)
app.include_router(alerts.router)
app.include_router(grants.router)
app.include_router(portal.router)

# -- errors ----------------------------------------------------------------------------------


def error_response(error: ApiError) -> Response[Any]:
    headers = {"Retry-After": str(error.retry_after)} if error.retry_after is not None else None
    return Response(
        status_code=error.status,
        content_type=content_types.APPLICATION_JSON,
        body=error.body(),
        headers=headers,
    )


@app.exception_handler(RequestValidationError)  # type: ignore[untyped-decorator]
def handle_invalid_request(error: RequestValidationError) -> Response[Any]:
    answer = api_error_for_invalid_request(error.errors())
    logger.info("request refused", extra={"code": answer.code, "field": answer.field})
    return error_response(answer)


@app.not_found
def handle_unknown_route(_: NotFoundError) -> Response[Any]:
    http = app.current_event.request_context.http
    return error_response(api_error_for_unknown_route(http.method, http.path))


def refuse_request_body(event: dict[str, Any], error: RequestBodyError) -> dict[str, Any]:
    """The answer to a body `accept_request_body` refused, before the Event Handler runs.

    A client's mistake (or a probe), not the function's: a WARNING without the body, not a
    traceback and no `ApiErrors`.
    """
    answer = api_error_for(error)
    http = (event.get("requestContext") or {}).get("http") or {}
    logger.warning(
        "request body refused",
        extra={
            "code": answer.code,
            "method": str(http.get("method", "")),
            "path": str(http.get("path", ""))[:200],
        },
    )
    return {
        "statusCode": answer.status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": json.dumps(answer.body(), separators=(",", ":")),
        "isBase64Encoded": False,
    }


@app.exception_handler(Exception)  # type: ignore[untyped-decorator]
def handle_error(error: Exception) -> Response[Any]:
    answer = api_error_for(error)
    if answer.status >= HTTPStatus.INTERNAL_SERVER_ERROR:
        logger.exception("request failed", extra={"code": answer.code})
        metrics.add_metric(name="ApiErrors", unit=MetricUnit.Count, value=1)
    else:
        logger.info("request refused", extra={"code": answer.code, "field": answer.field})
    return error_response(answer)


# -- the function ----------------------------------------------------------------------------


def openapi_json() -> str:
    """The OpenAPI document of this API (scripts/generate-openapi.py writes it to docs/)."""
    return app.get_openapi_json_schema(**document_metadata())


def refuse_caller(event: dict[str, Any], answer: ApiError) -> dict[str, Any]:
    """A request without the identity its route needs (`gate_request`): never routed."""
    http = (event.get("requestContext") or {}).get("http") or {}
    logger.warning(
        "request without the caller identity its route needs",
        extra={"code": answer.code, "path": str(http.get("path", ""))[:200]},
    )
    return {
        "statusCode": answer.status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": json.dumps(answer.body(), separators=(",", ":")),
        "isBase64Encoded": False,
    }


# log_event=False whatever POWERTOOLS_LOGGER_LOG_EVENT says: events carry portal session
# cookies, link tokens and signing secrets in request bodies.
@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True, log_event=False
)
@metrics.log_metrics(raise_on_empty_metrics=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    path = str(((event.get("requestContext") or {}).get("http") or {}).get("path", ""))
    answered = route_request(event, context)
    # The portal's page, assets and API answers carry its security and cache headers.
    return portal_headers(path, answered) if is_portal_path(path) else answered


def route_request(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refused = gate_request(event)
    if refused is not None:
        return refuse_caller(event, api_error_for(refused))
    # The body is read here, before routing: the Event Handler's own parsing lets invalid
    # UTF-8, deep nesting and unknown media types escape as 500s.
    try:
        accepted = accept_request_body(event)
    except RequestBodyError as error:
        return refuse_request_body(event, error)
    return app.resolve(accepted, context)
