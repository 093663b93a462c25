"""Quarantine: the messages ingest rejected, with their reason codes, and replaying one.

A replay runs the original message through the ingest use case again, as if it arrived now
(`IngestService.reingest`): after the operator fixed the cause (added a rotated Fetcher key, say)
it is accepted and fanned out like any event, deduplicated against an earlier copy. `allow_stale`
lifts the one rule time alone breaks (`stale_timestamp`) for that replay; every other rule,
the signature above all, still applies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jobhooks.inbound.rejection import Reason
from jobhooks.management.context import ManagementContext
from jobhooks.management.operator_models import (
    QuarantinedMessageDetail,
    QuarantinedMessageSummary,
    QuarantinePage,
    QuarantineReplayRequest,
    QuarantineReplayResult,
)

if TYPE_CHECKING:
    from jobhooks.ingest.model import QuarantinedMessage


def list_quarantine(
    context: ManagementContext,
    *,
    reason: Reason | None = None,
    limit: int,
    cursor: str | None = None,
) -> QuarantinePage:
    page = context.quarantine.list_messages(reason=reason, limit=limit, cursor=cursor)
    return QuarantinePage(
        messages=[quarantined_summary(record) for record in page.messages],
        next_cursor=page.next_cursor,
    )


def get_quarantined_message(
    context: ManagementContext, quarantine_id: str
) -> QuarantinedMessageDetail:
    record = context.quarantine.get(quarantine_id)
    return QuarantinedMessageDetail.model_validate(record.to_dict(include_message=True))


def replay_quarantined_message(
    context: ManagementContext,
    quarantine_id: str,
    request: QuarantineReplayRequest,
    *,
    remaining_ms: int | None = None,
) -> QuarantineReplayResult:
    """`remaining_ms`: the caller's time left, which bounds the event's claim like ingest's."""
    # Read first: an unknown id is a 404 even when the ingest settings are incomplete.
    context.quarantine.get(quarantine_id)
    result = context.ingest.reingest(
        quarantine_id, allow_stale=request.allow_stale, remaining_ms=remaining_ms
    )
    detail = None
    if result.quarantine_id is not None:
        detail = context.quarantine.get(result.quarantine_id).detail
    return QuarantineReplayResult(
        quarantine_id=quarantine_id,
        outcome=result.outcome.value,
        event_id=result.event_id,
        deliveries=result.deliveries if result.reason is None else None,
        reason=result.reason.value if result.reason is not None else None,
        detail=detail,
        quarantined_as=result.quarantine_id,
    )


def quarantined_summary(record: QuarantinedMessage) -> QuarantinedMessageSummary:
    return QuarantinedMessageSummary.model_validate(record.to_dict(include_message=False))
