"""The shovel: Fetcher's job events from RabbitMQ to the SQS ingest queue, losslessly.

`Shovel(settings).start()` runs it in-process; `serve(settings)` runs it until SIGTERM;
`jobhooks shovel` is the command. See docs/shovel.md.
"""

from jobhooks_tools.shovel.exceptions import (
    ShovelAuthenticationError,
    ShovelError,
    ShovelSettingsError,
    ShovelTopologyError,
)
from jobhooks_tools.shovel.metrics import ShovelMetrics
from jobhooks_tools.shovel.service import Shovel, ShutdownReport, serve
from jobhooks_tools.shovel.settings import QueueType, ShovelSettings, load_settings

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
