"""Routes of /v1/dlq: count and peek at a dead-letter queue, move its messages back."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.metrics import MetricUnit

from jobhooks.management import dlq
from jobhooks.management.openapi import PeekLimitQuery, documented, request_example
from jobhooks.management.operator_models import (
    DeadLetterListing,
    DeadLetterQueue,
    RedriveRequest,
    RedriveResult,
)
from jobhooks.management.routes.dependencies import Context, Operator

OK, ACCEPTED, CONFLICT = HTTPStatus.OK, HTTPStatus.ACCEPTED, HTTPStatus.CONFLICT
TAGS = ["dlq"]

DeadLetterQueueQuery = Annotated[
    DeadLetterQueue, Query(description="which dead-letter queue (default: delivery)")
]
RedriveBody = Annotated[
    RedriveRequest | None,
    Body(openapi_examples={"parked deliveries": request_example({"queue": "delivery"})}),
]

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
logger = Logger(child=True)
metrics = Metrics()


@router.get(
    "/v1/dlq",
    operation_id="list_dlq",
    summary="Count and peek at a dead-letter queue",
    responses=documented(OK, DeadLetterListing),
    tags=TAGS,
)
def handle_list_dlq(
    context: Context,
    operator: Operator,
    queue: DeadLetterQueueQuery = DeadLetterQueue.DELIVERY,
    limit: PeekLimitQuery = 10,
) -> DeadLetterListing:
    return dlq.list_dlq(context, queue, limit=limit)


@router.post(
    "/v1/dlq/redrive",
    operation_id="redrive_dlq",
    summary="Move a dead-letter queue's messages back to their source queue",
    status_code=ACCEPTED,
    responses=documented(ACCEPTED, RedriveResult, CONFLICT),
    tags=TAGS,
)
def handle_redrive_dlq(
    context: Context, operator: Operator, body: RedriveBody = None
) -> RedriveResult:
    result = dlq.redrive_dlq(context, body or RedriveRequest())
    logger.info(
        "dead-letter queue redriven",
        extra={"queue": result.queue.value, "method": result.method, "moved": result.moved},
    )
    metrics.add_metric(name="Redrives", unit=MetricUnit.Count, value=1)
    return result
