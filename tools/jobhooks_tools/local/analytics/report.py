"""`jobhooks analytics report`: one self-contained HTML file from `job_health_over_time`.

Failure rate and p95 duration of every job_name, day by day, as inline SVG charts with a table
of the numbers under each. Everything is inline (styles, charts); the file has no script and
references nothing outside itself, so it opens anywhere without a network. Every text from the
data is escaped.

    result = engine.answer(REPORT_QUESTION, window)
    Path("report.html").write_text(render_report(result), encoding="utf-8")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape
from typing import Any, Final

from jobhooks.analytics.results import QueryResult
from jobhooks.inbound.outcome import format_timestamp

REPORT_QUESTION: Final = "job_health_over_time"
_WIDTH: Final = 640
_HEIGHT: Final = 180
_MARGIN_LEFT: Final = 64
_MARGIN_RIGHT: Final = 16
_MARGIN_TOP: Final = 12
_MARGIN_BOTTOM: Final = 36

_STYLE: Final = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; color: #1b1f24;
       padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: .25rem; }
h2 { font-size: 1.15rem; margin-top: 2.5rem; border-bottom: 1px solid #d0d7de; }
h3 { font-size: .95rem; margin: 1rem 0 .25rem; color: #57606a; }
.meta, .note { color: #57606a; }
.note { border-left: 3px solid #bf8700; padding-left: .75rem; }
svg { display: block; max-width: 100%; height: auto; }
svg .axis { stroke: #8c959f; stroke-width: 1; }
svg .grid { stroke: #eaeef2; stroke-width: 1; }
svg text { font-size: 11px; fill: #57606a; }
svg polyline { fill: none; stroke-width: 2; }
svg polyline.failure_rate { stroke: #cf222e; }
svg circle.failure_rate { fill: #cf222e; }
svg polyline.p95_duration_ms { stroke: #0969da; }
svg circle.p95_duration_ms { fill: #0969da; }
table { border-collapse: collapse; margin-top: .5rem; }
th, td { padding: .2rem .75rem; text-align: right; border-bottom: 1px solid #eaeef2; }
th:first-child, td:first-child { text-align: left; }
"""


@dataclass(frozen=True, slots=True)
class _Day:
    day: str
    outcomes: int
    failures: int
    failure_rate: float | None
    p95_duration_ms: int | None


def render_report(result: QueryResult, *, generated_at: datetime | None = None) -> str:
    """The HTML page for a `job_health_over_time` result (any engine)."""
    if result.question != REPORT_QUESTION:
        raise ValueError(f"the report is drawn from {REPORT_QUESTION}, not {result.question}")
    jobs = _by_job(result.records())
    days = sorted({entry.day for entries in jobs.values() for entry in entries})
    window = result.window.to_dict()
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>jobhooks analytics: {escape(window['from'])} to {escape(window['to'])}</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>Job health: failure rate and p95 duration per job_name</h1>",
        f'<p class="meta">Window [{escape(window["from"])}, {escape(window["to"])}) on '
        f"timestamp_utc, one outcome per event_id; engine {escape(result.engine)}"
        + (f"; generated {escape(format_timestamp(generated_at))}" if generated_at else "")
        + ". Days are UTC. p95 is nearest-rank over measured durations only (failures carry "
        "none).</p>",
    ]
    if result.note:
        parts.append(f'<p class="note">{escape(result.note)}</p>')
    for job_name, entries in jobs.items():
        parts.append(f'<section data-job="{escape(job_name)}"><h2>{escape(job_name)}</h2>')
        parts.append("<h3>Failure rate</h3>")
        parts.append(
            _chart(job_name, "failure_rate", days, {e.day: e.failure_rate for e in entries}, 1.0)
        )
        parts.append("<h3>p95 duration (ms)</h3>")
        durations = {e.day: e.p95_duration_ms for e in entries}
        top = max((value for value in durations.values() if value is not None), default=0)
        parts.append(_chart(job_name, "p95_duration_ms", days, durations, float(top) or 1.0))
        parts.append(_table(entries))
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _by_job(records: Sequence[dict[str, Any]]) -> dict[str, list[_Day]]:
    jobs: dict[str, list[_Day]] = {}
    for record in records:
        jobs.setdefault(str(record["job_name"]), []).append(
            _Day(
                day=str(record["utc_day"]),
                outcomes=int(record["outcomes"]),
                failures=int(record["failures"]),
                failure_rate=record["failure_rate"],
                p95_duration_ms=record["p95_duration_ms"],
            )
        )
    return dict(sorted(jobs.items()))


