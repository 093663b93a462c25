"""What the two HTTP functions (the management API, `functions/api`, and the portal,
`functions/portal`) share around their routes: one Event Handler resolver with the error
answers of docs/api.md, and the checks a request passes before it is routed.

    app = http_resolver(logger, metrics)       # error handlers registered
    app.include_router(...)
    answer = answer_request(app, event, context, refused=gate(event), logger=logger)

Every error a caller can hit is answered by `jobhooks.management.exceptions.api_error_for`:
a stable code, a status, a message; anything unforeseen is a 500 that reveals nothing and
counts in the `ApiErrors` metric. Request bodies, answers and events are never logged.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.metrics import MetricUnit

from jobhooks.exceptions import JobhooksError
from jobhooks.management.exceptions import (
    ApiError,
    RequestBodyError,
    api_error_for,
    api_error_for_invalid_request,
    api_error_for_unknown_route,
)
from jobhooks.management.request_body import accept_request_body


def http_resolver(logger: Logger, metrics: Metrics) -> APIGatewayHttpResolver:
    """A validating HTTP API resolver whose errors are answered as docs/api.md says."""
    app = APIGatewayHttpResolver(enable_validation=True)

    @app.exception_handler(RequestValidationError)  # type: ignore[untyped-decorator]
    def handle_invalid_request(error: RequestValidationError) -> Response[Any]:
        answer = api_error_for_invalid_request(error.errors())
        logger.info("request refused", extra={"code": answer.code, "field": answer.field})
        return error_response(answer)

    @app.not_found
    def handle_unknown_route(_: NotFoundError) -> Response[Any]:
        http = app.current_event.request_context.http
        return error_response(api_error_for_unknown_route(http.method, http.path))

    @app.exception_handler(Exception)  # type: ignore[untyped-decorator]
    def handle_error(error: Exception) -> Response[Any]:
        answer = api_error_for(error)
        if answer.status >= HTTPStatus.INTERNAL_SERVER_ERROR:
            logger.exception("request failed", extra={"code": answer.code})
            metrics.add_metric(name="ApiErrors", unit=MetricUnit.Count, value=1)
        else:
            logger.info("request refused", extra={"code": answer.code, "field": answer.field})
        return error_response(answer)

    return app


def answer_request(
    app: APIGatewayHttpResolver,
    event: dict[str, Any],
    context: Any,
    *,
    refused: JobhooksError | None,
    logger: Logger,
) -> dict[str, Any]:
    """`app`'s answer to `event`, unless its gate `refused` it (a request without the identity
    its route needs: never routed) or its body is refused."""
    http = (event.get("requestContext") or {}).get("http") or {}
    if refused is not None:
        answer = api_error_for(refused)
        logger.warning(
            "request without the caller identity its route needs",
            extra={"code": answer.code, "path": str(http.get("path", ""))[:200]},
        )
        return plain_answer(answer)
    # The body is read here, before routing: the Event Handler's own parsing lets invalid
    # UTF-8, deep nesting and unknown media types escape as 500s.
    try:
        accepted = accept_request_body(event)
    except RequestBodyError as error:
        # A client's mistake (or a probe), not the function's: a WARNING without the body, not
        # a traceback and no `ApiErrors`.
        answer = api_error_for(error)
        logger.warning(
            "request body refused",
            extra={
                "code": answer.code,
                "method": str(http.get("method", "")),
                "path": str(http.get("path", ""))[:200],
            },
        )
        return plain_answer(answer)
    return app.resolve(accepted, context)


def error_response(error: ApiError) -> Response[Any]:
    headers = {"Retry-After": str(error.retry_after)} if error.retry_after is not None else None
    return Response(
        status_code=error.status,
        content_type=content_types.APPLICATION_JSON,
        body=error.body(),
        headers=headers,
    )


def plain_answer(answer: ApiError) -> dict[str, Any]:
    """`answer` as a payload 2.0 response, for refusals made before the Event Handler runs."""
    return {
        "statusCode": answer.status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON},
        "body": json.dumps(answer.body(), separators=(",", ":")),
        "isBase64Encoded": False,
    }
