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
"""

from __future__ import annotations


def claim_retention_seconds(*, freshness_window_seconds: int, queue_retention_seconds: int) -> int:
    """R + Q: how long after its signed `t` (or its claim, if later) a claim is kept."""
    return freshness_window_seconds + queue_retention_seconds


def claim_expires_at(*, now_seconds: int, signed_at: int | None, retention_seconds: int) -> int:
    """The claim's `expires_at` (epoch seconds) when it is claimed or completed now.

    `signed_at` is the claiming copy's `t`: the freshness rule accepts one up to the future skew
    ahead of its receipt, whose copies live until `t + R + Q`, after `now + R + Q`.
    """
    start = now_seconds if signed_at is None else max(now_seconds, signed_at)
    return start + retention_seconds
