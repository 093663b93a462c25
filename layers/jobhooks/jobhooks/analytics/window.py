"""The time window a question answers over: `[from, to)` on `timestamp_utc`, in UTC.

`parameters()` are the three values of the outcomes view's placeholders, in order: the first
partition to read (`dt`, one day before `from`: a row is written after its outcome, and this
leaves a producer clock that runs ahead by less than a day inside the window), then `from` and
`to` as `yyyy-MM-dd HH:mm:ss.SSS`, the text both DuckDB and Athena cast to a timestamp.

A window may also be scoped to one `account_id` (the tenant portal's charts: one tenant sees
its own outcomes only). Its question texts then read the view through one more filter
(`Question.sql(..., account_scoped=True)`), whose placeholder takes a fourth parameter: the
account as the table stores it (its pseudonym when the table is pseudonymized).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final

from jobhooks.analytics.exceptions import InvalidWindowError
from jobhooks.storage.times import format_time

DEFAULT_DAYS: Final = 7
# Longer than any retention the template allows: a window beyond it only scans more.
MAX_DAYS: Final = 3660
# The partitions read start one day before `from`: keep that day, and `to`, representable.
EARLIEST: Final = datetime(1970, 1, 2, tzinfo=UTC)
LATEST: Final = datetime(9999, 12, 31, tzinfo=UTC)
_SQL_TIMESTAMP: Final = "%Y-%m-%d %H:%M:%S.%f"


@dataclass(frozen=True, slots=True)
class QueryWindow:
    start: datetime
    end: datetime
    account_id: str | None = None
    """Only this account's outcomes (as stored: raw, or its pseudonym); None: every account."""

    def __post_init__(self) -> None:
        for name, value in (("from", self.start), ("to", self.end)):
            if value.tzinfo is None or value.utcoffset() != timedelta(0):
                raise InvalidWindowError(f"`{name}` must be a UTC time", field=name)
            if not EARLIEST <= value <= LATEST:
                raise InvalidWindowError(
                    f"`{name}` must lie between 1970-01-02 and 9999-12-31", field=name
                )
        if self.start >= self.end:
            raise InvalidWindowError("`from` must be before `to`", field="from")
        if self.end - self.start > timedelta(days=MAX_DAYS):
            raise InvalidWindowError(f"a window spans at most {MAX_DAYS} days", field="from")
        if self.account_id is not None and not self.account_id:
            raise InvalidWindowError("an account scope names an account", field="account_id")

    @classmethod
    def parse(cls, start: str | None, end: str | None, *, now: datetime) -> QueryWindow:
        """From ISO 8601 texts (a date means its midnight UTC; no zone means UTC).

        Missing `to` is `now`; missing `from` is `DEFAULT_DAYS` before `to`.
        """
        end_at = _parse("to", end) if end else _millis(now.astimezone(UTC))
        if start:
            start_at = _parse("from", start)
        elif end_at < EARLIEST + timedelta(days=DEFAULT_DAYS):
            raise InvalidWindowError(
                f"`to` must be after 1970-01-09: without `from`, the window is the {DEFAULT_DAYS} "
                "days before it",
                field="to",
            )
        else:
            start_at = end_at - timedelta(days=DEFAULT_DAYS)
        return cls(start_at, end_at)

    @classmethod
    def from_parameters(cls, parameters: Sequence[str]) -> QueryWindow:
        """The window whose `parameters()` these are (as SQL string literals or bare)."""
        if len(parameters) not in (3, 4):
            raise InvalidWindowError("a window has three parameters, four with an account")
        start, end, *account = (_unquoted(text) for text in parameters[1:])
        return cls(_from_sql(start), _from_sql(end), account[0] if account else None)

    @property
    def account_scoped(self) -> bool:
        return self.account_id is not None

    def parameters(self) -> list[str]:
        first_partition = (self.start - timedelta(days=1)).date().isoformat()
        values = [first_partition, _to_sql(self.start), _to_sql(self.end)]
        return values if self.account_id is None else [*values, self.account_id]

    def to_dict(self) -> dict[str, str]:
        return {"from": format_time(self.start), "to": format_time(self.end)}


def _parse(name: str, text: str) -> datetime:
    try:
        if len(text) == 10:
            moment = datetime.combine(date.fromisoformat(text), time(), UTC)
        else:
            moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidWindowError(
            f"`{name}` is not an ISO 8601 date or time (e.g. 2026-07-13 or 2026-07-13T18:00:00Z)",
            field=name,
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return _millis(moment.astimezone(UTC))
    except OverflowError:  # an offset that takes year 1 or 9999 out of range
        raise InvalidWindowError(
            f"`{name}` must lie between 1970-01-02 and 9999-12-31", field=name
        ) from None


def sql_literal(value: str) -> str:
    """`value` as an SQL string literal (Athena substitutes execution parameters as written)."""
    return "'" + value.replace("'", "''") + "'"


def _unquoted(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    return text


def _millis(moment: datetime) -> datetime:
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _to_sql(moment: datetime) -> str:
    return moment.strftime(_SQL_TIMESTAMP)[:-3]


def _from_sql(text: str) -> datetime:
    try:
        return datetime.strptime(text + "000", _SQL_TIMESTAMP).replace(tzinfo=UTC)
    except ValueError:
        raise InvalidWindowError(f"{text[:40]!r} is not a window bound") from None
