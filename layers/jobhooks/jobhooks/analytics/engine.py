"""The query engine a process's settings ask for: Athena on AWS, DuckDB on `jobhooks dev`
(registered by the local stack: `jobhooks.analytics.local_backend`)."""

from __future__ import annotations

import functools
from typing import Any

from jobhooks.analytics.exceptions import AnalyticsNotConfiguredError
from jobhooks.analytics.query_settings import AnalyticsQuerySettings
from jobhooks.analytics.results import QueryEngine


def build_query_engine(settings: AnalyticsQuerySettings, *, session: Any = None) -> QueryEngine:
    if settings.analytics_workgroup:
        from jobhooks.analytics.athena import build_athena_engine

        return build_athena_engine(
            workgroup=settings.analytics_workgroup,
            database=settings.analytics_database,
            session=session,
            default_wait_seconds=settings.analytics_query_wait_seconds,
        )
    if settings.analytics_dir:
        # DuckDB is never part of what Lambda functions load: the local stack registers it.
        from jobhooks.analytics.local_backend import local_backend

        return local_backend().engine(settings.analytics_dir)
    raise AnalyticsNotConfiguredError()


@functools.lru_cache(maxsize=4)
def query_engine_for(settings: AnalyticsQuerySettings) -> QueryEngine:
    """`build_query_engine`, once per configuration and process: an engine holds its clients."""
    return build_query_engine(settings)
