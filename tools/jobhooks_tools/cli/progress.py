"""A progress line on stderr while the CLI waits (an Athena query, rows on their way).

On a terminal the line is rewritten in place; anywhere else (a pipe, a CI log) a line is
written when the wait starts and then at most every `LOG_INTERVAL_SECONDS`, so a log is not
flooded. stdout stays the command's output alone.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Final

LOG_INTERVAL_SECONDS: Final = 15.0
_SPINNER: Final = "|/-\\"


class Progress:
    def __init__(
        self,
        what: str,
        *,
        stream: IO[str] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what = what
        self._stream = stream if stream is not None else sys.stderr
        self._monotonic = monotonic
        self._started = monotonic()
        self._interactive = bool(getattr(self._stream, "isatty", lambda: False)())
        self._last_logged: float | None = None
        self._ticks = 0
        self._width = 0

    @property
    def elapsed(self) -> float:
        return self._monotonic() - self._started

    def update(self, detail: str = "") -> None:
        line = f"{self.what}: {detail + ', ' if detail else ''}{self.elapsed:.0f} s"
        if self._interactive:
            self._ticks += 1
            text = f"{_SPINNER[self._ticks % len(_SPINNER)]} {line}"
            self._stream.write("\r" + text.ljust(self._width))
            self._width = len(text)
            self._stream.flush()
            return
        now = self._monotonic()
        if self._last_logged is None or now - self._last_logged >= LOG_INTERVAL_SECONDS:
            self._last_logged = now
            print(line, file=self._stream, flush=True)

    def done(self) -> None:
        """End the line (on a terminal), so what follows starts on its own line."""
        if self._interactive and self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0
