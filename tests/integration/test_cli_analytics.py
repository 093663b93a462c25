"""`jobhooks analytics questions|query|rows|report` against the local API server
(`jobhooks_tools.local.api_server`), in front of the real handler: the JSON shapes exactly as
docs/cli.md gives them, the tables, the errors, and a query Athena (moto's) is still running,
polled with a progress line on stderr.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from jobhooks.analytics.columns import COLUMN_NAMES
from jobhooks.analytics.questions import questions
from jobhooks_tools.local.analytics.duckdb_engine import DuckDBEngine
from jobhooks_tools.local.api_server import ApiServer, load_api_module, serve_api
from jobhooks_tools.local.moto_server import MotoServer

from tests.integration.analytics_fixture import EXPECTED, FETCHER, WAIT_NOTE, write_fixture
from tests.integration.api_support import grants_from_memory, run_cli
from tests.integration.test_analytics_athena import DATABASE, WORKGROUP, give_results, moto_api

WINDOW = ("--from", "2026-07-13", "--to", "2026-07-16")


def serve(monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    # EMF blobs go to stdout at each invocation; the CLI's own output is what tests read.
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    server = serve_api()
    monkeypatch.setenv("JOBHOOKS_API_URL", server.url)
    monkeypatch.setenv("JOBHOOKS_API_AUTH", "none")
    # No stack here: the local caller is an operator because no grant binds it.
    try:
        with grants_from_memory(load_api_module()):
            yield server
    finally:
        server.shutdown()


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The hand-built table in local files, served as `jobhooks dev` serves it."""
    data = tmp_path / "analytics"
    write_fixture(data)
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_DIR", str(data))
    for _ in serve(monkeypatch):
        yield data


def test_questions_prints_one_per_line(capsys: Any, table: Path) -> None:
    run = run_cli(capsys, "analytics", "questions")

    assert run.code == 0, run.stderr
    lines = run.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(questions())
    assert lines[0].split(None, 1)[1] == next(iter(questions().values())).question
    listed = run_cli(capsys, "analytics", "questions", "--output", "json").json()
    assert [q["name"] for q in listed["questions"]] == list(questions())


@pytest.mark.parametrize("name", sorted(questions()))
def test_query_json_is_exactly_the_specified_shape(capsys: Any, table: Path, name: str) -> None:
    run = run_cli(capsys, "analytics", "query", name, *WINDOW, "--output", "json")

    assert run.code == 0, run.stderr
    answer = run.json()
    assert list(answer) == ["question", "engine", "from", "to", "columns", "rows"]
    engine = DuckDBEngine(table).answer(name, FETCHER).to_dict()
    assert answer == {key: engine[key] for key in answer}
    assert answer["rows"] == EXPECTED[name][FETCHER]
    assert (answer["from"], answer["to"]) == (
        "2026-07-13T00:00:00.000Z",
        "2026-07-16T00:00:00.000Z",
    )


def test_query_says_on_stderr_when_nothing_is_measured(capsys: Any, table: Path) -> None:
    run = run_cli(capsys, "analytics", "query", "waiting_jobs", *WINDOW)

    assert run.code == 0
    header, *rows = run.stdout.splitlines()
    assert header.split() == [
        "job_name", "outcomes", "measured_outcomes", "p50_queue_wait_ms", "p95_queue_wait_ms",
        "max_queue_wait_ms",
    ]  # fmt: skip
    assert [row.split() for row in rows] == [
        ["payments", "6", "0", "-", "-", "-"],
        ["exports", "4", "0", "-", "-", "-"],
        ["unknown", "1", "0", "-", "-", "-"],
    ]
    # (The API runs in this process: its own log lines may precede the CLI's.)
    assert run.stderr.splitlines()[-1].startswith(WAIT_NOTE)


def test_rows_json_is_one_object_per_row_with_every_column(capsys: Any, table: Path) -> None:
    run = run_cli(capsys, "analytics", "rows", *WINDOW, "--output", "json")

    assert run.code == 0, run.stderr
    listed = run.json()
    assert list(listed) == ["rows"]
    assert listed["rows"] == DuckDBEngine(table).rows(FETCHER).to_dict()["rows"]
    assert len(listed["rows"]) == 11
    for row in listed["rows"]:
        assert list(row) == list(COLUMN_NAMES)


