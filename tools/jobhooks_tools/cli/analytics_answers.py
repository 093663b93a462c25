"""The management API's analytics answers, polled to their end while Athena runs a query.

Shared by `jobhooks analytics query|rows|report` and `jobhooks analytics check`. A route that
has not finished within the API's wait answers 202 with a query id; these functions poll it,
with a progress line, until the answer is there or `--max-wait` has passed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import quote

from jobhooks_tools.cli.api_client import ApiClient
from jobhooks_tools.cli.exceptions import CliError
from jobhooks_tools.cli.progress import Progress

DEFAULT_MAX_WAIT_SECONDS: Final = 300.0
# Between two polls of a running query, at least this long: the API's own wait paces them
# on AWS; this keeps a short configured wait from turning into a busy loop.
MIN_POLL_INTERVAL_SECONDS: Final = 1.0


def answer_question(
    client: ApiClient,
    name: str,
    *,
    window_from: str | None = None,
    window_to: str | None = None,
    max_wait: float = DEFAULT_MAX_WAIT_SECONDS,
) -> dict[str, Any]:
    """The API's answer to one question (`{"question", "engine", "from", "to", "columns",
    "rows", "note"}`), polled to its end while Athena runs it."""
    first = client.get(
        f"/v1/analytics/questions/{quote(name, safe='')}",
        **{"from": window_from, "to": window_to},
    )
    return finished(client, first, max_wait=max_wait)


def list_rows(
    client: ApiClient,
    *,
    window_from: str | None = None,
    window_to: str | None = None,
    max_wait: float = DEFAULT_MAX_WAIT_SECONDS,
) -> dict[str, Any]:
    """The API's rows listing (`{"engine", "from", "to", "rows", "truncated"}`), polled."""
    first = client.get("/v1/analytics/rows", **{"from": window_from, "to": window_to})
    return finished(client, first, max_wait=max_wait)


def finished(
    client: ApiClient,
    answer: dict[str, Any],
    *,
    max_wait: float,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """`answer`, or, while it says the query is running, what polling its id brings back."""
    if answer.get("status") != "running":
        return answer
    query_id = str(answer["query_id"])
    progress = Progress(f"Athena is running {answer.get('question', 'the query')}")
    try:
        while answer.get("status") == "running":
            if progress.elapsed >= max_wait:
                raise CliError(
                    f"the query is still running after {max_wait:g} s (Athena query "
                    f"{query_id}, {answer.get('state', 'RUNNING')}); raise --max-wait, or "
                    "narrow the window"
                )
            progress.update(
                f"{answer.get('state', 'RUNNING')}, "
                f"{_megabytes(answer.get('scanned_bytes', 0))} scanned"
            )
            asked_at = time.monotonic()
            answer = client.get(f"/v1/analytics/queries/{quote(query_id, safe='')}")
            if answer.get("status") == "running":
                sleep(max(0.0, MIN_POLL_INTERVAL_SECONDS - (time.monotonic() - asked_at)))
    finally:
        progress.done()
    return answer


def query_result(answer: Mapping[str, Any]) -> Any:
    """The API's answer as the `QueryResult` the report is drawn from."""
    from datetime import UTC, datetime

    from jobhooks.analytics.results import QueryResult
    from jobhooks.analytics.window import QueryWindow

    return QueryResult(
        question=str(answer["question"]),
        engine=str(answer["engine"]),
        window=QueryWindow.parse(answer["from"], answer["to"], now=datetime.now(UTC)),
        columns=tuple(answer["columns"]),
        rows=tuple(tuple(row) for row in answer["rows"]),
        note=answer.get("note"),
    )


def _megabytes(count: Any) -> str:
    return f"{int(count or 0) / 1_000_000:.1f} MB"
