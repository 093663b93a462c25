"""Portal links' and sessions' bounds and id shape, as plain constants.

The management API's request models carry them (and the OpenAPI document with them), at its
cold start, without the token and session machinery; `sessions.py` re-exports them.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

DEFAULT_LINK_TTL: Final = timedelta(minutes=15)
MIN_LINK_TTL: Final = timedelta(minutes=1)
MAX_LINK_TTL: Final = timedelta(hours=24)
SESSION_ID_PATTERN: Final = r"^ses_[0-9a-f]{32}$"
