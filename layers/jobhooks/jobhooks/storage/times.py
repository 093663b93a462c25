"""The one clock of the package and how times are stored.

Stores keep times as RFC 3339 UTC strings with milliseconds and `Z` (`2026-03-01T12:00:00.000Z`):
they sort as text, which the `by_subscription` and `unmatched` indexes rely on, and a stored time
read back compares equal to the one written, because writers truncate to the millisecond first
(`to_stored_precision`). Expiry (`expires_at`, DynamoDB's TTL attribute) is epoch seconds.
Every store and service takes a clock as an injectable default: tests pass their own.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    """The wall clock, timezone-aware (UTC)."""
    return datetime.now(UTC)


def to_stored_precision(moment: datetime) -> datetime:
    """`moment` in UTC, truncated to the millisecond the stores keep, so round trips are exact."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    moment = moment.astimezone(UTC)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def format_time(moment: datetime) -> str:
    """RFC 3339 UTC with milliseconds and `Z`, as stored."""
    return to_stored_precision(moment).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 UTC with millisecond precision and `Z` (isoformat's, milliseconds truncated): the
    webhooks' times. Here, not in `inbound.outcome` (which re-exports it), so the notifications
    and endpoint health format times without importing the inbound event's models."""
    if moment.tzinfo is not UTC:  # the event's times are UTC already: skip the conversion
        moment = moment.astimezone(UTC)
    # Every field from a table of two-digit strings: each `%02d` (or isoformat's sprintf) builds
    # and pads a string of its own, a dozen thousand instructions for the seven on every webhook.
    two, year, millis = _TWO_DIGITS, moment.year, moment.microsecond // 1000
    return (
        f"{two[year // 100]}{two[year % 100]}-{two[moment.month]}-{two[moment.day]}"
        f"T{two[moment.hour]}:{two[moment.minute]}:{two[moment.second]}"
        f".{two[millis // 10]}{_DIGITS[millis % 10]}Z"
    )


# Built once per process. A year is two pairs (datetime's years run from 1 to 9999).
_TWO_DIGITS = tuple(f"{number:02d}" for number in range(100))
_DIGITS = "0123456789"


def parse_time(text: str) -> datetime:
    """A stored time back (`format_time`'s output, or any RFC 3339 time with an offset)."""
    return datetime.fromisoformat(text)


def epoch_seconds(moment: datetime) -> int:
    """Whole seconds since the epoch: what `expires_at` (the TTL attribute) holds."""
    return int(moment.timestamp())


def epoch_millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def from_epoch_seconds(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
