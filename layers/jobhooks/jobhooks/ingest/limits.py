"""Ingest's id shapes, as plain constants: importable without its model's classes.

The management API checks a quarantine id's shape before any lookup, at its cold start; the
model (`model.py`) and the quarantine (`quarantine.py`) re-export it from here.
"""

from __future__ import annotations

from typing import Final

# A quarantine id: `q_` and 32 hex digits of a hash of the message (`ingest.quarantine`).
QUARANTINE_ID_PATTERN: Final = r"^q_[0-9a-f]{32}$"
