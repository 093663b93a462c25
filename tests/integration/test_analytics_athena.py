"""The Athena engine against moto's Athena: what it starts, how it waits, what it reads back.

moto runs no SQL: it hands back the results it is given (its /moto-api/static/athena/query-results
endpoint), advances a query's state one step per GetQueryExecution when told to (its state
manager), and returns every result in one page. The answers of the SQL itself are tested on
DuckDB (test_analytics_duckdb.py); pagination, failed and cancelled queries run against
`PagedAthena`, a small client with the same three operations.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from jobhooks.analytics.athena import AthenaEngine, athena_value
from jobhooks.analytics.engine import build_query_engine
from jobhooks.analytics.exceptions import QueryFailedError, QueryNotFoundError
from jobhooks.analytics.questions import MARKER, ROW_LIMIT, Engine, get_question, rows_query
from jobhooks.analytics.results import PendingQuery, QueryResult, RowsResult
from jobhooks.analytics.settings import AnalyticsQuerySettings
from jobhooks.analytics.window import QueryWindow
from jobhooks_tools.local.moto_server import MotoServer

WORKGROUP = "jobhooks-analytics"
DATABASE = "jobhooks_analytics"
WINDOW = QueryWindow(datetime(2026, 7, 13, tzinfo=UTC), datetime(2026, 7, 16, tzinfo=UTC))


def moto_api(server: MotoServer, path: str, body: dict[str, Any]) -> None:
    request = urllib.request.Request(
        f"{server.endpoint_url}/moto-api/{path}",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10):
        pass


def give_results(server: MotoServer, columns: list[tuple[str, str]], rows: list[list[Any]]) -> None:
    """The next query's results, as Athena returns a SELECT's: a header row, then text values."""
    header = {"Data": [{"VarCharValue": name} for name, _ in columns]}
    data = [
        {"Data": [{} if value is None else {"VarCharValue": value} for value in values]}
        for values in rows
    ]
    moto_api(
        server,
        "static/athena/query-results",
        {
            "region": "us-east-1",
            "results": [
                {
                    "rows": [header, *data],
                    "column_info": [{"Name": name, "Type": kind} for name, kind in columns],
                }
            ],
        },
    )


@pytest.fixture
def athena(aws: MotoServer) -> Iterator[Any]:
    client = boto3.client("athena")
    client.create_work_group(
        Name=WORKGROUP,
        Configuration={"ResultConfiguration": {"OutputLocation": "s3://results/"}},
    )
    yield client
    # moto's reset leaves transitions in place: put the default back for the next test.
    moto_api(aws, "state-manager/unset-transition", {"model_name": "athena::execution"})


def engine_for(client: Any, **kwargs: Any) -> AthenaEngine:
    return AthenaEngine(
        client, workgroup=WORKGROUP, database=DATABASE, sleep=lambda _: None, **kwargs
    )


def test_a_question_runs_in_the_workgroup_with_the_window_as_parameters(
    aws: MotoServer, athena: Any
) -> None:
    give_results(
        aws,
        [
            ("job_name", "varchar"),
            ("outcomes", "bigint"),
            ("failures", "bigint"),
            ("failure_rate", "double"),
        ],
        [["exports", "4", "2", "0.5"], ["payments", "6", "1", "0.1667"]],
    )
    result = engine_for(athena).answer("failure_rate_by_job", WINDOW)
    assert isinstance(result, QueryResult)
    assert result.to_dict() == {
        "question": "failure_rate_by_job",
        "engine": "athena",
        "from": "2026-07-13T00:00:00.000Z",
        "to": "2026-07-16T00:00:00.000Z",
        "columns": ["job_name", "outcomes", "failures", "failure_rate"],
        "rows": [["exports", 4, 2, 0.5], ["payments", 6, 1, 0.1667]],
        "note": None,
    }
    (query_id,) = athena.list_query_executions(WorkGroup=WORKGROUP)["QueryExecutionIds"]
    execution = athena.get_query_execution(QueryExecutionId=query_id)["QueryExecution"]
    assert execution["Query"] == get_question("failure_rate_by_job").sql(Engine.ATHENA)
    assert execution["QueryExecutionContext"] == {"Database": DATABASE}
    assert execution["ExecutionParameters"] == [
        "'2026-07-12'",
        "'2026-07-13 00:00:00.000'",
        "'2026-07-16 00:00:00.000'",
    ]


def test_a_slow_query_answers_still_running_then_is_polled_to_its_result(
    aws: MotoServer, athena: Any
) -> None:
    # Each query state lasts two GetQueryExecution calls: QUEUED, RUNNING, SUCCEEDED.
    moto_api(
        aws,
        "state-manager/set-transition",
        {"model_name": "athena::execution", "transition": {"progression": "manual", "times": 2}},
    )
    give_results(aws, [("job_name", "varchar"), ("outcomes", "bigint")], [["payments", "1"]])
    engine = engine_for(athena)
    pending = engine.answer("waiting_jobs", WINDOW, wait_seconds=0)
    assert isinstance(pending, PendingQuery)
    document = pending.to_dict()
    assert document["status"] == "running" and document["state"] == "QUEUED"
    assert (document["question"], document["from"]) == ("waiting_jobs", "2026-07-13T00:00:00.000Z")

    # The API keeps nothing: the id alone brings back the question and the window.
    still = engine.poll(pending.query_id, wait_seconds=0)
    assert isinstance(still, PendingQuery) and still.state == "RUNNING"
    finished = engine.poll(pending.query_id, wait_seconds=30)
    assert isinstance(finished, QueryResult)
    assert finished.question == "waiting_jobs" and finished.window == WINDOW
    assert finished.rows == (("payments", 1),)


def test_rows_come_back_typed_like_the_table(aws: MotoServer, athena: Any) -> None:
    give_results(
        aws,
        [
            ("timestamp_utc", "timestamp"),
            ("event_id", "varchar"),
            ("attempt_count", "bigint"),
            ("unmeasured", "array"),
            ("error_category", "varchar"),
        ],
        [
            ["2026-07-13 18:04:11.204", "e1", "1", "[queue_wait_ms, duration_ms]", "unknown"],
            ["2026-07-13 19:00:00.000", "e2", "1", "[]", None],
        ],
    )
    listed = engine_for(athena).rows(WINDOW)
    assert isinstance(listed, RowsResult) and listed.truncated is False
    assert listed.to_dict() == {
        "rows": [
            {
                "timestamp_utc": "2026-07-13T18:04:11.204Z",
                "event_id": "e1",
                "attempt_count": 1,
                "unmeasured": ["queue_wait_ms", "duration_ms"],
                "error_category": "unknown",
            },
            {
                "timestamp_utc": "2026-07-13T19:00:00.000Z",
                "event_id": "e2",
                "attempt_count": 1,
                "unmeasured": [],
                "error_category": None,
            },
        ]
    }
    (query_id,) = athena.list_query_executions(WorkGroup=WORKGROUP)["QueryExecutionIds"]
    query = athena.get_query_execution(QueryExecutionId=query_id)["QueryExecution"]["Query"]
    assert query == rows_query().sql(Engine.ATHENA)


def test_an_empty_answer_says_so(aws: MotoServer, athena: Any) -> None:
    give_results(aws, [("utc_day", "date"), ("outcomes", "bigint")], [])
    result = engine_for(athena).answer("daily_outcomes", WINDOW)
    assert isinstance(result, QueryResult)
    assert result.rows == () and result.note == "No outcome in this window."


def test_a_query_of_another_workgroup_is_not_found(aws: MotoServer, athena: Any) -> None:
    athena.create_work_group(Name="someone-else")
    foreign = athena.start_query_execution(
        QueryString=get_question("daily_outcomes").sql(Engine.ATHENA),
        WorkGroup="someone-else",
        ExecutionParameters=[
            "'2026-07-12'",
            "'2026-07-13 00:00:00.000'",
            "'2026-07-16 00:00:00.000'",
        ],
    )["QueryExecutionId"]
    ours_but_not_a_question = athena.start_query_execution(
        QueryString="SELECT 1", WorkGroup=WORKGROUP
    )["QueryExecutionId"]
    engine = engine_for(athena)
    for query_id in (foreign, ours_but_not_a_question):
        with pytest.raises(QueryNotFoundError):
            engine.poll(query_id)


def test_settings_choose_athena_on_aws(aws: MotoServer) -> None:
    engine = build_query_engine(
        AnalyticsQuerySettings.from_env(
            {
                "JOBHOOKS_ANALYTICS_WORKGROUP": WORKGROUP,
                "JOBHOOKS_ANALYTICS_DATABASE": DATABASE,
                "JOBHOOKS_ANALYTICS_DIR": "/ignored/when/athena/is/configured",
            }
        )
    )
    assert isinstance(engine, AthenaEngine) and engine.name == "athena"
    assert (engine.workgroup, engine.database) == (WORKGROUP, DATABASE)
    with pytest.raises(Exception, match="JOBHOOKS_ANALYTICS_DATABASE"):
        AnalyticsQuerySettings.from_env({"JOBHOOKS_ANALYTICS_WORKGROUP": WORKGROUP})


# ---------------------------------------------------------------------------- a scripted Athena


class PagedAthena:
    """StartQueryExecution, GetQueryExecution and GetQueryResults, with pages of `page_size`."""

    def __init__(
        self, *, states: list[str], rows: list[list[str]], page_size: int, reason: str = ""
    ) -> None:
        self._states = states
        self._rows = rows
        self._page_size = page_size
        self._reason = reason
        self.started: dict[str, Any] = {}
        self.pages_read = 0

    def start_query_execution(self, **arguments: Any) -> dict[str, Any]:
        self.started = arguments
        return {"QueryExecutionId": "q-1"}

    def get_query_execution(self, QueryExecutionId: str) -> dict[str, Any]:
        state = self._states.pop(0) if len(self._states) > 1 else self._states[0]
        return {
            "QueryExecution": {
                "QueryExecutionId": QueryExecutionId,
                "Query": self.started["QueryString"],
                "WorkGroup": self.started["WorkGroup"],
                "ExecutionParameters": self.started["ExecutionParameters"],
                "Status": {"State": state, "StateChangeReason": self._reason},
                "Statistics": {"DataScannedInBytes": 1234},
            }
        }

    def get_query_results(
        self, QueryExecutionId: str, MaxResults: int, NextToken: str = "0"
    ) -> dict[str, Any]:
        assert MaxResults <= 1000
        start = int(NextToken)
        everything = [["event_id"], *self._rows]  # the header row first, as Athena does
        page = everything[start : start + self._page_size]
        self.pages_read += 1
        answer: dict[str, Any] = {
            "ResultSet": {
                "Rows": [{"Data": [{"VarCharValue": value} for value in row]} for row in page],
                "ResultSetMetadata": {"ColumnInfo": [{"Name": "event_id", "Type": "varchar"}]},
            }
        }
        if start + self._page_size < len(everything):
            answer["NextToken"] = str(start + self._page_size)
        return answer


def test_results_are_read_page_by_page_and_cut_at_the_row_limit() -> None:
    rows = [[f"e{n:04d}"] for n in range(ROW_LIMIT + 1)]
    client = PagedAthena(states=["RUNNING", "SUCCEEDED"], rows=rows, page_size=300)
    listed = engine_for(client).rows(WINDOW)
    assert isinstance(listed, RowsResult)
    assert client.pages_read == 4  # 1,002 rows with the header, 300 a page
    assert listed.truncated is True and len(listed.rows) == ROW_LIMIT
    assert listed.rows[0] == {"event_id": "e0000"}
    assert client.started["QueryString"].startswith(f"{MARKER}rows\n")


@pytest.mark.parametrize(
    ("state", "reason", "said"),
    [
        ("FAILED", "SYNTAX_ERROR: line 1:8", "failed waiting_jobs: SYNTAX_ERROR"),
        ("CANCELLED", "Bytes scanned limit was exceeded", "AnalyticsScanLimitBytes"),
    ],
)
def test_a_failed_or_cancelled_query_says_why(state: str, reason: str, said: str) -> None:
    client = PagedAthena(states=["QUEUED", state], rows=[], page_size=10, reason=reason)
    with pytest.raises(QueryFailedError, match=said) as failed:
        engine_for(client).answer("waiting_jobs", WINDOW)
    assert failed.value.code == "query_failed" and reason in failed.value.message


def test_waiting_is_bounded_by_the_deadline() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    client = PagedAthena(states=["RUNNING"], rows=[], page_size=10)
    engine = AthenaEngine(
        client, workgroup=WORKGROUP, database=DATABASE, monotonic=lambda: now[0], sleep=sleep
    )
    pending = engine.answer("slowest_jobs", WINDOW, wait_seconds=8)
    assert isinstance(pending, PendingQuery) and pending.scanned_bytes == 1234
    assert slept == [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]  # backs off to 2 s a poll, within 8 s


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        (None, "bigint", None),
        ("42", "integer", 42),
        ("0.25", "double", 0.25),
        ("3.50", "decimal(10,2)", 3.5),
        ("7.00", "decimal(10,2)", 7),
        ("true", "boolean", True),
        ("2026-07-13", "date", "2026-07-13"),
        ("2026-07-13 00:00:00.000", "timestamp(3)", "2026-07-13T00:00:00.000Z"),
        ("[a]", "array(varchar)", ["a"]),
        ("plain", "varchar", "plain"),
    ],
)
def test_athena_text_values_become_json_values(text: str | None, kind: str, value: Any) -> None:
    assert athena_value(text, kind) == value
