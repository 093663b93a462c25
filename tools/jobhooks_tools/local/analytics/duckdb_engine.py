"""The questions on one machine: DuckDB over the local sink's files.

Each call opens an in-memory DuckDB, defines `background_job_completed` over the row files
(typed from `jobhooks.analytics.columns`, `dt` from the directory names, as the Glue table's
partition key), and runs the question's DuckDB text: the same outcomes view and question files
as Athena. DuckDB's JSON and Parquet readers are built in; extension downloads are turned off,
so nothing here reaches the network. Answers are immediate: `poll` has nothing to find.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from jobhooks.analytics.columns import COLUMNS, PARTITION_KEY, TABLE_NAME
from jobhooks.analytics.exceptions import QueryFailedError, QueryNotFoundError
from jobhooks.analytics.questions import ROW_LIMIT, Engine, get_question, rows_query
from jobhooks.analytics.results import QueryResult, RowsResult, json_value, note_for
from jobhooks.analytics.window import QueryWindow

from jobhooks_tools.local.analytics.files import ROW_FILE_SUFFIX, row_files, table_dir

ENGINE_NAME: Final = "duckdb"


class DuckDBEngine:
    name = ENGINE_NAME

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.data_dir = Path(data_dir)

    def answer(
        self, question: str, window: QueryWindow, *, wait_seconds: float | None = None
    ) -> QueryResult:
        asked = get_question(question)
        columns, rows = self.execute(
            asked.sql(Engine.DUCKDB, account_scoped=window.account_scoped), window.parameters()
        )
        return QueryResult(
            question=asked.name,
            engine=self.name,
            window=window,
            columns=tuple(columns),
            rows=tuple(tuple(row) for row in rows),
            note=note_for(asked, columns, rows),
        )

    def rows(self, window: QueryWindow, *, wait_seconds: float | None = None) -> RowsResult:
        columns, rows = self.execute(
            rows_query().sql(Engine.DUCKDB, account_scoped=window.account_scoped),
            window.parameters(),
        )
        listed = [dict(zip(columns, row, strict=True)) for row in rows]
        return RowsResult(
            engine=self.name,
            window=window,
            rows=tuple(listed[:ROW_LIMIT]),
            truncated=len(listed) > ROW_LIMIT,
        )

    def poll(self, query_id: str, *, wait_seconds: float | None = None) -> QueryResult:
        raise QueryNotFoundError(query_id)

    def execute(
        self, sql: str, parameters: Sequence[Any] = ()
    ) -> tuple[list[str], list[list[Any]]]:
        """Run any SQL over the table (tests run transpiled texts through this); JSON-ready rows."""
        import duckdb

        connection = duckdb.connect(
            ":memory:",
            config={"autoinstall_known_extensions": False, "autoload_known_extensions": False},
        )
        try:
            connection.execute(f"CREATE VIEW {TABLE_NAME} AS {self._table_source()}")
            cursor = connection.execute(sql, list(parameters))
            columns = [str(description[0]) for description in cursor.description or []]
            rows = [[json_value(value) for value in row] for row in cursor.fetchall()]
        except duckdb.Error as error:
            raise QueryFailedError(f"DuckDB could not run the query: {error}") from None
        finally:
            connection.close()
        return columns, rows

    def _table_source(self) -> str:
        if not row_files(self.data_dir):
            # No row yet: an empty relation of the same columns, so every question answers.
            typed = ", ".join(
                f"CAST(NULL AS {column.duckdb_type}) AS {column.name}"
                for column in (*COLUMNS, PARTITION_KEY)
            )
            return f"SELECT {typed} WHERE false"
        pattern = str(table_dir(self.data_dir) / f"{PARTITION_KEY.name}=*" / f"*{ROW_FILE_SUFFIX}")
        types = ", ".join(f"'{column.name}': '{column.duckdb_type}'" for column in COLUMNS)
        # Our own column list and the data directory, quoted as a SQL string literal.
        return (
            f"SELECT * FROM read_json({_literal(pattern)}, format = 'newline_delimited', "  # noqa: S608
            f"columns = {{{types}}}, hive_partitioning = true, "
            f"hive_types = {{'{PARTITION_KEY.name}': '{PARTITION_KEY.duckdb_type}'}})"
        )


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
