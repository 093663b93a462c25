"""The one wall clock of the package: every store and service takes it as an injectable default."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)
