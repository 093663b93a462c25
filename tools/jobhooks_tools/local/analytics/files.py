"""The local sink: the rows Firehose would receive, as newline-delimited JSON files.

The layout mirrors the S3 bucket, so DuckDB reads it as Athena reads the table:

    <data dir>/background_job_completed/dt=2026-07-13/20260713T180412123456-<hex>.jsonl

`dt` is the UTC date the rows were written (as Firehose's arrival date on AWS). Each
`put_rows` call publishes one file atomically: it is written under a hidden temporary name,
flushed to disk, then renamed, so a reader never sees half a file and a crash leaves at most a
temporary file that no reader globs. Several processes may write at once.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Final

from jobhooks.analytics.columns import TABLE_PREFIX
from jobhooks.analytics.exceptions import AnalyticsWriteError
from jobhooks.analytics.row import AnalyticsRow
from jobhooks.analytics.sink import AnalyticsSink
from jobhooks.storage.times import utc_now

ROW_FILE_SUFFIX: Final = ".jsonl"


def table_dir(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / TABLE_PREFIX


def row_files(data_dir: str | os.PathLike[str]) -> list[Path]:
    """Every published row file, oldest partition first."""
    return sorted(table_dir(data_dir).glob(f"dt=*/*{ROW_FILE_SUFFIX}"))


class LocalFileSink(AnalyticsSink):
    def __init__(
        self, data_dir: str | os.PathLike[str], *, clock: Callable[[], datetime] = utc_now
    ) -> None:
        self.data_dir = Path(data_dir)
        self._clock = clock

    def put_rows(self, rows: Sequence[AnalyticsRow]) -> None:
        if not rows:
            return
        now = self._clock()
        partition = table_dir(self.data_dir) / f"dt={now.date().isoformat()}"
        name = f"{now:%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex}{ROW_FILE_SUFFIX}"
        data = "".join(row.to_json() + "\n" for row in rows).encode("utf-8")
        temporary = partition / f".{name}.tmp"
        try:
            partition.mkdir(parents=True, exist_ok=True)
            with open(temporary, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, partition / name)
        except OSError as error:
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
            cause = f"{type(error).__name__}: {error.strerror}"
            raise AnalyticsWriteError(len(rows), len(rows), cause) from None
