"""The analytics table on one machine: rows in local files, DuckDB answering the questions.

`files.LocalFileSink` writes the same rows the Firehose sink sends (newline-delimited JSON,
partitioned by date like the S3 objects), `duckdb_engine.DuckDBEngine` reads them through the
same outcomes view and runs the same question files, and `report` renders a question's answer
as one self-contained HTML file. `install_local_backend()` registers the sink and the engine
with the core (`jobhooks.analytics.local_backend`), which never imports this package.
"""

from __future__ import annotations

from jobhooks.analytics.local_backend import (
    LocalBackend,
    register_local_backend,
    registered_local_backend,
)


def local_files_backend() -> LocalBackend:
    """Rows to newline-delimited JSON files, questions answered by DuckDB over them."""
    from jobhooks_tools.local.analytics.duckdb_engine import DuckDBEngine
    from jobhooks_tools.local.analytics.files import LocalFileSink

    return LocalBackend(sink=LocalFileSink, engine=DuckDBEngine)


def install_local_backend(backend: LocalBackend | None = None) -> LocalBackend | None:
    """Let this process's functions write and read `JOBHOOKS_ANALYTICS_DIR` with `backend`
    (default: the files and DuckDB); returns the back end it replaces. The local stack and the
    tests call it."""
    return register_local_backend(backend or local_files_backend())


def ensure_local_backend() -> None:
    """Install the default back end unless one is registered (the local API server: a stack
    that started it may have registered its own)."""
    if registered_local_backend() is None:
        install_local_backend()
