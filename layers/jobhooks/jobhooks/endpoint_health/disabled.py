"""`endpoint.disabled`: why an endpoint stopped receiving deliveries, as its notification says.

Sent by whichever write disabled it (a conditional one: two 410s racing send one notification):
the deliver or ingest function for `gone` (a 410) and `sustained_failure`, the management API
for `operator` (an operator or the tenant, through the API, the CLI or the portal).
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from jobhooks.storage.times import format_timestamp


class DisableCause(StrEnum):
    GONE = "gone"
    OPERATOR = "operator"
    SUSTAINED_FAILURE = "sustained_failure"


def disabled_data(
    subscription_id: str, cause: DisableCause, detail: str | None, at: datetime
) -> dict[str, Any]:
    return {
        "subscription_id": subscription_id,
        "reason": cause.value,
        "detail": detail,
        "disabled_at": format_timestamp(at),
    }


def disabled_key(subscription_id: str, at: datetime) -> str:
    return f"{subscription_id}.disabled.{format_timestamp(at)}"
