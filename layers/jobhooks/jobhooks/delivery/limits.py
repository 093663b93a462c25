"""Delivery's id shapes and URL bound, as plain constants: importable without the task model's
classes or the network policy's tables.

The management API checks a delivery id's shape before any lookup, at its cold start;
`jobhooks.delivery_task`, which makes the ids, re-exports it from here. The API's and the
portal's request models bound a webhook URL's length with `MAX_URL_LENGTH`, which
`jobhooks.delivery.network_policy` enforces and re-exports.
"""

from __future__ import annotations

from typing import Final

# A delivery id names its event (a mark and base64url: at most 684 characters for a 512-character
# ce-id) and tags its subscription; ids made before that are a hash (`legacy_delivery_id_for`).
DELIVERY_ID_PATTERN: Final = r"^dlv_([0-9a-f]{32}|[A-Za-z0-9_-]{2,684}\.[A-Za-z0-9_-]{8})$"

# The longest webhook URL a subscription may have (the API's schema states it too).
MAX_URL_LENGTH: Final = 2048
