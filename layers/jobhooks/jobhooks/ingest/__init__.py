"""Ingest: verify forwarded Fetcher events, deduplicate on `ce-id`, fan out, quarantine rejects.

The use case is `service.IngestService` (`ingest_record`, and for the management API
`get_event`, `list_unmatched`, `refan_out`, `reingest`); one module per rule beside it:
`claims` (the lease-carrying claim on a `ce-id`), `quarantine`, `fan_out`, `fetcher_keys`,
`telemetry`, `settings`, `exceptions`. docs/ingest.md describes the behaviour.
"""

from jobhooks.ingest.claims import ClaimState, ClaimStore, EventPage, EventRecord
from jobhooks.ingest.exceptions import (
    AwsServiceError,
    ClaimInProgressError,
    ClaimLostError,
    DeliveryEnqueueError,
    EventInProgressError,
    EventNotFoundError,
    FetcherKeysUnavailableError,
    IngestError,
    QuarantinedMessageIncompleteError,
    QuarantinedMessageNotFoundError,
    QuarantineTooLargeError,
)
from jobhooks.ingest.inbound import InboundMessage
from jobhooks.ingest.quarantine import (
    QuarantinedMessage,
    QuarantinePage,
    QuarantineStatus,
    QuarantineStore,
)
from jobhooks.ingest.service import (
    FanOutResult,
    IngestOutcome,
    IngestResult,
    IngestService,
    build_ingest_service,
    ingest_service,
)
from jobhooks.ingest.settings import IngestSettings
from jobhooks.ingest.telemetry import IngestTelemetry, PowertoolsTelemetry

__all__ = [
    "AwsServiceError",
    "ClaimInProgressError",
    "ClaimLostError",
    "ClaimState",
    "ClaimStore",
    "DeliveryEnqueueError",
    "EventInProgressError",
    "EventNotFoundError",
    "EventPage",
    "EventRecord",
    "FanOutResult",
    "FetcherKeysUnavailableError",
    "InboundMessage",
    "IngestError",
    "IngestOutcome",
    "IngestResult",
    "IngestService",
    "IngestSettings",
    "IngestTelemetry",
    "PowertoolsTelemetry",
    "QuarantinePage",
    "QuarantineStatus",
    "QuarantineStore",
    "QuarantineTooLargeError",
    "QuarantinedMessage",
    "QuarantinedMessageIncompleteError",
    "QuarantinedMessageNotFoundError",
    "build_ingest_service",
    "ingest_service",
]
