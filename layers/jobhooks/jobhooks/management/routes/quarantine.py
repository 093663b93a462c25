"""Routes of /v1/quarantine: rejected messages with their reason codes, replay one."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.metrics import MetricUnit

from jobhooks.management import quarantine
from jobhooks.management.openapi import (
    CursorQuery,
    LimitQuery,
    QuarantineIdPath,
    ReasonQuery,
    documented,
    request_example,
)
from jobhooks.management.operator_models import (
    QuarantinedMessageDetail,
    QuarantinePage,
    QuarantineReplayRequest,
    QuarantineReplayResult,
)
from jobhooks.management.routes.dependencies import Context, Operator
from jobhooks.storage.pages import DEFAULT_PAGE_SIZE

OK = HTTPStatus.OK
NOT_FOUND, CONFLICT = HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT
TAGS = ["quarantine"]

QuarantineReplayBody = Annotated[
    QuarantineReplayRequest | None,
    Body(
        openapi_examples={
            "after a key rotation": request_example({}),
            "older than the retention": request_example({"allow_stale": True}),
        }
    ),
]

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
logger = Logger(child=True)
metrics = Metrics()


@router.get(
    "/v1/quarantine",
    operation_id="list_quarantine",
    summary="Rejected messages with their reason codes",
    responses=documented(OK, QuarantinePage),
    tags=TAGS,
)
def handle_list_quarantine(
    context: Context,
    operator: Operator,
    reason: ReasonQuery = None,
    limit: LimitQuery = DEFAULT_PAGE_SIZE,
    cursor: CursorQuery = None,
) -> QuarantinePage:
    return quarantine.list_quarantine(context, reason=reason, limit=limit, cursor=cursor)


@router.get(
    "/v1/quarantine/<quarantine_id>",
    operation_id="get_quarantined_message",
    summary="Show a rejected message, the original SQS body included",
    responses=documented(OK, QuarantinedMessageDetail, NOT_FOUND),
    tags=TAGS,
)
def handle_get_quarantined_message(
    quarantine_id: QuarantineIdPath, context: Context, operator: Operator
) -> QuarantinedMessageDetail:
    return quarantine.get_quarantined_message(context, quarantine_id)


@router.post(
    "/v1/quarantine/<quarantine_id>/replay",
    operation_id="replay_quarantined_message",
    summary="Run a rejected message through ingest again, after its cause was fixed",
    responses=documented(OK, QuarantineReplayResult, NOT_FOUND, CONFLICT),
    tags=TAGS,
)
def handle_replay_quarantined_message(
    quarantine_id: QuarantineIdPath,
    context: Context,
    operator: Operator,
    body: QuarantineReplayBody = None,
) -> QuarantineReplayResult:
    result = quarantine.replay_quarantined_message(
        context,
        quarantine_id,
        body or QuarantineReplayRequest(),
        # The replayed event's claim is leased for what is left of this request, like ingest's.
        remaining_ms=router.lambda_context.get_remaining_time_in_millis(),
    )
    logger.info(
        "quarantined message replayed",
        extra={"quarantine_id": quarantine_id, "outcome": result.outcome},
    )
    metrics.add_metric(name="QuarantineReplayed", unit=MetricUnit.Count, value=1)
    return result
