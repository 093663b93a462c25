"""Errors of the ingest capability.

Each class carries a stable `code` (logs, the management API, the CLI), the HTTP `status` of the
API's answer (`jobhooks.exceptions`) and a sentence that says what happens next or what to do.
A record whose processing raises one of them is reported as a batch item failure, so SQS
delivers it again; none of them is ever raised for a message that is merely invalid (invalid
messages are quarantined and acknowledged).
"""

from __future__ import annotations

from http import HTTPStatus

from jobhooks.exceptions import JobhooksError


class IngestError(JobhooksError):
    code = "ingest_error"


class ClaimInProgressError(IngestError):
    """Another invocation holds a live lease on this `ce-id`: retry once it finished or died."""

    code = "claim_in_progress"

    def __init__(self, event_id: str, lease_until_ms: int) -> None:
        super().__init__(
            f"event {event_id!r} is being processed by another invocation (lease until "
            f"{lease_until_ms} ms); the record is retried after its visibility timeout"
        )
        self.event_id = event_id
        self.lease_until_ms = lease_until_ms


class ClaimLostError(IngestError):
    """Our lease expired and another invocation took the claim over before we completed it."""

    code = "claim_lost"

    def __init__(self, event_id: str) -> None:
        super().__init__(
            f"the claim on event {event_id!r} was taken over after its lease expired; the record "
            "is retried and finds the event done or in progress"
        )
        self.event_id = event_id


class FetcherKeysUnavailableError(IngestError):
    """The Fetcher HMAC keys could not be read: a configuration problem, not a bad message."""

    code = "fetcher_keys_unavailable"

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"the Fetcher HMAC keys are unavailable ({detail}); records are retried, not "
            "quarantined. Put the output of `jobhooks keys derive` into the keys secret"
        )


class QuarantineTooLargeError(IngestError):
    """A rejected message is larger than a DynamoDB item can hold; SQS keeps the original."""

    code = "quarantine_message_too_large"

    def __init__(self, quarantine_id: str, size: int) -> None:
        super().__init__(
            f"the rejected message ({size} bytes) is too large to keep whole in the quarantine "
            f"table; {quarantine_id!r} holds its head, and the record is failed so that the "
            "original lands in the ingest dead-letter queue (jobhooks dlq list)"
        )
        self.quarantine_id = quarantine_id
        self.size = size


class EventNotFoundError(IngestError):
    code = "event_not_found"
    status = HTTPStatus.NOT_FOUND

    def __init__(self, event_id: str) -> None:
        super().__init__(
            f"no event {event_id!r} was ingested within the dedup retention; check the ce-id "
            "(fetcher.job.<status>.<job id>)"
        )
        self.event_id = event_id


class EventInProgressError(IngestError):
    code = "event_in_progress"
    status = HTTPStatus.CONFLICT

    def __init__(self, event_id: str) -> None:
        super().__init__(f"event {event_id!r} is still being ingested; try again once it is done")
        self.event_id = event_id


class QuarantinedMessageNotFoundError(IngestError):
    code = "quarantined_message_not_found"
    status = HTTPStatus.NOT_FOUND

    def __init__(self, quarantine_id: str) -> None:
        super().__init__(
            f"no quarantined message {quarantine_id!r} exists (it may have expired); list the "
            "quarantine to find the right id"
        )
        self.quarantine_id = quarantine_id


class QuarantinedMessageIncompleteError(IngestError):
    code = "quarantined_message_incomplete"
    status = HTTPStatus.CONFLICT

    def __init__(self, quarantine_id: str) -> None:
        super().__init__(
            f"quarantined message {quarantine_id!r} holds only the head of a message too large "
            "to keep; replay the original from the ingest dead-letter queue instead"
        )
        self.quarantine_id = quarantine_id
