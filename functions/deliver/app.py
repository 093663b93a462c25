"""Deliver function: delivery tasks from SQS in, Standard-Webhooks-signed POSTs out.

Wiring only; the use case is `jobhooks.delivery.deliver` (docs/delivery.md), built by
`jobhooks.delivery.wiring`. The response is the
partial batch response: records to retry later are reported, everything else is acked.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from jobhooks.delivery.metrics import PowertoolsDeliveryMetrics
from jobhooks.delivery.settings import DeliverSettings
from jobhooks.delivery.wiring import build_deliverer

if TYPE_CHECKING:
    # The handler's annotation only: Lambda passes its own context object.
    from aws_lambda_powertools.utilities.typing import LambdaContext

logger = Logger()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "jobhooks"))
# The use case logs through the standard library (`jobhooks.*`): format it like ours.
copy_config_to_registered_loggers(source_logger=logger, include={"jobhooks"})
# At import, so a bad JOBHOOKS_* variable fails the cold start with its name in the message.
deliverer = build_deliverer(DeliverSettings.from_env(), metrics=PowertoolsDeliveryMetrics(metrics))


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(raise_on_empty_metrics=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return deliverer.deliver_batch(event, remaining_ms=context.get_remaining_time_in_millis)
