"""Ingest function: forwarded Fetcher events in, the first attempt of each delivery made, the
rest enqueued for the deliver function.

Wiring only; the use case is `jobhooks.ingest` (docs/ingest.md), the SQS batch handling
`jobhooks.ingest.batch`: a failed record is reported in `batchItemFailures`, the others are
acknowledged. The handler raises only when the function itself cannot work (settings, Fetcher
keys).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from jobhooks.ingest.batch import ingest_batch
from jobhooks.ingest.telemetry import PowertoolsTelemetry
from jobhooks.ingest.wiring import ingest_service

if TYPE_CHECKING:
    # The handler's annotation only: Lambda passes its own context object.
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "jobhooks"))
telemetry = PowertoolsTelemetry(logger, metrics)
# The first attempts log through the standard library (`jobhooks.*`): format them like ours.
copy_config_to_registered_loggers(source_logger=logger, include={"jobhooks"})
# At import, so a bad JOBHOOKS_* variable fails the cold start with its name in the message.
ingest_service(telemetry)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(raise_on_empty_metrics=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # The process's service (built above; rebuilt only when a test changes the configuration).
    return ingest_batch(ingest_service(telemetry), event, context)
