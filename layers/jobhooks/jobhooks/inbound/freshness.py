"""The bridge's freshness rule (README, "Freshness and replay").

`t` is stamped when the producer's outbox relays a message, so a backlog (shovel down, broker
outage) legitimately ages it. The producer's own 5-minute window would turn such a backlog into
rejects, so the bridge only rejects `t` older than its dedup retention (within that window a
replay is caught by the `ce-id` claim instead) or more than a small skew in the future. Both are
measured against the receipt clock: SQS's `SentTimestamp`, never the function's wall clock.
"""

from __future__ import annotations

from jobhooks.inbound.rejection import Reason, RejectedMessageError

DEFAULT_FUTURE_SKEW_SECONDS = 30.0


def check_freshness(
    timestamp: int,
    *,
    received_at: float,
    max_age_seconds: float,
    max_future_seconds: float = DEFAULT_FUTURE_SKEW_SECONDS,
) -> None:
    """Raise `stale_timestamp` or `future_timestamp`.

    `max_age_seconds <= 0` disables the age check only.
    """
    age = received_at - timestamp
    if max_age_seconds > 0 and age > max_age_seconds:
        raise RejectedMessageError(
            Reason.STALE_TIMESTAMP,
            f"t is {age:.0f} s older than its receipt, beyond the {max_age_seconds:.0f} s "
            "retention window; a replay this old cannot be deduplicated",
        )
    if -age > max_future_seconds:
        raise RejectedMessageError(
            Reason.FUTURE_TIMESTAMP,
            f"t is {-age:.0f} s ahead of its receipt (at most {max_future_seconds:.0f} s allowed); "
            "check the producer's clock",
        )
