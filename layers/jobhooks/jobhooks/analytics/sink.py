"""The port every analytics sink implements: `put_rows`.

Adapters: `jobhooks.analytics.firehose.FirehoseSink` (AWS) and
`jobhooks_tools.local.analytics.files.LocalFileSink` (`jobhooks dev`). Tests may pass a fake.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from jobhooks.analytics.row import AnalyticsRow


class AnalyticsSink(ABC):
    @abstractmethod
    def put_rows(self, rows: Sequence[AnalyticsRow]) -> None:
        """Write every row, or raise `AnalyticsWriteError`.

        Writes are at least once: after an error some of the rows may be written already, and a
        retry writes them again. The outcomes view reads one row per `event_id`, so a second
        copy changes no answer.
        """
