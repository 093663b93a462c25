"""The shovel: Fetcher's job events from RabbitMQ to the SQS ingest queue, losslessly.

`Shovel(settings).start()` runs it in-process; `serve(settings)` runs it until SIGTERM;
`jobhooks shovel` is the command. See docs/shovel.md.
"""

from jobhooks.shovel.exceptions import (
    ShovelAuthenticationError,
    ShovelError,
    ShovelSettingsError,
    ShovelTopologyError,
)
from jobhooks.shovel.metrics import ShovelMetrics
from jobhooks.shovel.service import Shovel, ShutdownReport, serve
from jobhooks.shovel.settings import QueueType, ShovelSettings, load_settings

__all__ = [
    "QueueType",
    "Shovel",
    "ShovelAuthenticationError",
    "ShovelError",
    "ShovelMetrics",
    "ShovelSettings",
    "ShovelSettingsError",
    "ShovelTopologyError",
    "ShutdownReport",
    "load_settings",
    "serve",
]
