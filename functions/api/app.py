"""Management API function: subscriptions, deliveries, events, quarantine, dead-letter queues,
analytics, alerts, grants and portal links (the portal itself is `functions/portal`).

Wiring only: the resolver (`jobhooks.management.resolver`: error answers, request-body guard),
the caller gate and the handler. The routes are Powertools `Router`s, one module per resource
in `jobhooks.management.routes`, each route one call into `jobhooks.management` (docs/api.md);
a resource's router is included when a request first names it (`ResourceRoutes`).
API Gateway authorizes every request with IAM (SigV4) before it gets here; `gate_iam_request`
refuses one that arrives without that identity all the same. Request bodies, answers and events
are never logged: a create or rotate answer carries a signing secret, a link answer a link.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from jobhooks.access.callers import gate_iam_request
from jobhooks.management.context import management_context
from jobhooks.management.openapi import document_metadata
from jobhooks.management.resolver import answer_request, http_resolver
from jobhooks.management.routes import ResourceRoutes

__all__ = ["app", "handler", "management_context", "openapi_json"]

logger = Logger()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "jobhooks"))
app = http_resolver(logger, metrics)
routes = ResourceRoutes(app)
# At import: most requests name a subscription (listing, showing, changing one), so their
# routes are no first request's extra work. Every other resource loads with its first request.
routes.include("subscriptions")


def openapi_json() -> str:
    """The OpenAPI document of this function's routes (scripts/generate-openapi.py joins it
    with the portal function's into docs/openapi.json)."""
    return routes.document(**document_metadata())


# log_event=False whatever POWERTOOLS_LOGGER_LOG_EVENT says: events carry signing secrets in
# request bodies.
@logger.inject_lambda_context(
    correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True, log_event=False
)
@metrics.log_metrics(raise_on_empty_metrics=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    routes.include_for(event)
    return answer_request(app, event, context, refused=gate_iam_request(event), logger=logger)