def _chart(
    job_name: str,
    series: str,
    days: Sequence[str],
    values: Mapping[str, float | int | None],
    top: float,
) -> str:
    plot_width = _WIDTH - _MARGIN_LEFT - _MARGIN_RIGHT
    plot_height = _HEIGHT - _MARGIN_TOP - _MARGIN_BOTTOM
    step = plot_width / max(len(days) - 1, 1)

    def x(index: int) -> float:
        return _MARGIN_LEFT + (index * step if len(days) > 1 else plot_width / 2)

    def y(value: float) -> float:
        return _MARGIN_TOP + plot_height * (1 - min(value / top, 1.0))

    out = [
        f'<svg viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" data-job="{escape(job_name)}" '
        f'data-series="{series}" aria-label="{escape(series)} of {escape(job_name)} per day">'
    ]
    for fraction in (0.0, 0.5, 1.0):
        level = _MARGIN_TOP + plot_height * (1 - fraction)
        label = _format(series, top * fraction)
        out.append(
            f'<line class="grid" x1="{_MARGIN_LEFT}" y1="{level:.1f}" '
            f'x2="{_WIDTH - _MARGIN_RIGHT}" y2="{level:.1f}"/>'
            f'<text x="{_MARGIN_LEFT - 6}" y="{level + 4:.1f}" text-anchor="end">{label}</text>'
        )
    bottom = _MARGIN_TOP + plot_height
    out.append(
        f'<line class="axis" x1="{_MARGIN_LEFT}" y1="{bottom}" '
        f'x2="{_WIDTH - _MARGIN_RIGHT}" y2="{bottom}"/>'
    )
    # Label at most about eight days, evenly, so long windows stay readable.
    every = max(1, -(-len(days) // 8))
    for index, day in enumerate(days):
        if index % every == 0 or index == len(days) - 1:
            out.append(
                f'<text x="{x(index):.1f}" y="{_HEIGHT - 12}" text-anchor="middle">'
                f"{escape(day[5:])}</text>"
            )
    # One polyline per run of consecutive days with a value: a day without one is a gap.
    run: list[str] = []
    for index, day in enumerate(days):
        value = values.get(day)
        if value is None:
            if len(run) > 1:
                out.append(f'<polyline class="{series}" points="{" ".join(run)}"/>')
            run = []
            continue
        run.append(f"{x(index):.1f},{y(float(value)):.1f}")
    if len(run) > 1:
        out.append(f'<polyline class="{series}" points="{" ".join(run)}"/>')
    for index, day in enumerate(days):
        value = values.get(day)
        if value is None:
            continue
        out.append(
            f'<circle class="{series}" cx="{x(index):.1f}" cy="{y(float(value)):.1f}" r="3" '
            f'data-day="{escape(day)}" data-value="{value}">'
            f"<title>{escape(day)}: {_format(series, value)}</title></circle>"
        )
    out.append("</svg>")
    return "".join(out)


def _table(entries: Sequence[_Day]) -> str:
    rows = "".join(
        f"<tr><td>{escape(e.day)}</td><td>{e.outcomes}</td><td>{e.failures}</td>"
        f"<td>{_format('failure_rate', e.failure_rate)}</td>"
        f"<td>{_format('p95_duration_ms', e.p95_duration_ms)}</td></tr>"
        for e in entries
    )
    return (
        "<table><thead><tr><th>day (UTC)</th><th>outcomes</th><th>failures</th>"
        "<th>failure rate</th><th>p95 duration (ms)</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def _format(series: str, value: float | int | None) -> str:
    if value is None:
        return "n/a"
    if series == "failure_rate":
        return f"{float(value) * 100:.1f} %"
    return f"{float(value):,.0f}"
