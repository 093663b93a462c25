"""An SQS event of the ingest queue in, the partial batch response out.

The invocation's records are ingested together (`IngestService.ingest_messages`): each is read
and claimed on its own, and their deliveries share `SendMessageBatch` calls and their rows one
sink call. A record whose ingest failed is reported in `batchItemFailures` and comes back after
its visibility timeout, the others are acknowledged. Nothing is raised for a record; only when
the function itself cannot work (the Fetcher keys) does the whole invocation fail, so that
Lambda's Errors metric and alarm see it and SQS retries the batch.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from jobhooks.ingest.inbound import InboundMessage
from jobhooks.ingest.service import IngestService

if TYPE_CHECKING:
    # An annotation only: Lambda passes its own context object.
    from aws_lambda_powertools.utilities.typing import LambdaContext

_logger = logging.getLogger("jobhooks.ingest")


def ingest_batch(
    ingest: IngestService, event: Mapping[str, Any], context: LambdaContext
) -> dict[str, Any]:
    """Ingest the event's records; the partial batch response."""
    # Keys belong to the function, not to a record: checked once per invocation.
    ingest.check_keys()
    records = list(event.get("Records") or [])
    failures: list[dict[str, str]] = []
    messages: list[InboundMessage] = []
    message_ids: list[str] = []
    for record in records:
        try:
            messages.append(InboundMessage.from_lambda_record(record))
        except Exception as error:  # an unreadable record: retried, then the DLQ keeps it
            _logger.warning("an ingest record could not be read", extra={"error": str(error)})
            failures.append({"itemIdentifier": str(record.get("messageId", ""))})
            continue
        message_ids.append(str(record.get("messageId", "")))
    results = ingest.ingest_messages(messages, remaining_ms=context.get_remaining_time_in_millis())
    for message_id, result in zip(message_ids, results, strict=True):
        if isinstance(result, Exception):
            failures.append({"itemIdentifier": message_id})
    return {"batchItemFailures": failures}
