"""Names that moved to modules of their own, still importable from where they were.

A class only some functions build (a management page, a spill message, the deliver function's
own records) lives in its own module, so that the other functions' cold start does not define
it; the module it came from keeps exporting the name, loaded on first use, through a
module-level `__getattr__` (PEP 562) that calls `moved_name`:

    _MOVED: Final = {"DeliveryPage": "jobhooks.delivery.pages"}

    def __getattr__(name: str) -> Any:
        return moved_name(__name__, name, _MOVED)
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def moved_name(module: str, name: str, moved: Mapping[str, str]) -> Any:
    """`name` from the module `moved` names for it; AttributeError as for any missing name."""
    home = moved.get(name)
    if home is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
