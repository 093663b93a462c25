"""`render_report`: one self-contained HTML file with failure rate and p95 duration per job_name
over time, drawn from the job_health_over_time answer of the fixture table."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest
from jobhooks.analytics.results import QueryResult
from jobhooks_tools.local.analytics.duckdb_engine import DuckDBEngine
from jobhooks_tools.local.analytics.report import REPORT_QUESTION, render_report

from tests.integration.analytics_fixture import EMPTY, EXPECTED, FETCHER, write_fixture

GENERATED = datetime(2026, 7, 16, 9, 30, tzinfo=UTC)


class Page(HTMLParser):
    """Every element with its attributes, and the text, of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page


@pytest.fixture
def report(tmp_path: Path) -> str:
    write_fixture(tmp_path)
    result = DuckDBEngine(tmp_path).answer(REPORT_QUESTION, FETCHER)
    html = render_report(result, generated_at=GENERATED)
    written = tmp_path / "report.html"
    written.write_text(html, encoding="utf-8")  # one file, as the CLI writes it
    return written.read_text(encoding="utf-8")


def test_the_report_references_nothing_outside_itself(report: str) -> None:
    assert not re.search(r"https?:", report, re.IGNORECASE)
    assert "//" not in re.sub(r"<!--.*?-->", "", report).replace("://", "")
    page = parse(report)
    tags = {tag for tag, _ in page.elements}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed", "image", "use"}
    for tag, attributes in page.elements:
        for name in ("src", "href", "xlink:href", "action", "srcset"):
            assert name not in attributes, (tag, name)
        assert "url(" not in (attributes.get("style") or "")
    assert "@import" not in report and "url(" not in report


def test_the_report_holds_both_series_of_every_job_name(report: str) -> None:
    page = parse(report)
    series = {
        (attributes["data-job"], attributes["data-series"])
        for tag, attributes in page.elements
        if tag == "svg"
    }
    jobs = {row[1] for row in EXPECTED[REPORT_QUESTION][FETCHER]}
    assert series == {(job, s) for job in jobs for s in ("failure_rate", "p95_duration_ms")}

    points: dict[tuple[str, str], dict[str, str]] = {}
    current_job = None
    current_series = None
    for tag, attributes in page.elements:
        if tag == "svg":
            current_job, current_series = attributes["data-job"], attributes["data-series"]
        if tag == "circle":
            assert current_job and current_series
            day, value = attributes["data-day"], attributes["data-value"]
            assert day and value
            points.setdefault((current_job, current_series), {})[day] = value
    for utc_day, job, _, _, failure_rate, _, p95 in EXPECTED[REPORT_QUESTION][FETCHER]:
        assert points[job, "failure_rate"][utc_day] == str(failure_rate)
        if p95 is None:  # no measured duration that day: a gap, not a zero
            assert utc_day not in points.get((job, "p95_duration_ms"), {})
        else:
            assert points[job, "p95_duration_ms"][utc_day] == str(p95)
    # The numbers are also in a table under each chart.
    text = " ".join(page.text)
    assert "66.7 %" in text and "3,000" in text and "n/a" in text


def test_the_report_says_its_window_and_engine(report: str) -> None:
    text = " ".join(parse(report).text)
    assert "2026-07-13T00:00:00.000Z" in text and "2026-07-16T00:00:00.000Z" in text
    assert "engine duckdb" in text and "2026-07-16T09:30:00.000Z" in text


def test_an_empty_window_still_renders_and_says_so(tmp_path: Path) -> None:
    result = DuckDBEngine(tmp_path).answer(REPORT_QUESTION, EMPTY)
    html = render_report(result)
    assert "No outcome in this window." in html and "<svg" not in html


def test_text_from_the_data_is_escaped() -> None:
    hostile = QueryResult(
        question=REPORT_QUESTION,
        engine="duckdb",
        window=FETCHER,
        columns=(
            "utc_day",
            "job_name",
            "outcomes",
            "failures",
            "failure_rate",
            "measured_durations",
            "p95_duration_ms",
        ),
        rows=(("2026-07-13", '<script src="x">"', 1, 1, 1.0, 0, None),),
    )
    html = render_report(hostile)
    assert "<script" not in html and "&lt;script" in html


def test_only_the_report_question_draws_a_report(tmp_path: Path) -> None:
    result = DuckDBEngine(tmp_path).answer("daily_outcomes", EMPTY)
    with pytest.raises(ValueError, match=REPORT_QUESTION):
        render_report(result)
