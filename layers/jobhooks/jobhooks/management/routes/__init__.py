"""The management API's routes: one Powertools `Router` per resource, each a module here.

    subscriptions   /v1/subscriptions...: create, list, show, change, delete, rotate, test send,
                    recover
    deliveries      /v1/deliveries...: attempt history, replay one delivery
    events          /v1/events...: replay one event, events no subscription wanted
    quarantine      /v1/quarantine...: rejected messages, replay after fixing the cause
    dlq             /v1/dlq...: what is parked in the dead-letter queues, redrive
    analytics       /v1/analytics...: the analytics table's reviewed questions and rows
                    (operators only: the table spans every tenant)
    alerts          /v1/alerts...: a tenant's job-health alert rules and their recent alerts
    grants          /v1/grants...: which IAM callers are bound to which tenants (operators)
    portal          /v1/portal/...: portal links and revocations (operators); the portal itself
                    is a function of its own (`jobhooks.portal.routes`, functions/portal)

Every module exposes `router`. `functions/api/app.py` includes them through `ResourceRoutes`:
a request's resource (the path segment after /v1) is the only router whose routes can match
it, so the router of a resource, its models and its operations are imported when a request
first names that resource. A typical request (listing a tenant's subscriptions) never loads
the quarantine's, the dead-letter queues', the analytics' or the grants' (docs/performance.md).
The OpenAPI document includes every router and lists the paths in the order above. A route
declares its input and answers (`jobhooks.management.openapi`) and makes one call into
`jobhooks.management` or `jobhooks.access`; the stores, the clients and the caller come from
the dependencies of `dependencies`.
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
    from aws_lambda_powertools.event_handler.openapi.models import OpenAPI

__all__ = ["RESOURCES", "ResourceRoutes"]

# The order of docs/openapi.json's paths.
RESOURCES: Final = (
    "subscriptions",
    "deliveries",
    "events",
    "quarantine",
    "dlq",
    "analytics",
    "alerts",
    "grants",
    "portal",
)


def resource_of(path: str) -> str | None:
    """The resource a request path names (`/v1/<resource>/...`), if it is one of ours."""
    parts = path.split("/", 3)
    if len(parts) < 3 or parts[0] != "" or parts[1] != "v1" or parts[2] not in RESOURCES:
        return None
    return parts[2]


def _document_rank(item: tuple[str, Any]) -> tuple[bool, int]:
    resource = resource_of(item[0])
    return "{" not in item[0], RESOURCES.index(resource) if resource else len(RESOURCES)


class ResourceRoutes:
    """The /v1 routers of `app`, each included when a request first names its resource."""

    def __init__(self, app: APIGatewayHttpResolver) -> None:
        self.app = app
        self.included: set[str] = set()
        # `jobhooks dev` serves requests from threads: a router is included once.
        self._including = threading.Lock()

    def include(self, resource: str) -> None:
        if resource in self.included:
            return
        with self._including:
            if resource not in self.included:
                module = importlib.import_module(f"{__name__}.{resource}")
                self.app.include_router(module.router)
                self.included.add(resource)

    def include_for(self, event: dict[str, Any]) -> None:
        """Includes the router that can answer `event`, if any (an unknown path is answered
        404 by the resolver, as before: none of the other routers could match it)."""
        from aws_lambda_powertools.utilities.data_classes.api_gateway_proxy_event import (
            APIGatewayProxyEventV2,
        )

        # The path the resolver matches (a named stage's prefix removed).
        resource = resource_of(APIGatewayProxyEventV2(event).path)
        if resource is not None:
            self.include(resource)

    def include_all(self) -> None:
        for resource in RESOURCES:
            self.include(resource)

    def document(self, **metadata: Any) -> str:
        """The OpenAPI document of every route, its paths in the order of `RESOURCES` whatever
        the order requests included the routers in (the resolver lists the paths with
        parameters first, then the others, each kind in the order of inclusion)."""
        self.include_all()
        schema: OpenAPI = self.app.get_openapi_schema(**metadata)
        if schema.paths:
            schema.paths = dict(sorted(schema.paths.items(), key=_document_rank))
        # As `get_openapi_json_schema` writes it.
        return schema.model_dump_json(by_alias=True, exclude_none=True, indent=2)
