"""The claim retention invariant (docs/ingest.md, "The claim"): a copy of an event that the
freshness rule still accepts always finds the claim of the copy ingested before it.

A copy is accepted while its receipt (SQS SentTimestamp) is at most the freshness window R after
its signed `t`, and it is processed at the latest when the ingest queue's retention Q ends after
that receipt (a DLQ redrive re-enqueues it with a new SentTimestamp, judged again). A claim on
`ce-id` is taken with `expires_at < :now` as one way in: it must not have expired at that moment.

The claim also names the ingest batch whose first-attempt pages hold its event's successful first
attempts (`jobhooks.delivery.history`): it is kept at least as long as those pages.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jobhooks.delivery import attempt_log, first_attempts
from jobhooks.inbound.freshness import DEFAULT_FUTURE_SKEW_SECONDS, check_freshness
from jobhooks.inbound.rejection import RejectedMessageError
from jobhooks.ingest.claim_retention import (
    DELIVERY_RETENTION_DAYS,
    DELIVERY_RETENTION_SECONDS,
    claim_expires_at,
    claim_retention_seconds,
)
from jobhooks.storage.times import epoch_seconds, to_stored_precision

DAY = 86_400
R = 7 * DAY  # DedupRetentionDays' default
Q = 4 * DAY  # IngestQueue's MessageRetentionPeriod
SKEW = int(DEFAULT_FUTURE_SKEW_SECONDS)
T = 1_800_000_000


def still_claimed(expires_at: int, now: int) -> bool:
    """ClaimStore's condition for taking a claim over is `expires_at < :now`."""
    return not expires_at < now


def test_the_retention_is_the_freshness_window_plus_the_queue_retention_when_longer() -> None:
    long_window = 40 * DAY
    assert (
        claim_retention_seconds(freshness_window_seconds=long_window, queue_retention_seconds=Q)
        == long_window + Q
    )
    assert (
        claim_retention_seconds(
            freshness_window_seconds=R, queue_retention_seconds=Q, delivery_retention_seconds=0
        )
        == R + Q
    )


def test_claims_are_kept_as_long_as_the_deliveries_they_lead_to() -> None:
    # The defaults: R + Q is 11 days, the deliveries are kept 30.
    assert claim_retention_seconds(freshness_window_seconds=R, queue_retention_seconds=Q) == (
        DELIVERY_RETENTION_SECONDS
    )
    # The number here is the stores' default, which it stands for.
    assert DELIVERY_RETENTION_DAYS == first_attempts.DEFAULT_RETENTION_DAYS
    assert DELIVERY_RETENTION_DAYS == attempt_log.DEFAULT_RETENTION_DAYS


@given(
    window=st.integers(1, 365).map(lambda days: days * DAY),
    queue=st.integers(60, 14 * DAY),
    batch_ms=st.integers(T * 1000, (T + 400 * DAY) * 1000),
    claim_delay_ms=st.integers(0, 900_000),
    signed_before=st.integers(-3600, 30 * DAY),
    lived=st.integers(0, 400 * DAY),
)
def test_a_first_attempt_page_never_outlives_the_claim_that_names_it(
    window: int, queue: int, batch_ms: int, claim_delay_ms: int, signed_before: int, lived: int
) -> None:
    # Ingest names the batch (its time) before it claims the batch's events, then writes the
    # pages of their first-attempt successes, kept D after the batch's time.
    batch = datetime.fromtimestamp(batch_ms / 1000, UTC)
    claimed_at = epoch_seconds(batch) + claim_delay_ms // 1000
    expires = claim_expires_at(
        now_seconds=claimed_at,
        signed_at=claimed_at - signed_before,
        retention_seconds=claim_retention_seconds(
            freshness_window_seconds=window, queue_retention_seconds=queue
        ),
    )
    page_expires = epoch_seconds(
        to_stored_precision(batch) + timedelta(days=DELIVERY_RETENTION_DAYS)
    )
    now = epoch_seconds(batch) + lived
    page_live = page_expires > now  # FirstAttemptLog's read check
    claim_live = expires > now  # ClaimStore.get's read check

    assert claim_live or not page_live


