"""The progress line the CLI writes on stderr while it waits: rewritten in place on a terminal,
rate-limited lines anywhere else."""

from __future__ import annotations

import io

from jobhooks_tools.cli.progress import LOG_INTERVAL_SECONDS, Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_terminal_gets_one_line_rewritten_then_cleared() -> None:
    stream, clock = Terminal(), Clock()
    progress = Progress("Athena is running slowest_jobs", stream=stream, monotonic=clock)
    progress.update("QUEUED, 0.0 MB scanned")
    clock.now += 3
    progress.update("RUNNING")
    progress.done()

    text = stream.getvalue()
    assert "\n" not in text
    assert "\r/ Athena is running slowest_jobs: QUEUED, 0.0 MB scanned, 0 s" in text
    assert "\r- Athena is running slowest_jobs: RUNNING, 3 s" in text
    assert text.endswith("\r")


def test_a_log_gets_a_line_at_the_start_and_then_at_most_every_interval() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress("waiting for the fixture's rows", stream=stream, monotonic=clock)
    for _ in range(10):
        progress.update("0 of 2")
        clock.now += LOG_INTERVAL_SECONDS / 4
    progress.done()

    assert stream.getvalue().splitlines() == [
        "waiting for the fixture's rows: 0 of 2, 0 s",
        "waiting for the fixture's rows: 0 of 2, 15 s",
        "waiting for the fixture's rows: 0 of 2, 30 s",
    ]
