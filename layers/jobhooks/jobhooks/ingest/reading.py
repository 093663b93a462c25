"""Reading one message with the Fetcher keys of the moment (`jobhooks.inbound.job_events`).

A key added to the secret after the process read it must not quarantine the messages it
signed: a signature mismatch refreshes the keys once and reads again. An operator's replay may
skip the staleness rule (a maximum age of 0), never the future-timestamp rule.
"""

from __future__ import annotations

from jobhooks.frozen_record import replace
from jobhooks.inbound.event import JobEvent
from jobhooks.inbound.job_events import VerificationPolicy, read_forwarded_message
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
    current = replace(policy, keys=keys.keys())
    return replace(current, max_age_seconds=0) if allow_stale else current