def test_the_last_copy_the_freshness_rule_accepts_still_finds_the_claim() -> None:
    # The oldest receipt accepted, and the first one rejected:
    check_freshness(T, received_at=T + R, max_age_seconds=R)
    with pytest.raises(RejectedMessageError):
        check_freshness(T, received_at=T + R + 1, max_age_seconds=R)
    last_processing = T + R + Q  # then SQS deletes it
    # The freshness bound alone (the deliveries' retention only lengthens it).
    retention = claim_retention_seconds(
        freshness_window_seconds=R, queue_retention_seconds=Q, delivery_retention_seconds=0
    )

    # However late the first copy was claimed (it waited in the broker, then in the queue):
    for claimed_at in (T - SKEW, T, T + 60, T + R, T + R + Q):
        expires = claim_expires_at(now_seconds=claimed_at, signed_at=T, retention_seconds=retention)
        assert still_claimed(expires, last_processing), claimed_at

    # ... and no longer than that when the first copy was claimed on arrival.
    on_arrival = claim_expires_at(now_seconds=T, signed_at=T, retention_seconds=retention)
    assert on_arrival == last_processing


def test_a_future_dated_t_counts_from_t() -> None:
    # The freshness rule accepts `t` up to SKEW ahead of the receipt; its copies live until
    # t + R + Q, later than the claim's time + R + Q.
    claimed_at = T
    signed_at = T + SKEW
    retention = R + Q

    expires = claim_expires_at(
        now_seconds=claimed_at, signed_at=signed_at, retention_seconds=retention
    )

    assert expires == signed_at + R + Q


def test_without_a_signed_time_the_claim_counts_from_now() -> None:
    assert claim_expires_at(now_seconds=T, signed_at=None, retention_seconds=R + Q) == T + R + Q


@given(
    window=st.integers(1, 365).map(lambda days: days * DAY),
    queue=st.integers(60, 14 * DAY),
    skew=st.integers(0, 3600),
    first_age=st.integers(-3600, 400 * DAY),
    first_wait=st.integers(0, 14 * DAY),
    copy_t_before=st.integers(0, 30 * DAY),
    copy_age=st.integers(-3600, 400 * DAY),
    copy_wait=st.integers(0, 14 * DAY),
)
def test_every_accepted_copy_signed_before_the_claim_finds_it(
    window: int,
    queue: int,
    skew: int,
    first_age: int,
    first_wait: int,
    copy_t_before: int,
    copy_age: int,
    copy_wait: int,
) -> None:
    # The first copy: signed at T, received first_age later, claimed first_wait after that.
    first_received = T + first_age
    if not accepted(T, first_received, window, skew) or first_wait > queue:
        return
    claimed_at = first_received + first_wait
    retention = claim_retention_seconds(
        freshness_window_seconds=window, queue_retention_seconds=queue
    )
    expires = claim_expires_at(now_seconds=claimed_at, signed_at=T, retention_seconds=retention)
    # Another copy signed no later than the claim was taken or than the first copy (a
    # redelivery, a shovel resend, a redrive, a re-emission relayed before the claim), accepted,
    # and processed after the claim, within the queue's retention of its receipt.
    copy_t = max(claimed_at, T) - copy_t_before
    copy_received = copy_t + copy_age
    if not accepted(copy_t, copy_received, window, skew) or copy_wait > queue:
        return
    processed_at = max(copy_received + copy_wait, claimed_at)
    if processed_at > copy_received + queue:
        return  # SQS deleted it before the claim even existed

    assert still_claimed(expires, processed_at)


def accepted(t: int, received: int, window: int, skew: int) -> bool:
    try:
        check_freshness(t, received_at=received, max_age_seconds=window, max_future_seconds=skew)
    except RejectedMessageError:
        return False
    return True
