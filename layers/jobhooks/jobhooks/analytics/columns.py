"""The columns of `background_job_completed`, in order: the one source of truth.

The first eleven are the contract's required fields with the contract's types (timestamp,
string, number) and privacy classes; every column after them is an extra with a written
reason. The Glue table in template.yaml, the DuckDB schema of the local engine, the outcomes
view in `sql/outcomes.sql`, docs/analytics.md and the row model are all checked against this
list by the tests; change a column here and they fail until they agree again.

Once a query depends on a column its name and type are frozen (the contract's rule): add
columns at the end, never rename or re-type one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

from jobhooks.frozen_record import FrozenRecord

TABLE_NAME: Final = "background_job_completed"
# The S3 prefix the table's objects live under (Firehose writes `<prefix>dt=YYYY-MM-DD/...`).
TABLE_PREFIX: Final = f"{TABLE_NAME}/"


class ContractType(StrEnum):
    """The types of the background_job_completed contract, plus the one list type of an extra."""

    TIMESTAMP = "timestamp"
    STRING = "string"
    NUMBER = "number"
    STRING_LIST = "list of strings"


class Privacy(StrEnum):
    NON_SENSITIVE = "non-sensitive"
    PSEUDONYMOUS = "pseudonymous"


# How each contract type is stored: Glue/Athena (Hive DDL), DuckDB, and how Athena names the
# type of a result column (GetQueryResults' ColumnInfo.Type).
_GLUE_TYPES: Final = {
    ContractType.TIMESTAMP: "timestamp",
    ContractType.STRING: "string",
    ContractType.NUMBER: "bigint",
    ContractType.STRING_LIST: "array<string>",
}
_DUCKDB_TYPES: Final = {
    ContractType.TIMESTAMP: "TIMESTAMP",
    ContractType.STRING: "VARCHAR",
    ContractType.NUMBER: "BIGINT",
    ContractType.STRING_LIST: "VARCHAR[]",
}


class Column(FrozenRecord):
    """One column of the analytics contract."""

    __slots__ = ("name", "nullable", "privacy", "reason", "source", "type")
    name: str
    type: ContractType
    privacy: Privacy
    source: str
    """Where the value comes from (the outcome field, or how it is derived from the outcome)."""
    reason: str
    """Extras only: why the column exists (the contract: no column without a written need)."""
    nullable: bool

    def __init__(
        self,
        name: str,
        type: ContractType,
        privacy: Privacy,
        source: str,
        reason: str = "",
        nullable: bool = False,
    ) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "privacy", privacy)
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "nullable", nullable)

    @property
    def glue_type(self) -> str:
        return _GLUE_TYPES[self.type]

    @property
    def duckdb_type(self) -> str:
        return _DUCKDB_TYPES[self.type]

    @property
    def is_extra(self) -> bool:
        return bool(self.reason)


CONTRACT_COLUMNS: Final = (
    Column(
        "timestamp_utc",
        ContractType.TIMESTAMP,
        Privacy.NON_SENSITIVE,
        "the outcome's `timestamp_utc`: UTC at the outcome boundary, millisecond precision",
    ),
    Column(
        "event_id",
        ContractType.STRING,
        Privacy.NON_SENSITIVE,
        "the outcome's `event_id` (`ce-id`): the deduplication key of the outcomes view; a "
        "keyed pseudonym when pseudonymization is on, because Fetcher's ce-id embeds the job id",
    ),
    Column(
        "release",
        ContractType.STRING,
        Privacy.NON_SENSITIVE,
        "the outcome's `release` (the ProducerRelease parameter, `unknown` when unset)",
    ),
    Column(
        "account_id",
        ContractType.STRING,
        Privacy.PSEUDONYMOUS,
        "the outcome's `account_id` (the signed tenant), or its keyed pseudonym when "
        "pseudonymization is on",
    ),
    Column(
        "job_id",
        ContractType.STRING,
        Privacy.PSEUDONYMOUS,
        "the outcome's `job_id`, or its keyed pseudonym when pseudonymization is on",
    ),
    Column(
        "job_name",
        ContractType.STRING,
        Privacy.NON_SENSITIVE,
        "the outcome's `job_name` (`metadata.source`, `unknown` when missing)",
    ),
    Column(
        "queue_name",
        ContractType.STRING,
        Privacy.NON_SENSITIVE,
        "the outcome's `queue_name` (`ce-source`, or the exchange for legacy producers)",
    ),
    Column(
        "attempt_count",
        ContractType.NUMBER,
        Privacy.NON_SENSITIVE,
        "the outcome's `attempt_count` (1: Fetcher runs a job once)",
    ),
    Column(
        "queue_wait_ms",
        ContractType.NUMBER,
        Privacy.NON_SENSITIVE,
        "the outcome's `queue_wait_ms` (a filled-in 0 today, listed in `unmeasured`)",
    ),
    Column(
        "duration_ms",
        ContractType.NUMBER,
        Privacy.NON_SENSITIVE,
        "the outcome's `duration_ms` (`executionTimeMs`; failures: a filled-in 0, unmeasured)",
    ),
    Column(
        "status",
        ContractType.STRING,
        Privacy.NON_SENSITIVE,
        "the outcome's `status`: `success` or `failure`",
    ),
)

EXTRA_COLUMNS: Final = (
    Column(
        "unmeasured",
        ContractType.STRING_LIST,
        Privacy.NON_SENSITIVE,
        "the outcome's `unmeasured`: the required fields the event could not supply",
        reason=(
            "a filled-in 0 or `unknown` must never be averaged as a measurement: every question "
            "that aggregates a number excludes the rows that list it here"
        ),
    ),
    Column(
        "error_category",
        ContractType.STRING,
        Privacy.NON_SENSITIVE,
        "failures: the outcome's `fetcher.error.category`, one of the controlled categories; "
        "null for successes",
        reason=(
            "which jobs fail *how* is one of the reviewed questions; the controlled category "
            "answers it without the error text, which the table never holds"
        ),
        nullable=True,
    ),
)

COLUMNS: Final = CONTRACT_COLUMNS + EXTRA_COLUMNS
COLUMN_NAMES: Final = tuple(column.name for column in COLUMNS)

# The partition key: not a column of the row, but of every stored object's path.
PARTITION_KEY: Final = Column(
    "dt",
    ContractType.STRING,
    Privacy.NON_SENSITIVE,
    "the UTC date (yyyy-MM-dd) the row was written: Firehose's arrival time on AWS, the local "
    "sink's clock on `jobhooks dev`",
    reason=(
        "partition pruning: a query reads only the days its window can hold (a row is written "
        "after its outcome, so never before the day of its timestamp_utc)"
    ),
)


def column(name: str) -> Column:
    for candidate in (*COLUMNS, PARTITION_KEY):
        if candidate.name == name:
            return candidate
    raise KeyError(f"{name} is not a column of {TABLE_NAME}")


_RECORD_TIMESTAMP: Final = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def record_problems(record: Mapping[str, Any]) -> list[str]:
    """What keeps a row, as JSON (a sink's record or an engine's listing), from the contract's
    names and types: empty when every column is there, in order, with its type. The contract's
    checklist ("verify all 11 fields arrive with the documented types") runs this."""
    problems = []
    if list(record) != list(COLUMN_NAMES):
        problems.append(f"columns are {list(record)}, expected {list(COLUMN_NAMES)}")
    for column in COLUMNS:
        if column.name not in record:
            continue
        value = record[column.name]
        if value is None:
            if not column.nullable:
                problems.append(f"{column.name} is null")
        elif column.type is ContractType.TIMESTAMP:
            if not (isinstance(value, str) and _RECORD_TIMESTAMP.match(value)):
                problems.append(f"{column.name} is not a UTC timestamp: {value!r:.60}")
        elif column.type is ContractType.STRING:
            if not (isinstance(value, str) and value):
                problems.append(f"{column.name} is not a non-empty string")
        elif column.type is ContractType.NUMBER:
            if not isinstance(value, int) or isinstance(value, bool):
                problems.append(f"{column.name} is not a whole number")
        elif not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            problems.append(f"{column.name} is not a list of strings")
    return problems
