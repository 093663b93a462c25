"""Routes of /v1/analytics: the background_job_completed table, its reviewed questions and rows.

The table spans every tenant, so these routes are for operators only: a caller a grant binds to
tenants gets 403 `operator_only` (the `Operator` dependency; docs/api.md, "Who may call"). The
tenant portal charts one tenant's outcomes through its own route instead.

Athena can take longer than API Gateway's 30 s: a route waits for the engine at most
`JOBHOOKS_ANALYTICS_QUERY_WAIT_SECONDS` (and never into the last seconds of the function's own
15 s), then answers 202 with the query id, which `GET /v1/analytics/queries/{query_id}` polls.
DuckDB (`jobhooks dev`) answers at once.

The engine is built on the first analytics request, not when the module is imported: the other
routes never pay for it (`dependencies.analytics_engine`, which tests replace through the resolver's
`dependency_overrides`).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any, Final

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from jobhooks.management.openapi import (
    QueryIdPath,
    QuestionNamePath,
    WindowFromQuery,
    WindowToQuery,
    documented,
)
from jobhooks.management.operator_models import (
    AnalyticsAnswer,
    AnalyticsQuestion,
    AnalyticsQuestionList,
    AnalyticsRows,
    PendingAnalyticsQuery,
)
from jobhooks.management.routes.dependencies import Operator, analytics_engine
from jobhooks.storage.times import utc_now

if TYPE_CHECKING:
    from jobhooks.analytics.results import PendingQuery, QueryResult, RowsResult

# The analytics package itself loads with the first analytics request: the API's other routes,
# which are most of its traffic, never pay for it at cold start (docs/performance.md).

OK, ACCEPTED = HTTPStatus.OK, HTTPStatus.ACCEPTED
NOT_FOUND = HTTPStatus.NOT_FOUND
BAD_GATEWAY, SERVICE_UNAVAILABLE = HTTPStatus.BAD_GATEWAY, HTTPStatus.SERVICE_UNAVAILABLE
TAGS = ["analytics (operators only)"]
# What a finished Athena query still needs after the wait: GetQueryResults, page by page, and
# the answer written back before the function's timeout.
RESULT_RESERVE_SECONDS: Final = 4.0

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]
logger = Logger(child=True)


# `Any`: the route's parameter types are read at import, and the engine's Protocol lives in the
# analytics package, which loads on the first analytics request.
Engine = Annotated[Any, Depends(analytics_engine)]


def _still_running() -> dict[int, Any]:
    return {
        ACCEPTED.value: {
            "description": "Still running: poll GET /v1/analytics/queries/{query_id}",
            "content": {"application/json": {"model": PendingAnalyticsQuery}},
        }
    }


# A query can fail in the engine (502) or find analytics unconfigured (503).
_ENGINE_ERRORS: Final = (BAD_GATEWAY, SERVICE_UNAVAILABLE)


@router.get(
    "/v1/analytics/questions",
    operation_id="list_analytics_questions",
    summary="The reviewed questions of the analytics table",
    responses=documented(OK, AnalyticsQuestionList),
    tags=TAGS,
)
def handle_list_analytics_questions(operator: Operator) -> AnalyticsQuestionList:
    from jobhooks.analytics.questions import questions

    return AnalyticsQuestionList(
        questions=[AnalyticsQuestion.model_validate(q.summary()) for q in questions().values()]
    )


@router.get(
    "/v1/analytics/questions/<name>",
    operation_id="answer_analytics_question",
    summary="Answer one reviewed question over a window (202 while Athena runs it)",
    responses={
        **documented(OK, AnalyticsAnswer, NOT_FOUND, *_ENGINE_ERRORS),
        **_still_running(),
    },
    tags=TAGS,
)
def handle_answer_analytics_question(
    name: QuestionNamePath,
    engine: Engine,
    operator: Operator,
    window_from: WindowFromQuery = None,
    window_to: WindowToQuery = None,
) -> Response[Any]:
    from jobhooks.analytics.window import QueryWindow

    window = QueryWindow.parse(window_from, window_to, now=utc_now())
    answer = engine.answer(name, window, wait_seconds=_wait_seconds())
    return _answered(answer)


@router.get(
    "/v1/analytics/queries/<query_id>",
    operation_id="get_analytics_query",
    summary="The answer of a question or listing that was still running (202 while it runs)",
    responses={
        **documented(OK, AnalyticsAnswer, NOT_FOUND, *_ENGINE_ERRORS),
        # The query was a question (AnalyticsAnswer) or the rows listing (AnalyticsRows).
        OK.value: {
            "description": "The answer of the question, or the rows of the listing",
            "content": {"application/json": {"model": AnalyticsAnswer | AnalyticsRows}},
        },
        **_still_running(),
    },
    tags=TAGS,
)
def handle_get_analytics_query(
    query_id: QueryIdPath, engine: Engine, operator: Operator
) -> Response[Any]:
    return _answered(engine.poll(query_id, wait_seconds=_wait_seconds()))


@router.get(
    "/v1/analytics/rows",
    operation_id="list_analytics_rows",
    summary="The deduplicated rows of a window, one per event_id (202 while Athena runs it)",
    responses={**documented(OK, AnalyticsRows, *_ENGINE_ERRORS), **_still_running()},
    tags=TAGS,
)
def handle_list_analytics_rows(
    engine: Engine,
    operator: Operator,
    window_from: WindowFromQuery = None,
    window_to: WindowToQuery = None,
) -> Response[Any]:
    from jobhooks.analytics.window import QueryWindow

    window = QueryWindow.parse(window_from, window_to, now=utc_now())
    return _answered(engine.rows(window, wait_seconds=_wait_seconds()))


def _wait_seconds() -> float:
    from jobhooks.analytics.settings import AnalyticsQuerySettings

    configured = AnalyticsQuerySettings.from_env().analytics_query_wait_seconds
    remaining = router.lambda_context.get_remaining_time_in_millis() / 1000
    return max(0.0, min(configured, remaining - RESULT_RESERVE_SECONDS))


def _answered(answer: QueryResult | RowsResult | PendingQuery) -> Response[Any]:
    """200 with the answer, or 202 with the query to poll."""
    from jobhooks.analytics.questions import ROWS_QUERY
    from jobhooks.analytics.results import PendingQuery, RowsResult

    if isinstance(answer, PendingQuery):
        logger.info(
            "analytics query still running",
            extra={"question": answer.question, "query_id": answer.query_id},
        )
        return _json(ACCEPTED, answer.to_dict())
    if isinstance(answer, RowsResult):
        body = {
            "engine": answer.engine,
            **answer.window.to_dict(),
            **answer.to_dict(),
            "truncated": answer.truncated,
        }
        logger.info("analytics rows listed", extra={"question": ROWS_QUERY})
        return _json(OK, body)
    logger.info("analytics question answered", extra={"question": answer.question})
    return _json(OK, answer.to_dict())


def _json(status: HTTPStatus, body: dict[str, Any]) -> Response[Any]:
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)
