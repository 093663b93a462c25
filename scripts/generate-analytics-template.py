#!/usr/bin/env python3
"""Write template.yaml's generated analytics blocks from the jobhooks.analytics package.

    scripts/generate-analytics-template.py            # after changing a column or a .sql file
    scripts/generate-analytics-template.py --check    # exit 1 when template.yaml is stale

Two blocks, each between its `# BEGIN generated ...` and `# END generated ...` lines: the Glue
table's columns (from `jobhooks.analytics.columns.COLUMNS`) and one AWS::Athena::NamedQuery
per reviewed question plus the rows listing (their Athena texts, `Question.sql("athena")`).
Nothing else in the template is touched.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"
# Runs from a plain checkout too, without the package installed.
sys.path.insert(0, str(ROOT / "layers" / "jobhooks"))

COLUMNS_BLOCK = "columns"
QUERIES_BLOCK = "named queries"


def columns_block() -> list[str]:
    from jobhooks.analytics.columns import COLUMNS
    from jobhooks.analytics.pseudonymize import PSEUDONYMIZED_COLUMNS

    lines = ["          Columns:"]
    for column in COLUMNS:
        comment = f"{column.type.value}; {column.privacy.value}"
        if column.name in PSEUDONYMIZED_COLUMNS:
            # The contract's privacy class, and what AnalyticsPseudonymize=true stores instead.
            comment += "; a keyed pseudonym when AnalyticsPseudonymize is true"
        if column.is_extra:
            comment += "; extra column (docs/analytics.md)"
        lines.append(
            f"            - {{ Name: {column.name}, Type: {column.glue_type}, "
            f"Comment: {json.dumps(comment)} }}"
        )
    return lines


def queries_block() -> list[str]:
    from jobhooks.analytics.questions import Engine, questions, rows_query

    lines: list[str] = []
    for question in [*questions().values(), rows_query()]:
        logical_id = "AnalyticsQuery" + "".join(part.title() for part in question.name.split("_"))
        lines += [
            f"  {logical_id}:",
            "    Type: AWS::Athena::NamedQuery",
            "    Properties:",
            f"      Name: {question.name}",
            f"      Description: {json.dumps(question.question[:1024])}",
            "      Database: !Ref AnalyticsDatabase",
            "      WorkGroup: !Ref AnalyticsWorkGroup",
            "      QueryString: |",
        ]
        lines += [
            f"        {line}" if line else "" for line in question.sql(Engine.ATHENA).splitlines()
        ]
        lines.append("")
    return lines


def render(template: str) -> str:
    for block, fresh in ((COLUMNS_BLOCK, columns_block()), (QUERIES_BLOCK, queries_block())):
        lines = template.split("\n")
        begin = _find(lines, f"# BEGIN generated {block} ")
        end = _find(lines, f"# END generated {block}")
        if end < begin:
            raise SystemExit(f"template.yaml: END before BEGIN of the generated {block}")
        template = "\n".join([*lines[: begin + 1], *fresh, *lines[end:]])
    return template


def _find(lines: list[str], marker: str) -> int:
    for index, line in enumerate(lines):
        if line.strip().startswith(marker.strip()):
            return index
    raise SystemExit(f"template.yaml has no line starting with {marker.strip()!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that it is current")
    args = parser.parse_args(argv)
    current = TEMPLATE.read_text(encoding="utf-8")
    fresh = render(current)
    if args.check:
        if fresh == current:
            return 0
        sys.stdout.writelines(
            difflib.unified_diff(
                current.splitlines(keepends=True),
                fresh.splitlines(keepends=True),
                "template.yaml",
                "generated",
            )
        )
        print("template.yaml is stale: run scripts/generate-analytics-template.py", file=sys.stderr)
        return 1
    TEMPLATE.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
