"""Reading one message with the Fetcher keys of the moment (`jobhooks.inbound.job_events`).

A key added to the secret after the process read it must not quarantine the messages it
signed: a signature mismatch refreshes the keys once and reads again. An operator's replay may
skip the staleness rule (a maximum age of 0), never the future-timestamp rule.
"""

from __future__ import annotations

from jobhooks.frozen_record import replace
from jobhooks.inbound.event import JobEvent
from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message
from jobhooks.inbound.keys import HmacKey
from jobhooks.inbound.rejection import Reason, RejectedMessageError
from jobhooks.ingest.fetcher_keys import FetcherKeySource
from jobhooks.ingest.inbound import InboundMessage
from jobhooks.ingest.telemetry import IngestTelemetry


def read_message(
    message: InboundMessage,
    *,
    keys: FetcherKeySource,
    policy: VerificationPolicy,
    allow_stale: bool,
    telemetry: IngestTelemetry,
) -> JobEvent:
    """The verified event of `message`; `RejectedMessageError` with its reason otherwise."""
    try:
        return read_forwarded_message(
            message.body, _policy(policy, keys, allow_stale), message.sent_at
        )
    except RejectedMessageError as rejection:
        if rejection.reason is not Reason.SIGNATURE_MISMATCH or not keys.refresh():
            raise
    telemetry.keys_refreshed()
    return read_forwarded_message(message.body, _policy(policy, keys, allow_stale), message.sent_at)


def _policy(
    policy: VerificationPolicy, keys: FetcherKeySource, allow_stale: bool
) -> VerificationPolicy:
    """`policy` with the keys of the moment (and no age limit for a replay that lifts it).

    The same for every message until the keys, the policy or the switch change: rebuilding it
    (a `replace`, two for a replay: 28,000 instructions, about 3 us, while the policy was a
    dataclass) cost every message more than its HMAC and body parse together. The last one
    built is kept with what it was built from, compared by identity: a key source returns the
    same tuple until its secret changes."""
    global _last_policy
    current_keys = keys.keys()
    last = _last_policy
    if (
        last is not None
        and last[0] is policy
        and last[1] is current_keys
        and last[2] is allow_stale
    ):
        return last[3]
    current = replace(policy, keys=current_keys)
    built = replace(current, max_age_seconds=0) if allow_stale else current
    _last_policy = (policy, current_keys, allow_stale, built)
    return built


# (policy, keys, allow_stale, the policy built from them): one entry, swapped whole, so a
# concurrent read sees the old entry or the new one, never half of each.
_last_policy: tuple[VerificationPolicy, tuple[HmacKey, ...], bool, VerificationPolicy] | None = None
