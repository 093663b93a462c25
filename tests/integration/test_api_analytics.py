"""The management API's analytics routes, in process: the reviewed questions and the rows over
DuckDB (the local files of a hand-built table), and over Athena (moto's), where a query that
outlasts the wait answers 202 and is polled to its result.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from jobhooks.analytics.local_backend import register_local_backend
from jobhooks.analytics.questions import questions
from jobhooks_tools.local.analytics.duckdb_engine import DuckDBEngine
from jobhooks_tools.local.moto_server import MotoServer

from tests.integration.analytics_fixture import EXPECTED, FETCHER, write_fixture
from tests.integration.api_support import InProcessApi, grants_from_memory
from tests.integration.test_analytics_athena import (
    DATABASE,
    WORKGROUP,
    give_results,
    moto_api,
)

FROM, TO = "2026-07-13", "2026-07-16"


@pytest.fixture
def api() -> Iterator[InProcessApi]:
    api = InProcessApi()
    # No stack here: the caller is an operator because no grant binds it.
    with grants_from_memory(api.module):
        yield api


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The hand-built table in local files, where the API reads it (as on `jobhooks dev`)."""
    write_fixture(tmp_path)
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_DIR", str(tmp_path))
    return tmp_path


def window(**query: Any) -> dict[str, Any]:
    return {"from": FROM, "to": TO, **query}


def test_the_questions_are_listed_with_what_each_answers(api: InProcessApi) -> None:
    answer = api.get("/v1/analytics/questions")

    assert answer.status == 200
    listed = answer.body["questions"]
    assert [q["name"] for q in listed] == list(questions())
    assert "rows" not in [q["name"] for q in listed]
    for q in listed:
        assert set(q) == {"name", "question", "grain", "window", "unmeasured"} and all(q.values())


@pytest.mark.parametrize("name", sorted(questions()))
def test_every_question_is_answered_from_the_local_files(
    api: InProcessApi, table: Path, name: str
) -> None:
    answer = api.call("GET", f"/v1/analytics/questions/{name}", query=window())

    assert answer.status == 200, answer.text
    assert answer.body == DuckDBEngine(table).answer(name, FETCHER).to_dict()
    assert answer.body["rows"] == EXPECTED[name][FETCHER]
    assert (answer.body["engine"], answer.body["from"], answer.body["to"]) == (
        "duckdb",
        "2026-07-13T00:00:00.000Z",
        "2026-07-16T00:00:00.000Z",
    )


def test_the_rows_are_the_deduplicated_table_of_the_window(api: InProcessApi, table: Path) -> None:
    answer = api.call("GET", "/v1/analytics/rows", query=window())

    assert answer.status == 200
    assert answer.body == {
        "engine": "duckdb",
        "from": "2026-07-13T00:00:00.000Z",
        "to": "2026-07-16T00:00:00.000Z",
        "rows": DuckDBEngine(table).rows(FETCHER).to_dict()["rows"],
        "truncated": False,
    }
    assert len(answer.body["rows"]) == 11


@pytest.mark.parametrize(
    ("path", "query", "status", "code", "field"),
    [
        ("/v1/analytics/questions/why_is_the_sky_blue", {}, 404, "unknown_question", None),
        ("/v1/analytics/questions/rows", {}, 404, "unknown_question", None),
        ("/v1/analytics/questions/Bad-Name", {}, 422, "invalid_request", "name"),
        ("/v1/analytics/questions/daily_outcomes", {"from": "last tuesday"}, 422,
         "invalid_window", "from"),
        ("/v1/analytics/questions/daily_outcomes", {"from": "2026-07-16", "to": "2026-07-13"},
         422, "invalid_window", "from"),
        ("/v1/analytics/rows", {"to": "0001-01-01"}, 422, "invalid_window", "to"),
        ("/v1/analytics/rows", {"from": "2" * 41}, 422, "invalid_request", "from"),
        ("/v1/analytics/queries/0b6e1f0e-0000-4000-8000-000000000000", {}, 404,
         "query_not_found", None),
        ("/v1/analytics/queries/not%20an%20id", {}, 422, "invalid_request", "query_id"),
    ],
)  # fmt: skip
def test_bad_requests_get_a_code_and_the_field_at_fault(
    api: InProcessApi,
    table: Path,
    path: str,
    query: dict[str, str],
    status: int,
    code: str,
    field: str | None,
) -> None:
    answer = api.call("GET", path, query=query or None)

    assert answer.status == status, answer.text
    assert answer.error["code"] == code
    assert answer.error.get("field") == field
    if code == "unknown_question":
        assert "failure_rate_by_job" in answer.error["message"]  # the known names


