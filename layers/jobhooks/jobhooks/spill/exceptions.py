"""Errors of the spill path; each has a stable `code` and says what to do."""

from __future__ import annotations

from jobhooks.exceptions import JobhooksError


class SpillError(JobhooksError):
    code = "spill_error"


class SpillRefusedError(SpillError):
    """The spill queue did not take a message: the writes it carried are not kept anywhere."""

    code = "spill_refused"

    def __init__(self, kind: str, cause: str) -> None:
        super().__init__(
            f"the spill queue refused the {kind} that could not be written ({cause}); the "
            "ingest record is retried"
        )
        self.kind = kind
        self.cause = cause


class SpilledMessageInvalidError(SpillError):
    """A spill message that this code cannot read: retrying changes nothing."""

    code = "spill_message_invalid"

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"a spill message cannot be read ({detail}); it stays in the spill dead-letter "
            "queue: inspect it with `jobhooks dlq list --queue spill`"
        )
