"""How API commands print: JSON, or a table that fits the terminal (80 columns when unknown)."""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

GAP: Final = "  "
ELLIPSIS: Final = "…"


def print_json(document: Any) -> None:
    print(json.dumps(document, indent=2, ensure_ascii=False))


def add_output_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output",
        choices=["table", "json"],
        default="table",
        help="table (default, fits the terminal) or json (the API's answer, for scripts)",
    )


@dataclass(frozen=True)
class Column:
    """`flexible` columns give up width (cut with …) so the row fits; ids never do."""

    header: str
    value: Callable[[Mapping[str, Any]], Any]
    flexible: bool = False
    min_width: int = 8


def render_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], width: int | None = None
) -> str:
    width = width or shutil.get_terminal_size((80, 24)).columns
    cells = [[_text(column.value(row)) for column in columns] for row in rows]
    widths = [
        max([len(column.header), *(len(line[n]) for line in cells)])
        for n, column in enumerate(columns)
    ]
    excess = sum(widths) + len(GAP) * (len(columns) - 1) - width
    flexible = [n for n, column in enumerate(columns) if column.flexible]
    # Shrink the widest flexible column first, one character at a time.
    while excess > 0 and flexible:
        n = max(flexible, key=lambda index: widths[index] - columns[index].min_width)
        if widths[n] <= max(columns[n].min_width, len(columns[n].header)):
            break
        widths[n] -= 1
        excess -= 1
    lines = [GAP.join(c.header.ljust(w) for c, w in zip(columns, widths, strict=True))]
    for line in cells:
        lines.append(GAP.join(_fit(text, w) for text, w in zip(line, widths, strict=True)))
    return "\n".join(line.rstrip() for line in lines)


def short_time(value: Any) -> str:
    """`2026-03-01T12:00:05.123Z` -> `03-01 12:00` (UTC): enough to tell rows apart."""
    text = str(value or "")
    return f"{text[5:10]} {text[11:16]}" if len(text) >= 16 else text


def _text(value: Any) -> str:
    if value is None:
        return "-"
    return " ".join(str(value).split())


def _fit(text: str, width: int) -> str:
    if len(text) <= width:
        return text.ljust(width)
    return text[: max(0, width - 1)] + ELLIPSIS
