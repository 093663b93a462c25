"""Spill function: what ingest could not write after its webhooks went out, written now.

Wiring only; the use case is `jobhooks.spill.drain` (docs/ingest.md, "When a write after the
webhooks fails"): analytics rows to Firehose, first-attempt pages to their table. The response
is the partial batch response: a message whose writes failed again is reported (and hidden for
its retry delay), the others are acknowledged.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from aws_lambda_powertools.utilities.typing import LambdaContext
from jobhooks.spill.settings import SpillSettings
from jobhooks.spill.wiring import build_spill_drain

logger = Logger()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "jobhooks"))
copy_config_to_registered_loggers(source_logger=logger, include={"jobhooks"})


class _Counts:
    def count(self, name: str, value: int = 1) -> None:
        # Disabled (`jobhooks dev`), Powertools would keep the value for a later invocation.
        if not is_metrics_disabled():
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)


# At import, so a bad JOBHOOKS_* variable fails the cold start with its name in the message.
drain = build_spill_drain(SpillSettings.from_env(), metrics=_Counts())


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(raise_on_empty_metrics=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return drain.drain_batch(event)
