"""The fixture `jobhooks analytics check` publishes, and the answers it expects: its events go
through the real normalization into local files, and DuckDB answers every reviewed question over
the fixed window exactly as the check says it must. (The check itself runs against the whole
stack in tests/e2e/test_analytics.py.)"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from jobhooks.analytics.columns import record_problems
from jobhooks.analytics.questions import questions
from jobhooks.analytics.row import row_from_outcome
from jobhooks.analytics.window import QueryWindow
from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message
from jobhooks.inbound.outcome import outcome_data
from jobhooks_tools.cli.analytics_check import FIXTURE_DURATION_MS, Fixture
from jobhooks_tools.local.analytics.duckdb_engine import DuckDBEngine
from jobhooks_tools.local.analytics.files import LocalFileSink
from jobhooks_tools.sample_events import demo_key

NOW = datetime(2026, 7, 13, 18, 4, 12, 345678, tzinfo=UTC)


@pytest.fixture(scope="module")
def fixture() -> Fixture:
    return Fixture.new(demo_key(), now=NOW)


@pytest.fixture(scope="module")
def engine(fixture: Fixture, tmp_path_factory: pytest.TempPathFactory) -> DuckDBEngine:
    directory: Path = tmp_path_factory.mktemp("check")
    policy = VerificationPolicy(keys=(demo_key(),))
    events = (fixture.completed(), fixture.failed(), fixture.resent())
    outcomes = [
        outcome_data(read_forwarded_message(event.forwarded().to_json(), policy, NOW))
        for event in events
    ]
    # The resend written too, as an at-least-once write could: the view keeps one row.
    LocalFileSink(directory, clock=lambda: NOW).put_rows([row_from_outcome(o) for o in outcomes])
    return DuckDBEngine(directory)


def test_the_fixture_is_two_outcomes_of_its_own_in_a_window_of_their_own(
    fixture: Fixture, engine: DuckDBEngine
) -> None:
    start, end = fixture.window
    rows = engine.rows(QueryWindow.parse(start, end, now=NOW)).to_dict()["rows"]

    assert [row["status"] for row in rows] == ["success", "failure"]
    assert all(record_problems(row) == [] for row in rows)
    expected = fixture.expected_rows()
    for row in rows:
        for column, value in expected[row["status"]].items():
            assert row[column] == value, column
    assert rows[0]["duration_ms"] == FIXTURE_DURATION_MS
    assert fixture.error_category == "datasource_error"


def test_every_reviewed_question_has_the_answer_the_check_expects(
    fixture: Fixture, engine: DuckDBEngine
) -> None:
    start, end = fixture.window
    window = QueryWindow.parse(start, end, now=NOW)
    expected = fixture.expected_answers(fixture.tenant_id)

    assert set(expected) == set(questions())
    for name in questions():
        assert list(map(list, engine.answer(name, window).rows)) == expected[name], name


def test_both_outcomes_fall_on_one_day_even_at_midnight() -> None:
    late = Fixture.new(demo_key(), now=datetime(2026, 7, 14, 0, 0, 59, 999500, tzinfo=UTC))

    assert late.completed_at.date() == late.failed_at.date()
