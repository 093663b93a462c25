"""The retry schedule: when a failed delivery is tried again, and when the bridge gives up.

The one module that owns the schedule, its jitter and the bounds on a receiver's `Retry-After`
(docs/delivery.md). The deliver function applies a delay by changing the SQS message's
visibility, so every delay here is whole seconds and never beyond what SQS accepts.

The schedule is written as the seconds to wait *before* attempt n, one entry per attempt
(`JOBHOOKS_RETRY_SCHEDULE`, default Svix's: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
10 h; 8 attempts over about 27.6 h). The first entry must be 0: attempt 1 is made as soon as the
task arrives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from jobhooks.frozen_record import FrozenRecord

DEFAULT_RETRY_SCHEDULE: Final = "0,5,300,1800,7200,18000,36000,36000"
JITTER: Final = 0.2
MAX_ATTEMPTS: Final = 50

# SQS caps a message's visibility at 12 h counted from the receive that handed it to us, and
# ChangeMessageVisibility does not reset that clock. The call comes at most one function timeout
# (60 s) after the invocation starts, and a throttled event source may start the invocation up to
# the queue's visibility timeout (360 s) after the receive; 10 minutes of headroom covers both.
SQS_MAX_VISIBILITY_SECONDS: Final = 43_200
VISIBILITY_HEADROOM_SECONDS: Final = 600
MAX_RETRY_DELAY_SECONDS: Final = SQS_MAX_VISIBILITY_SECONDS - VISIBILITY_HEADROOM_SECONDS

# A source of uniform floats in [0, 1): `random.random`, or a fixed value in tests.
UniformRandom = Callable[[], float]


class InvalidRetryScheduleError(ValueError):
    """`JOBHOOKS_RETRY_SCHEDULE` is not a usable schedule (the message says what to write)."""

    code: Final = "invalid_retry_schedule"


class RetrySchedule(FrozenRecord):
    """Seconds to wait before each attempt; `delays[0]` (before attempt 1) is always 0."""

    __slots__ = ("delays", "jitter")
    delays: tuple[int, ...]
    jitter: float

    def __init__(self, delays: tuple[int, ...], jitter: float = JITTER) -> None:
        object.__setattr__(self, "delays", delays)
        object.__setattr__(self, "jitter", jitter)
        if not 1 <= len(self.delays) <= MAX_ATTEMPTS:
            raise InvalidRetryScheduleError(
                f"a retry schedule has 1 to {MAX_ATTEMPTS} entries, one per attempt"
            )
        if self.delays[0] != 0:
            raise InvalidRetryScheduleError(
                "the first entry of the retry schedule must be 0: attempt 1 is made as soon as "
                "the delivery task arrives (e.g. 0,5,300,1800,7200,18000,36000,36000)"
            )
        for delay in self.delays:
            if not 0 <= delay <= SQS_MAX_VISIBILITY_SECONDS:
                raise InvalidRetryScheduleError(
                    f"retry delay {delay} s is outside 0..{SQS_MAX_VISIBILITY_SECONDS} s: SQS "
                    "cannot hide a message for longer than 12 hours"
                )
        if not 0 <= self.jitter < 1:
            raise InvalidRetryScheduleError("the jitter must be a fraction in [0, 1)")

    @classmethod
    def parse(cls, text: str) -> RetrySchedule:
        """`"0,5,300"` -> a schedule of three attempts; raises `InvalidRetryScheduleError`."""
        entries = [entry.strip() for entry in text.split(",")]
        if not all(entry.isascii() and entry.isdigit() for entry in entries):
            raise InvalidRetryScheduleError(
                f"the retry schedule {text!r} must be comma-separated whole seconds, one per "
                "attempt, e.g. 0,5,300,1800,7200,18000,36000,36000"
            )
        return cls(tuple(int(entry) for entry in entries))

    @property
    def max_attempts(self) -> int:
        return len(self.delays)

    @property
    def total_seconds(self) -> int:
        """From attempt 1 to the last attempt, before jitter."""
        return sum(self.delays)

    def is_last(self, attempt: int) -> bool:
        """True when no attempt follows `attempt` (1-based): the delivery is parked if it fails.

        Attempts past the schedule (a crashed invocation consumed a receive) are last, too.
        """
        return attempt >= self.max_attempts

    def delay_after(
        self, attempt: int, *, retry_after: int | None = None, random: UniformRandom
    ) -> int:
        """Whole seconds to hide the message after failed attempt `attempt` (1-based).

        The schedule's delay before the next attempt, with ±`jitter`; a receiver's `Retry-After`
        may lengthen it but never shorten it; nothing exceeds `MAX_RETRY_DELAY_SECONDS`.
        """
        if attempt < 1:
            raise ValueError("attempts are numbered from 1")
        base = self.delays[min(attempt, self.max_attempts - 1)]
        delay = round(base * (1 + self.jitter * (2 * random() - 1)))
        if retry_after is not None and retry_after > delay:
            delay = retry_after
        return max(0, min(delay, MAX_RETRY_DELAY_SECONDS))


DEFAULT_SCHEDULE: Final = RetrySchedule.parse(DEFAULT_RETRY_SCHEDULE)