def test_rows_table_fits_the_terminal(capsys: Any, table: Path) -> None:
    run = run_cli(capsys, "analytics", "rows", *WINDOW)

    header, *lines = run.stdout.splitlines()
    assert header.split() == [
        "TIME", "(UTC)", "STATUS", "JOB_NAME", "MS", "CATEGORY", "ACCOUNT", "EVENT_ID",
    ]  # fmt: skip
    assert len(lines) == 11 and all(len(line) <= 80 for line in lines)
    assert lines[0].split()[:5] == ["2026-07-13", "08:00:00", "success", "payments", "100"]


def test_report_writes_one_self_contained_page(capsys: Any, table: Path, tmp_path: Path) -> None:
    out = tmp_path / "health.html"

    run = run_cli(capsys, "analytics", "report", *WINDOW, "--out", str(out))

    assert run.code == 0, run.stderr
    assert re.match(rf"wrote {re.escape(str(out))} \([\d,]+ bytes\): 3 job_name\(s\)", run.stdout)
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert not re.search(r"(src|href)=", page)
    for job in ("exports", "payments", "unknown"):
        assert job in page


@pytest.mark.parametrize(
    ("argv", "code", "said"),
    [
        (("query", "why_is_the_sky_blue"), 1, "jobhooks: unknown_question: there is no"),
        (("query", "daily_outcomes", "--from", "last week"), 1, "jobhooks: invalid_window: from:"),
        (("rows", "--from", "2026-07-16", "--to", "2026-07-13"), 1, "invalid_window"),
        (("query",), 2, "the following arguments are required: NAME"),
        (("rows", "--max-wait", "0"), 2, "must be more than 0"),
    ],
)
def test_errors_are_one_line_with_their_code(
    capsys: Any, table: Path, argv: tuple[str, ...], code: int, said: str
) -> None:
    run = run_cli(capsys, "analytics", *argv)

    assert run.code == code
    assert said in run.stderr
    assert run.stdout == ""


def test_without_an_endpoint_it_is_a_usage_error(
    capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JOBHOOKS_API_URL", raising=False)

    run = run_cli(capsys, "analytics", "questions")

    assert run.code == 2 and "no API endpoint" in run.stderr


# ---------------------------------------------------------------------------- Athena, slowly


@pytest.fixture
def slow_athena(aws: MotoServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[MotoServer]:
    boto3.client("athena").create_work_group(
        Name=WORKGROUP, Configuration={"ResultConfiguration": {"OutputLocation": "s3://r/"}}
    )
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_WORKGROUP", WORKGROUP)
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_DATABASE", DATABASE)
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_QUERY_WAIT_SECONDS", "0.1")
    moto_api(
        aws,
        "state-manager/set-transition",
        {"model_name": "athena::execution", "transition": {"progression": "manual", "times": 3}},
    )
    for _ in serve(monkeypatch):
        yield aws
    moto_api(aws, "state-manager/unset-transition", {"model_name": "athena::execution"})


def test_a_running_athena_query_is_polled_with_progress_on_stderr(
    capsys: Any, slow_athena: MotoServer
) -> None:
    give_results(slow_athena, [("job_name", "varchar"), ("outcomes", "bigint")], [["e", "4"]])

    run = run_cli(capsys, "analytics", "query", "failure_rate_by_job", *WINDOW, "--output", "json")

    assert run.code == 0, run.stderr
    assert run.json()["rows"] == [["e", 4]] and run.json()["engine"] == "athena"
    assert re.search(r"^Athena is running failure_rate_by_job: QUEUED, 0\.0 MB scanned, \d+ s$",
                     run.stderr, re.M)  # fmt: skip


def test_a_query_running_longer_than_max_wait_says_so(capsys: Any, slow_athena: MotoServer) -> None:
    moto_api(
        slow_athena,
        "state-manager/set-transition",
        {"model_name": "athena::execution", "transition": {"progression": "manual", "times": 99}},
    )

    run = run_cli(capsys, "analytics", "rows", *WINDOW, "--max-wait", "1.5")

    assert run.code == 1
    assert re.search(r"jobhooks: the query is still running after 1\.5 s \(Athena query \S+",
                     run.stderr)  # fmt: skip
    assert json.dumps(run.stdout) == '""'
