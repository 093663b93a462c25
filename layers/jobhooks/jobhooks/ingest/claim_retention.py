"""How long the claim on a `ce-id` is kept: until no copy of the event can still be accepted.

The freshness rule (`jobhooks.inbound.freshness`) accepts a copy while its receipt, SQS's
`SentTimestamp`, is at most the dedup retention R after its signed `t`. A copy is then processed
at the latest when the ingest queue's retention Q ends after that receipt: SQS deletes it then.
Passing through the ingest DLQ does not extend this. A message moved to the DLQ keeps its
enqueue time, so it expires there 14 days after its first receipt, and nothing consumes the DLQ.
A redrive sends it back as a new message, with a new `SentTimestamp` that the rule judges anew.

So a copy signed at `t` is never processed after `t + R + Q`, and a claim that expires at
`max(claimed at, t) + R + Q` outlives every copy signed no later than the claim was taken or
than the copy that took it: SQS redeliveries, shovel resends, redriven messages, re-emissions
relayed before the claim. (A re-emission relayed after the claim, with a later `t`, is covered
while it is processed within R + Q of the claim, which the queue-age alarm makes certain in
practice: it would have to wait out nearly both windows.) `ClaimStore` takes a claim over only
when `expires_at < now`, so a copy processed in the very second `t + R + Q` still finds it.

The claim is also how a delivery id is resolved (`jobhooks.delivery.history`): a first attempt
that succeeded has no record of its own, only an entry in the page of its subscription and its
ingest batch, and the claim is what names that batch (`batch_id`) and the subscriptions of its
event. So a claim is kept at least as long as the deliveries it leads to, D (30 days,
`DELIVERY_RETENTION_DAYS`): a page expires D after its batch began, and the batch began before
the claim was taken, so a claim kept `max(R + Q, D)` after it was taken outlives the pages of
its event. (Attempt-log records expire D after their last attempt, later than the claim when
retries ran for days; they resolve by their own id, and an event's listing falls back to the
tenant's subscriptions without a claim, `jobhooks.management.deliveries`.)
"""

from __future__ import annotations

from typing import Final

# How long first-attempt pages and attempt-log records are kept by default (their stores'
# `DEFAULT_RETENTION_DAYS`; a test holds the three equal). Here as a number, not an import: the
# management API imports this module at cold start, and the stores pull in their models.
DELIVERY_RETENTION_DAYS: Final = 30
DELIVERY_RETENTION_SECONDS: Final = DELIVERY_RETENTION_DAYS * 86_400


def claim_retention_seconds(
    *,
    freshness_window_seconds: int,
    queue_retention_seconds: int,
    delivery_retention_seconds: int = DELIVERY_RETENTION_SECONDS,
) -> int:
    """How long after its signed `t` (or its claim, if later) a claim is kept: R + Q, so no
    accepted copy outlives it, and at least D, so no delivery of its event outlives it."""
    return max(freshness_window_seconds + queue_retention_seconds, delivery_retention_seconds)


def claim_expires_at(*, now_seconds: int, signed_at: int | None, retention_seconds: int) -> int:
    """The claim's `expires_at` (epoch seconds) when it is claimed or completed now.

    `signed_at` is the claiming copy's `t`: the freshness rule accepts one up to the future skew
    ahead of its receipt, whose copies live until `t + R + Q`, after `now + R + Q`.
    """
    start = now_seconds if signed_at is None else max(now_seconds, signed_at)
    return start + retention_seconds
