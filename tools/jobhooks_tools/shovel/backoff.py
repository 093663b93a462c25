"""Exponential backoff with jitter, shared by AMQP reconnects and SQS retries."""

from __future__ import annotations

import random


class Backoff:
    def __init__(self, initial: float = 0.2, maximum: float = 10.0, factor: float = 2.0) -> None:
        self.initial = min(initial, maximum)
        self.maximum = maximum
        self.factor = factor
        self.attempts = 0

    def next_delay(self) -> float:
        """The next wait: doubles up to `maximum`, jittered to [50 %, 100 %] so that several
        shovel instances do not hammer a recovering broker or endpoint in step."""
        ceiling = min(self.maximum, self.initial * self.factor ** min(self.attempts, 64))
        self.attempts += 1
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    def reset(self) -> None:
        self.attempts = 0
