"""The reviewed questions: `sql/*.sql`, each with a header that says what it answers and how.

Every question file starts with `--` comment lines of `key: value` (a line starting with `--`
and two or more spaces continues the previous value):

    -- question: which job_names fail, and how often, over the window
    -- grain: one row per job_name
    -- window: the outcomes view's window, [from, to) on timestamp_utc, one row per event_id
    -- unmeasured: how the rows that could not supply a measured value are excluded
    -- measured_column: (optional) the column that counts measured rows
    -- when_unmeasured: (optional) what to say when that column is 0 on every row

`question`, `grain`, `window` and `unmeasured` are required. One text serves DuckDB and Athena
(`NAME.sql`) wherever the dialects agree; where they differ the two texts sit side by side
(`NAME.duckdb.sql`, `NAME.athena.sql`) with the same header.

Questions never read the table directly: they read `outcomes`, the one deduplicated view of
`sql/outcomes.sql`, which every query text carries as its first `WITH` (an Athena view cannot
take the window's parameters, which the view needs for partition pruning, and CloudFormation
cannot create one). The view holds the only placeholders (`QueryWindow.parameters()`).
`rows.sql` lists the view's rows; it is not one of the questions.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from importlib.resources.abc import Traversable
from types import MappingProxyType
from typing import Final

from jobhooks.analytics.exceptions import QuestionFileError, UnknownQuestionError


class Engine(StrEnum):
    DUCKDB = "duckdb"
    ATHENA = "athena"


VIEW_NAME: Final = "outcomes"
VIEW_FILE: Final = "outcomes.sql"
ROWS_QUERY: Final = "rows"
# rows.sql reads one more than this, to tell a full listing from a cut one.
ROW_LIMIT: Final = 1000
VIEW_PLACEHOLDERS: Final = 3
# The first line of every composed text: names the question again when Athena hands the text
# back (GetQueryExecution), so a running query can be polled by its id alone.
MARKER: Final = "-- jobhooks analytics: "

REQUIRED_KEYS: Final = ("question", "grain", "window", "unmeasured")
OPTIONAL_KEYS: Final = ("measured_column", "when_unmeasured")
VIEW_KEYS: Final = ("view", "grain", "window", "dedup", "parameters")
_KEY_LINE: Final = re.compile(r"^-- ([a-z_]+): (.+)$")
_CONTINUATION: Final = re.compile(r"^--  +(\S.*)$")
_NAME: Final = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class Question:
    name: str
    question: str
    grain: str
    window: str
    unmeasured: str
    header: str
    """The file's comment lines, verbatim."""
    bodies: Mapping[Engine, str]
    measured_column: str | None = None
    when_unmeasured: str | None = None

    @property
    def shared(self) -> bool:
        """One text serves both engines."""
        return self.bodies[Engine.DUCKDB] == self.bodies[Engine.ATHENA]

    def sql(self, engine: Engine, *, account_scoped: bool = False) -> str:
        """The whole query for `engine`: marker, header, the outcomes view, the question.

        `account_scoped`: the view keeps one account's rows only, named by one more
        placeholder after the view's own (`QueryWindow.parameters()` of a scoped window).
        """
        view = outcomes_view()
        if account_scoped:
            # Our own constant text around the view; the account is a parameter.
            view = f"SELECT * FROM (\n{view}\n) AS every_account\nWHERE account_id = ?"  # noqa: S608
        indented = "\n".join(f"    {line}" if line else line for line in view.splitlines())
        return (
            f"{MARKER}{self.name}\n{self.header}\n"
            f"WITH {VIEW_NAME} AS (\n{indented}\n)\n{self.bodies[Engine(engine)]}\n"
        )

    def summary(self) -> dict[str, str | None]:
        return {
            "name": self.name,
            "question": self.question,
            "grain": self.grain,
            "window": self.window,
            "unmeasured": self.unmeasured,
        }


def questions() -> dict[str, Question]:
    """Every reviewed question by name, in name order (the rows listing is not one)."""
    return {name: q for name, q in _load().items() if name != ROWS_QUERY}


def get_question(name: str) -> Question:
    """A reviewed question by name; the rows listing is not one (`rows_query`)."""
    asked = questions()
    if name not in asked:
        raise UnknownQuestionError(name, sorted(asked))
    return asked[name]


def rows_query() -> Question:
    return _load()[ROWS_QUERY]


def question_named_in(sql: str) -> Question | None:
    """The question whose composed text `sql` is (by its first line), if any."""
    first, _, _ = sql.partition("\n")
    if not first.startswith(MARKER):
        return None
    return _load().get(first[len(MARKER) :].strip())


