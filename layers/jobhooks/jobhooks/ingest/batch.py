"""An SQS event of the ingest queue in, the partial batch response out.

Every record is ingested on its own (`IngestService.ingest_record`): a failed one is reported in
`batchItemFailures` and comes back after its visibility timeout, the others are acknowledged.
Nothing is raised for a record; only when the function itself cannot work (the Fetcher keys)
does the whole invocation fail, so that Lambda's Errors metric and alarm see it and SQS retries
the batch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from jobhooks.ingest.inbound import InboundMessage
from jobhooks.ingest.service import IngestService


def ingest_batch(
    ingest: IngestService, event: Mapping[str, Any], context: LambdaContext
) -> dict[str, Any]:
    """Ingest the event's records; the partial batch response."""
    # Keys belong to the function, not to a record: checked once per invocation.
    ingest.check_keys()

    def ingest_record(record: SQSRecord, lambda_context: LambdaContext) -> None:
        ingest.ingest_record(
            InboundMessage.from_lambda_record(record.raw_event),
            remaining_ms=lambda_context.get_remaining_time_in_millis(),
        )

    # One processor per invocation: it keeps per-batch state, and local pollers run in threads.
    # Not raising when every record failed keeps Lambda's Errors metric for real crashes.
    processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
    return dict(
        process_partial_response(
            event=dict(event), record_handler=ingest_record, processor=processor, context=context
        )
    )
