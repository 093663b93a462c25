"""docs/analytics.md agrees with the code: every column with its type and privacy class, every
reviewed question, and a row in README.md's documentation table."""

from __future__ import annotations

import re
from pathlib import Path

from jobhooks.analytics.columns import COLUMNS
from jobhooks.analytics.questions import questions

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs/analytics.md").read_text(encoding="utf-8")


def table_rows(first_header: str) -> list[list[str]]:
    lines = PAGE.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_column_table_is_the_column_list() -> None:
    documented = [
        (name.strip("`"), kind, privacy) for name, kind, privacy, _ in table_rows("Column")
    ]
    assert [name for name, _, _ in documented] == [column.name for column in COLUMNS]
    for (name, kind, privacy), column in zip(documented, COLUMNS, strict=True):
        assert kind.startswith(column.type.value), name
        assert privacy == column.privacy.value, name
        assert ("(null" in kind) == column.nullable, name


def test_every_extra_column_has_its_reason_on_the_page() -> None:
    for column in COLUMNS:
        if column.is_extra:
            assert re.search(rf"^- `{column.name}`: ", PAGE, re.M), column.name


def test_every_question_is_described() -> None:
    described = {name.strip("`") for name, *_ in table_rows("Question")}
    assert described == set(questions())


def test_the_readme_lists_the_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "| [docs/analytics.md](docs/analytics.md) |" in readme
