"""The analytics back end of one machine: registered by the host process, never shipped.

On AWS rows go to Firehose and Athena answers (`firehose`, `athena`). On one machine
(`jobhooks dev`, the tests, the benches) rows go to local files and DuckDB answers; both live in
`jobhooks_tools.local.analytics`, outside the Lambda layer, which never imports that package.
The process that runs the functions on one machine registers the two factories here before
the first row is written or the first question asked
(`jobhooks_tools.local.analytics.install_local_backend()`); the recorder and the query engine
find them when `JOBHOOKS_ANALYTICS_DIR` is set. A process that registered nothing, as every
Lambda function, gets a configuration error naming the variable, never a silent no-op.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jobhooks.analytics.results import QueryEngine
from jobhooks.analytics.sink import AnalyticsSink
from jobhooks.settings import ConfigurationError


@dataclass(frozen=True, slots=True)
class LocalBackend:
    """Factories of the sink and the engine over one data directory."""

    sink: Callable[[str], AnalyticsSink]
    engine: Callable[[str], QueryEngine]


_registered: LocalBackend | None = None


def register_local_backend(backend: LocalBackend | None) -> LocalBackend | None:
    """Make `backend` the one this process uses (None: none); returns the one it replaces."""
    global _registered
    previous, _registered = _registered, backend
    return previous


def registered_local_backend() -> LocalBackend | None:
    return _registered


def local_backend() -> LocalBackend:
    """The registered back end; raises `ConfigurationError` in a process that has none."""
    if _registered is None:
        raise ConfigurationError(
            "JOBHOOKS_ANALYTICS_DIR: the local analytics files are written and read only by "
            "jobhooks dev (the local stack registers them); a deployed function uses "
            "JOBHOOKS_ANALYTICS_STREAM and JOBHOOKS_ANALYTICS_WORKGROUP instead"
        )
    return _registered
