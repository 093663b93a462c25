"""Portal function: the tenant portal's page and assets, its link-for-session exchange and its
API (one session, one tenant; docs/portal.md).

Wiring only: the resolver (`jobhooks.management.resolver`: error answers, request-body guard),
the portal's gate and the handler. The routes are `jobhooks.portal.routes`. API Gateway runs the
portal authorizer on every request but the page's and the assets' before it gets here;
`gate_portal_request` refuses one that arrives without its verdict all the same. Every answer
carries the portal's security and cache headers. Request bodies, answers and events are never
logged: they carry session cookies, links and signing secrets.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from jobhooks.management.context import management_context
from jobhooks.management.openapi import document_metadata
from jobhooks.management.resolver import answer_request, http_resolver
from jobhooks.portal import routes
from jobhooks.portal.gate import gate_portal_request
from jobhooks.portal.pages import portal_headers

__all__ = ["app", "handler", "management_context", "openapi_json"]

logger = Logger()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "jobhooks"))
app = http_resolver(logger, metrics)
app.include_router(routes.router)


def openapi_json() -> str:
    """The OpenAPI document of this function's routes (scripts/generate-openapi.py joins it
    with the management API's into docs/openapi.json)."""
    return app.get_openapi_json_schema(**document_metadata())


# log_event=False whatever POWERTOOLS_LOGGER_LOG_EVENT says.
@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True, log_event=False
)
@metrics.log_metrics(raise_on_empty_metrics=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    path = str(((event.get("requestContext") or {}).get("http") or {}).get("path", ""))
    answer = answer_request(app, event, context, refused=gate_portal_request(event), logger=logger)
    return portal_headers(path, answer)
