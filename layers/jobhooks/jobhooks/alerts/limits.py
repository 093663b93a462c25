"""What an alert rule may say, as plain constants: importable without the rule model's classes.

The management API's request models carry these bounds (and the OpenAPI document with them), at
its cold start; `model.py` re-exports them and enforces them when a rule is made.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

DEFAULT_MIN_OUTCOMES: Final = 10
DEFAULT_WINDOW: Final = timedelta(minutes=15)
MIN_WINDOW: Final = timedelta(minutes=1)
MAX_WINDOW: Final = timedelta(days=1)
MAX_MIN_OUTCOMES: Final = 1_000_000
MAX_P95_MS: Final = 7 * 86_400_000
MAX_PATTERN_LENGTH: Final = 128