def test_without_a_configured_engine_the_routes_say_what_to_set(
    api: InProcessApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("JOBHOOKS_ANALYTICS_DIR", "JOBHOOKS_ANALYTICS_WORKGROUP"):
        monkeypatch.delenv(name, raising=False)

    answer = api.get("/v1/analytics/rows")

    assert answer.status == 503
    assert answer.error["code"] == "analytics_not_configured"
    assert "JOBHOOKS_ANALYTICS_WORKGROUP" in answer.error["message"]


def test_a_lambda_function_never_reads_local_files(api: InProcessApi, table: Path) -> None:
    # No host registered the local back end (as on Lambda): a configuration error, not a guess.
    previous = register_local_backend(None)
    try:
        answer = api.call("GET", "/v1/analytics/rows", query={"from": "2026-06-01"})
    finally:
        register_local_backend(previous)

    assert answer.status == 503
    assert answer.error["code"] == "configuration_error"
    assert "JOBHOOKS_ANALYTICS_DIR" in answer.error["message"]


# ---------------------------------------------------------------------------- on Athena


@pytest.fixture
def athena(aws: MotoServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[MotoServer]:
    boto3.client("athena").create_work_group(
        Name=WORKGROUP, Configuration={"ResultConfiguration": {"OutputLocation": "s3://r/"}}
    )
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_WORKGROUP", WORKGROUP)
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_DATABASE", DATABASE)
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_DIR", "/not/read/when/athena/is/configured")
    # Each query state lasts three GetQueryExecution calls: QUEUED, RUNNING, then SUCCEEDED.
    moto_api(
        aws,
        "state-manager/set-transition",
        {"model_name": "athena::execution", "transition": {"progression": "manual", "times": 3}},
    )
    yield aws
    moto_api(aws, "state-manager/unset-transition", {"model_name": "athena::execution"})


def test_a_slow_athena_query_answers_202_and_is_polled_to_its_answer(
    api: InProcessApi, athena: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_QUERY_WAIT_SECONDS", "0.1")
    give_results(athena, [("job_name", "varchar"), ("outcomes", "bigint")], [["exports", "4"]])

    started = api.call("GET", "/v1/analytics/questions/waiting_jobs", query=window())

    assert started.status == 202, started.text
    pending = started.body
    assert (pending["status"], pending["question"], pending["engine"]) == (
        "running",
        "waiting_jobs",
        "athena",
    )
    assert (pending["from"], pending["state"]) == ("2026-07-13T00:00:00.000Z", "QUEUED")
    polls = []
    while True:
        polled = api.get(f"/v1/analytics/queries/{pending['query_id']}")
        polls.append(polled.status)
        if polled.status != 202:
            break
        assert polled.body["query_id"] == pending["query_id"]
        assert len(polls) < 20
    assert polled.status == 200 and polls[0] == 202
    assert polled.body["question"] == "waiting_jobs"
    assert (polled.body["columns"], polled.body["rows"]) == (
        ["job_name", "outcomes"],
        [["exports", 4]],
    )
    assert polled.body["from"] == "2026-07-13T00:00:00.000Z"


def test_a_slow_rows_listing_is_polled_to_its_rows(
    api: InProcessApi, athena: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_QUERY_WAIT_SECONDS", "0.1")
    give_results(athena, [("event_id", "varchar"), ("duration_ms", "bigint")], [["e1", "7"]])

    started = api.call("GET", "/v1/analytics/rows", query=window())
    assert started.status == 202 and started.body["question"] == "rows"
    while (polled := api.get(f"/v1/analytics/queries/{started.body['query_id']}")).status == 202:
        pass

    assert polled.status == 200
    assert polled.body["rows"] == [{"event_id": "e1", "duration_ms": 7}]
    assert polled.body["truncated"] is False and polled.body["engine"] == "athena"


def test_the_wait_stays_clear_of_the_functions_timeout(
    api: InProcessApi, athena: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 25 s asked for, 15 s left in the invocation: the route answers 202 before the timeout.
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_QUERY_WAIT_SECONDS", "25")
    moto_api(
        athena,
        "state-manager/set-transition",
        {"model_name": "athena::execution", "transition": {"progression": "manual", "times": 99}},
    )

    answer = api.call("GET", "/v1/analytics/questions/daily_outcomes", query=window())

    assert answer.status == 202