@functools.cache
def outcomes_view() -> str:
    """The body of the outcomes view (its header stays in the file, for readers)."""
    text = resources.files("jobhooks.analytics").joinpath("sql", VIEW_FILE).read_text("utf-8")
    header, body = _split(text, VIEW_FILE)
    fields = _fields(header, VIEW_FILE)
    missing = [key for key in VIEW_KEYS if key not in fields]
    if missing:
        raise QuestionFileError(f"outcomes.sql: the header lacks {', '.join(missing)}")
    if body.count("?") != VIEW_PLACEHOLDERS:
        raise QuestionFileError(f"outcomes.sql must have exactly {VIEW_PLACEHOLDERS} `?`")
    return body


def load_questions(directory: Traversable | None = None) -> Mapping[str, Question]:
    """Every query file of `directory` (default: this package's `sql/`) by name, checked."""
    folder = directory or resources.files("jobhooks.analytics").joinpath("sql")
    texts: dict[str, dict[Engine | None, str]] = {}
    for entry in folder.iterdir():
        if not entry.name.endswith(".sql") or entry.name == VIEW_FILE:
            continue
        name, _, dialect = entry.name.removesuffix(".sql").partition(".")
        if not _NAME.match(name) or dialect not in ("", *Engine):
            raise QuestionFileError(
                f"{entry.name}: expected NAME.sql, NAME.duckdb.sql or NAME.athena.sql"
            )
        texts.setdefault(name, {})[Engine(dialect) if dialect else None] = entry.read_text(
            encoding="utf-8"
        )
    return MappingProxyType(
        {name: _question(name, variants) for name, variants in sorted(texts.items())}
    )


@functools.cache
def _load() -> Mapping[str, Question]:
    return load_questions()


def _question(name: str, variants: Mapping[Engine | None, str]) -> Question:
    if set(variants) not in ({None}, {Engine.DUCKDB, Engine.ATHENA}):
        raise QuestionFileError(
            f"{name}: give either {name}.sql or both {name}.duckdb.sql and {name}.athena.sql"
        )
    split = {dialect: _split(text, name) for dialect, text in variants.items()}
    headers = {header for header, _ in split.values()}
    if len(headers) != 1:
        raise QuestionFileError(f"{name}: the DuckDB and Athena variants must share one header")
    (header,) = headers
    fields = _fields(header, name)
    missing = [key for key in REQUIRED_KEYS if key not in fields]
    if missing:
        raise QuestionFileError(f"{name}: the header lacks {', '.join(missing)}")
    bodies = {
        engine: split[None if None in split else engine][1]
        for engine in (Engine.DUCKDB, Engine.ATHENA)
    }
    for engine, body in bodies.items():
        if "?" in body:
            raise QuestionFileError(
                f"{name} ({engine}): only the outcomes view takes parameters; no `?` here"
            )
        if re.search(r"\bbackground_job_completed\b", body):
            raise QuestionFileError(f"{name} ({engine}): read `{VIEW_NAME}`, not the table")
    return Question(
        name=name,
        question=fields["question"],
        grain=fields["grain"],
        window=fields["window"],
        unmeasured=fields["unmeasured"],
        header=header,
        bodies=MappingProxyType(bodies),
        measured_column=fields.get("measured_column"),
        when_unmeasured=fields.get("when_unmeasured"),
    )


def _split(text: str, name: str) -> tuple[str, str]:
    lines = text.strip().splitlines()
    count = 0
    while count < len(lines) and lines[count].startswith("--"):
        count += 1
    header, body = "\n".join(lines[:count]), "\n".join(lines[count:]).strip()
    if not header or not body:
        raise QuestionFileError(f"{name}: a header of `-- key: value` lines, then the query")
    # Athena would not count a `?` in a comment as a placeholder, but nothing is gained by
    # finding out which engine does.
    if "?" in header:
        raise QuestionFileError(f"{name}: no `?` in the header")
    return header, body


def _fields(header: str, name: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    key = None
    for line in header.splitlines():
        continuation = _CONTINUATION.match(line)
        if continuation and key is not None:
            fields[key] += " " + continuation.group(1).strip()
            continue
        match = _KEY_LINE.match(line)
        if match is None:
            raise QuestionFileError(f"{name}: not a `-- key: value` line: {line!r}")
        key = match.group(1)
        if key not in (*REQUIRED_KEYS, *OPTIONAL_KEYS, *VIEW_KEYS) or key in fields:
            raise QuestionFileError(f"{name}: unknown or repeated header key {key!r}")
        fields[key] = match.group(2).strip()
    return fields
