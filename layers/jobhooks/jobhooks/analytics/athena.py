"""The questions on AWS: Amazon Athena over the Glue table, in the stack's workgroup.

One call starts the question's Athena text (`StartQueryExecution` in the workgroup, the window
as execution parameters), then polls `GetQueryExecution` until the query ends or the caller's
deadline comes: the management API answers within API Gateway's 30 s either with the result or
with a `PendingQuery` whose `query_id` the client polls (`poll`). The workgroup enforces its
own result location, encryption and bytes-scanned limit; a query the limit stops fails with a
sentence that says so.

Polling by id needs nothing stored: `GetQueryExecution` hands back the query text, whose first
line names the question (`questions.MARKER`), and the execution parameters, which are the
window. An id from another workgroup, or of a query that is not one of ours, is "not found".

`GetQueryResults` is read page by page (1,000 rows each); its first row repeats the column
names. Athena returns every value as text, converted here by the column's type.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from jobhooks.analytics.exceptions import QueryFailedError, QueryNotFoundError, aws_error_code
from jobhooks.analytics.questions import (
    ROW_LIMIT,
    ROWS_QUERY,
    Engine,
    Question,
    get_question,
    question_named_in,
    rows_query,
)
from jobhooks.analytics.results import (
    Answer,
    Listing,
    PendingQuery,
    QueryResult,
    RowsResult,
    json_value,
    note_for,
)
from jobhooks.analytics.window import QueryWindow, sql_literal

ENGINE_NAME: Final = "athena"
DEFAULT_WAIT_SECONDS: Final = 10.0
FIRST_POLL_SECONDS: Final = 0.25
MAX_POLL_SECONDS: Final = 2.0
PAGE_SIZE: Final = 1000
_INTEGER_TYPES: Final = frozenset({"tinyint", "smallint", "integer", "int", "bigint"})
_FLOAT_TYPES: Final = frozenset({"double", "float", "real"})
_SCAN_LIMIT_HINT: Final = (
    "; if the bytes-scanned limit stopped it, narrow the window or raise the stack's "
    "AnalyticsScanLimitBytes parameter"
)


class AthenaEngine:
    name = ENGINE_NAME

    def __init__(
        self,
        client: Any,
        *,
        workgroup: str,
        database: str,
        default_wait_seconds: float = DEFAULT_WAIT_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self.workgroup = workgroup
        self.database = database
        self._default_wait = default_wait_seconds
        self._monotonic = monotonic
        self._sleep = sleep

    def answer(
        self, question: str, window: QueryWindow, *, wait_seconds: float | None = None
    ) -> Answer:
        asked = get_question(question)
        query_id = self._start(asked, window)
        finished = self._wait(query_id, asked, window, wait_seconds)
        assert not isinstance(finished, RowsResult)
        return finished

    def rows(self, window: QueryWindow, *, wait_seconds: float | None = None) -> Listing:
        query = rows_query()
        finished = self._wait(self._start(query, window), query, window, wait_seconds)
        assert not isinstance(finished, QueryResult)
        return finished

    def poll(
        self, query_id: str, *, wait_seconds: float | None = None
    ) -> QueryResult | RowsResult | PendingQuery:
        execution = self._execution(query_id)
        question = question_named_in(str(execution.get("Query", "")))
        if execution.get("WorkGroup") != self.workgroup or question is None:
            raise QueryNotFoundError(query_id)
        window = QueryWindow.from_parameters(execution.get("ExecutionParameters") or [])
        return self._wait(query_id, question, window, wait_seconds)

    # -- internals -------------------------------------------------------------------------

    def _start(self, question: Question, window: QueryWindow) -> str:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self._client.start_query_execution(
                QueryString=question.sql(Engine.ATHENA, account_scoped=window.account_scoped),
                QueryExecutionContext={"Database": self.database},
                WorkGroup=self.workgroup,
                # Strings are quoted: Athena substitutes each value as a literal.
                ExecutionParameters=[sql_literal(value) for value in window.parameters()],
            )
        except (ClientError, BotoCoreError) as error:
            raise QueryFailedError(
                f"Athena did not start {question.name} ({aws_error_code(error)}); check the "
                f"workgroup {self.workgroup!r} and the API's Athena permissions"
            ) from None
        return str(response["QueryExecutionId"])

    def _execution(self, query_id: str) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        try:
            response = self._client.get_query_execution(QueryExecutionId=query_id)
        except ClientError as error:
            if aws_error_code(error) == "InvalidRequestException":
                raise QueryNotFoundError(query_id) from None
            raise QueryFailedError(
                f"Athena did not describe query {query_id[:128]!r} ({aws_error_code(error)})"
            ) from None
        execution: dict[str, Any] = response["QueryExecution"]
        return execution

    def _wait(
        self,
        query_id: str,
        question: Question,
        window: QueryWindow,
        wait_seconds: float | None,
    ) -> QueryResult | RowsResult | PendingQuery:
        deadline = self._monotonic() + (
            self._default_wait if wait_seconds is None else wait_seconds
        )
        delay = FIRST_POLL_SECONDS
        while True:
            execution = self._execution(query_id)
            status = execution.get("Status") or {}
            state = str(status.get("State", "QUEUED"))
            if state == "SUCCEEDED":
                return self._result(query_id, question, window)
            if state in ("FAILED", "CANCELLED"):
                reason = str(status.get("StateChangeReason") or "no reason given")[:500]
                raise QueryFailedError(
                    f"Athena {state.lower()} {question.name}: {reason}{_SCAN_LIMIT_HINT}"
                )
            if self._monotonic() + delay > deadline:
                scanned = (execution.get("Statistics") or {}).get("DataScannedInBytes", 0)
                return PendingQuery(
                    question=question.name,
                    engine=self.name,
                    window=window,
                    query_id=query_id,
                    state=state,
                    scanned_bytes=int(scanned or 0),
                )
            self._sleep(delay)
            delay = min(delay * 2, MAX_POLL_SECONDS)

    def _result(
        self, query_id: str, question: Question, window: QueryWindow
    ) -> QueryResult | RowsResult:
        columns, rows = self._read_results(query_id)
        if question.name == ROWS_QUERY:
            listed = [dict(zip(columns, row, strict=True)) for row in rows]
            return RowsResult(
                engine=self.name,
                window=window,
                rows=tuple(listed[:ROW_LIMIT]),
                truncated=len(listed) > ROW_LIMIT,
            )
        return QueryResult(
            question=question.name,
            engine=self.name,
            window=window,
            columns=tuple(columns),
            rows=tuple(tuple(row) for row in rows),
            note=note_for(question, columns, rows),
        )

    def _read_results(self, query_id: str) -> tuple[list[str], list[list[Any]]]:
        columns: list[str] = []
        types: list[str] = []
        rows: list[list[Any]] = []
        for index, page in enumerate(self._pages(query_id)):
            result_set = page.get("ResultSet") or {}
            page_rows = result_set.get("Rows") or []
            if index == 0:
                info = (result_set.get("ResultSetMetadata") or {}).get("ColumnInfo") or []
                columns = [str(column["Name"]) for column in info]
                types = [str(column.get("Type", "varchar")).lower() for column in info]
                # A SELECT's first row holds the column names.
                if page_rows and [_text(cell) for cell in page_rows[0].get("Data", [])] == columns:
                    page_rows = page_rows[1:]
            for row in page_rows:
                cells = row.get("Data") or []
                rows.append(
                    [
                        athena_value(_text(cell), kind)
                        for cell, kind in zip(cells, types, strict=True)
                    ]
                )
        return columns, rows

    def _pages(self, query_id: str) -> Iterator[dict[str, Any]]:
        from botocore.exceptions import BotoCoreError, ClientError

        token: str | None = None
        while True:
            arguments: dict[str, Any] = {"QueryExecutionId": query_id, "MaxResults": PAGE_SIZE}
            if token:
                arguments["NextToken"] = token
            try:
                page: dict[str, Any] = self._client.get_query_results(**arguments)
            except (ClientError, BotoCoreError) as error:
                raise QueryFailedError(
                    f"Athena did not return the results of {query_id[:128]!r} "
                    f"({aws_error_code(error)})"
                ) from None
            yield page
            token = page.get("NextToken")
            if not token:
                return


def _text(cell: dict[str, Any]) -> str | None:
    value = cell.get("VarCharValue")
    return None if value is None else str(value)


def athena_value(text: str | None, kind: str) -> Any:
    """A GetQueryResults value (always text, absent for NULL) as JSON-ready data."""
    if text is None:
        return None
    base = kind.split("(", 1)[0].strip()
    if base in _INTEGER_TYPES:
        return int(text)
    if base in _FLOAT_TYPES:
        return float(text)
    if base == "decimal":
        try:
            return json_value(Decimal(text))
        except InvalidOperation:
            return text
    if base == "boolean":
        return text == "true"
    if base.startswith("timestamp"):
        # `2026-07-13 18:04:11.204` (UTC: the table holds UTC wall times).
        return json_value(datetime.fromisoformat(text.replace(" ", "T")).replace(tzinfo=UTC))
    if base == "array":
        # Athena prints arrays as `[a, b]`; the table's only array holds field names.
        inner = text.strip()[1:-1].strip()
        return [item.strip() for item in inner.split(",")] if inner else []
    return text


def build_athena_engine(
    *,
    workgroup: str,
    database: str,
    session: Any = None,
    default_wait_seconds: float = DEFAULT_WAIT_SECONDS,
) -> AthenaEngine:
    """The engine over a real Athena client (from `session`, or boto3's default session)."""
    from jobhooks.storage.clients import aws_client

    return AthenaEngine(
        aws_client("athena", session=session),
        workgroup=workgroup,
        database=database,
        default_wait_seconds=default_wait_seconds,
    )
