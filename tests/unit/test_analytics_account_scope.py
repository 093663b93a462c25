"""A window scoped to one account: the tenant portal's charts read that tenant's rows only."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from jobhooks.analytics.exceptions import InvalidWindowError
from jobhooks.analytics.questions import Engine, get_question
from jobhooks.analytics.window import QueryWindow, sql_literal

START, END = datetime(2026, 7, 13, tzinfo=UTC), datetime(2026, 7, 14, tzinfo=UTC)


def test_an_unscoped_window_keeps_its_three_parameters() -> None:
    window = QueryWindow(START, END)
    assert not window.account_scoped and len(window.parameters()) == 3


def test_a_scoped_window_names_its_account_last_and_round_trips_as_athena_literals() -> None:
    window = QueryWindow(START, END, account_id="o'brien & co")
    parameters = window.parameters()
    assert parameters[:3] == QueryWindow(START, END).parameters()
    assert parameters[3] == "o'brien & co"
    # Athena substitutes execution parameters as written: the quote is doubled, not closing.
    literals = [sql_literal(value) for value in parameters]
    assert literals[3] == "'o''brien & co'"
    assert QueryWindow.from_parameters(literals) == window


def test_a_scoped_question_filters_the_outcomes_view_by_one_placeholder_more() -> None:
    question = get_question("job_health_over_time")
    for engine in Engine:
        plain, scoped = question.sql(engine), question.sql(engine, account_scoped=True)
        assert scoped.count("?") == plain.count("?") + 1
        assert "WHERE account_id = ?" in scoped and "account_id = ?" not in plain


def test_an_empty_account_is_no_scope() -> None:
    with pytest.raises(InvalidWindowError):
        QueryWindow(START, END, account_id="")
