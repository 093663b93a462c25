"""Ingest function: forwarded Fetcher events from the ingest queue to one delivery task each.

Wiring only; the rules live in `jobhooks.ingest` (docs/ingest.md). Every record is ingested on
its own: a failed one is reported in `batchItemFailures` and comes back after its visibility
timeout, the others are acknowledged. The handler never raises for a record; it raises only
when the function itself cannot work (settings, Fetcher keys).
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext
from jobhooks.ingest import InboundMessage, PowertoolsTelemetry, ingest_service

logger = Logger()
# template.yaml sets the namespace; without it every flush would fail the whole batch.
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "jobhooks"))
telemetry = PowertoolsTelemetry(logger, metrics)


@metrics.log_metrics(raise_on_empty_metrics=False)
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # Settings and Fetcher keys belong to the function, not to a record: when they are unusable
    # the invocation fails (Lambda's Errors metric and alarm) and SQS retries the whole batch.
    ingest = ingest_service(telemetry)
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
            event=event, record_handler=ingest_record, processor=processor, context=context
        )
    )
