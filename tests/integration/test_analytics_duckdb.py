"""Every reviewed question on DuckDB over the local sink's files, against known answers.

The same rows answer the Athena texts too: where a question's DuckDB and Athena texts are one
text it runs once; every Athena text is also transpiled by sqlglot (read as Trino) to DuckDB and
must give the same answer on the same rows.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlglot
from jobhooks.analytics.columns import COLUMN_NAMES, record_problems
from jobhooks.analytics.engine import build_query_engine
from jobhooks.analytics.exceptions import (
    AnalyticsNotConfiguredError,
    AnalyticsWriteError,
    QueryNotFoundError,
    UnknownQuestionError,
)
from jobhooks.analytics.questions import ROW_LIMIT, Engine, questions, rows_query
from jobhooks.analytics.results import NO_OUTCOMES_NOTE
from jobhooks.analytics.settings import AnalyticsQuerySettings
from jobhooks.analytics.window import QueryWindow
from jobhooks_tools.local.analytics.duckdb_engine import DuckDBEngine
from jobhooks_tools.local.analytics.files import LocalFileSink, row_files

from tests.integration.analytics_fixture import (
    EMPTY,
    EXPECTED,
    FETCHER,
    MEASURED,
    NOW,
    ROWS,
    WAIT_NOTE,
    row,
    write_duplicates,
    write_fixture,
    write_rows,
)

WINDOWS = (FETCHER, MEASURED)


@pytest.fixture
def engine(tmp_path: Path) -> DuckDBEngine:
    write_fixture(tmp_path)
    return DuckDBEngine(tmp_path)


def answers(engine: DuckDBEngine) -> dict[tuple[str, QueryWindow], object]:
    everything: dict[tuple[str, QueryWindow], object] = {}
    for name in questions():
        for window in (*WINDOWS, EMPTY):
            everything[name, window] = engine.answer(name, window).to_dict()
    for window in (*WINDOWS, EMPTY):
        everything["rows", window] = engine.rows(window).to_dict()
    return everything


def test_the_expected_answers_cover_every_question() -> None:
    assert set(EXPECTED) == set(questions())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_question_answers_the_hand_built_fixture(engine: DuckDBEngine, name: str) -> None:
    for window in WINDOWS:
        result = engine.answer(name, window)
        assert [list(r) for r in result.rows] == EXPECTED[name][window], (name, window)
        document = result.to_dict()
        assert document["question"] == name and document["engine"] == "duckdb"
        assert (document["from"], document["to"]) == (
            window.to_dict()["from"],
            window.to_dict()["to"],
        )
        assert len(document["columns"]) == len(document["rows"][0])
        json.dumps(document)  # JSON-ready as it is


def test_a_duplicate_write_changes_no_answer(tmp_path: Path) -> None:
    write_fixture(tmp_path)
    engine = DuckDBEngine(tmp_path)
    before = answers(engine)
    files = len(row_files(tmp_path))
    write_duplicates(tmp_path)
    assert len(row_files(tmp_path)) > files
    partitions = {path.parent.name for path in row_files(tmp_path)}
    assert {"dt=2026-07-13", "dt=2026-07-14", "dt=2026-07-15", "dt=2026-07-16"} <= partitions
    assert answers(engine) == before
    # The table itself does hold the copies: only the outcomes view reads one per event_id.
    _, rows = engine.execute(
        "SELECT count(*), count(DISTINCT event_id) FROM background_job_completed"
    )
    assert rows[0][0] > rows[0][1] == len(ROWS)


def test_the_window_is_from_inclusive_to_exclusive(engine: DuckDBEngine) -> None:
    listed = [r["event_id"] for r in engine.rows(FETCHER).rows]
    assert listed == [f"e{n:02d}" for n in range(1, 12)]
    one_ms = QueryWindow.parse("2026-07-12T23:59:59.999Z", "2026-07-13T00:00:00Z", now=NOW)
    assert [r["event_id"] for r in engine.rows(one_ms).rows] == ["e00"]


def test_a_window_with_nothing_measured_says_so(engine: DuckDBEngine) -> None:
    waiting = engine.answer("waiting_jobs", FETCHER)
    assert waiting.note is not None and waiting.note.startswith(WAIT_NOTE)
    assert "enqueue time" in waiting.note
    assert engine.answer("waiting_jobs", MEASURED).note is None
    # Retries are measured in both windows (Fetcher's attempt_count is 1 by design).
    assert engine.answer("retried_jobs", FETCHER).note is None
    # Two failures only: outcomes, but no measured duration.
    failures = QueryWindow.parse("2026-07-14T09:00:00Z", "2026-07-14T10:30:00Z", now=NOW)
    slowest = engine.answer("slowest_jobs", failures)
    assert [list(r) for r in slowest.rows] == [["exports", 2, 0, None, None, None]]
    assert slowest.note is not None and slowest.note.startswith(WAIT_NOTE)
    assert "duration_ms" in slowest.note
    assert engine.answer("slowest_jobs", FETCHER).note is None


def test_an_empty_window_or_table_answers_with_no_rows_and_says_so(tmp_path: Path) -> None:
    for engine in (DuckDBEngine(tmp_path / "nothing-written"), DuckDBEngine(tmp_path)):
        write_fixture(tmp_path)
        for name in questions():
            result = engine.answer(name, EMPTY)
            assert result.rows == () and result.note == NO_OUTCOMES_NOTE, name
            assert result.columns, name
        assert engine.rows(EMPTY).to_dict() == {"rows": []}


def test_rows_lists_every_column_with_its_type(engine: DuckDBEngine) -> None:
    listed = engine.rows(FETCHER)
    assert listed.truncated is False
    # What DuckDB reads back has the contract's names and types, as what the sink wrote.
    assert [record_problems(r) for r in listed.rows] == [[]] * len(listed.rows)
    first = listed.rows[0]
    assert tuple(first) == COLUMN_NAMES
    assert first["timestamp_utc"] == "2026-07-13T08:00:00.000Z"
    assert isinstance(first["duration_ms"], int) and first["unmeasured"] == ["queue_wait_ms"]
    assert listed.rows[3]["error_category"] == "datasource_error"
    assert first["error_category"] is None


def test_rows_stops_at_the_row_limit_and_says_it_was_cut(tmp_path: Path) -> None:
    many = [
        row(f"m{n:04d}", f"2026-07-20T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z", duration=n)
        for n in range(ROW_LIMIT + 1)
    ]
    LocalFileSink(tmp_path, clock=lambda: datetime(2026, 7, 20, 12, tzinfo=UTC)).put_rows(many)
    window = QueryWindow.parse("2026-07-20", "2026-07-21", now=NOW)
    listed = DuckDBEngine(tmp_path).rows(window)
    assert listed.truncated is True and len(listed.rows) == ROW_LIMIT
    assert listed.rows[-1]["event_id"] == f"m{ROW_LIMIT - 1:04d}"


@pytest.mark.parametrize("name", sorted([*questions(), "rows"]))
def test_the_athena_text_gives_the_same_answer(engine: DuckDBEngine, name: str) -> None:
    question = rows_query() if name == "rows" else questions()[name]
    athena = question.sql(Engine.ATHENA)
    # One text serves both engines today; a question with two texts is still compared below.
    assert question.shared, f"{name}: compare its two texts' answers"
    duckdb_text = sqlglot.transpile(athena, read="trino", write="duckdb")[0]
    for window in (*WINDOWS, EMPTY):
        parameters = window.parameters()
        assert engine.execute(duckdb_text, parameters) == engine.execute(
            question.sql(Engine.DUCKDB), parameters
        ), (name, window)


def test_the_local_sink_publishes_whole_files_only(tmp_path: Path) -> None:
    sink = LocalFileSink(tmp_path, clock=lambda: datetime(2026, 7, 13, 18, tzinfo=UTC))
    sink.put_rows(ROWS[:3])
    sink.put_rows([])
    (published,) = row_files(tmp_path)
    assert published.parent.name == "dt=2026-07-13" and published.suffix == ".jsonl"
    lines = published.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [r.to_record() for r in ROWS[:3]]
    # A temporary file a crashed writer left behind is never read.
    (published.parent / ".crashed.jsonl.tmp").write_text('{"half a ro')
    everything = QueryWindow.parse("2026-07-12", "2026-07-17", now=NOW)
    assert len(DuckDBEngine(tmp_path).rows(everything).rows) == 3


def test_concurrent_writers_lose_no_row(tmp_path: Path) -> None:
    def write(offset: int) -> None:
        for n in range(20):
            write_rows(tmp_path, [row(f"w{offset}-{n}", "2026-07-13T10:00:00.000Z", duration=n)])

    threads = [threading.Thread(target=write, args=(offset,)) for offset in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    window = QueryWindow.parse("2026-07-13", "2026-07-14", now=NOW)
    (daily,) = DuckDBEngine(tmp_path).answer("daily_outcomes", window).rows
    assert daily[1] == 80


def test_a_sink_that_cannot_write_raises_the_retryable_error(tmp_path: Path) -> None:
    # The table's directory is a file: no partition can be made under it, whoever runs this.
    (tmp_path / "background_job_completed").write_text("not a directory")
    with pytest.raises(
        AnalyticsWriteError, match="2 of 2 analytics rows were not written"
    ) as error:
        LocalFileSink(tmp_path).put_rows(ROWS[:2])
    assert error.value.code == "analytics_write_failed"
    # What the sink knows, true for every writer (ingest spills or retries; the spill function
    # retries): the rows are kept, and where to look.
    assert "they are not dropped" in error.value.message
    assert 'docs/analytics.md, "When a row cannot be written"' in error.value.message
    assert list(tmp_path.iterdir()) == [tmp_path / "background_job_completed"]


def test_unknown_questions_and_query_ids_are_refused_with_the_known_names(
    engine: DuckDBEngine,
) -> None:
    with pytest.raises(UnknownQuestionError, match="failure_rate_by_job") as unknown:
        engine.answer("why_is_the_sky_blue", FETCHER)
    assert unknown.value.code == "unknown_question"
    with pytest.raises(QueryNotFoundError):
        engine.poll("0b6e1f0e-0000-4000-8000-000000000000")


def test_settings_choose_duckdb_on_the_local_stack(tmp_path: Path) -> None:
    write_fixture(tmp_path)
    local = build_query_engine(
        AnalyticsQuerySettings.from_env({"JOBHOOKS_ANALYTICS_DIR": str(tmp_path)})
    )
    assert local.name == "duckdb"
    assert local.answer("daily_outcomes", MEASURED).rows == (
        (*EXPECTED["daily_outcomes"][MEASURED][0],),
    )
    with pytest.raises(AnalyticsNotConfiguredError):
        build_query_engine(AnalyticsQuerySettings.from_env({}))
