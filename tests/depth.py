"""How hard the generated-input tests (hypothesis, schemathesis) push: bounded in the default
run, which must answer in minutes; many times deeper with `scripts/test.sh --deep` (or
JOBHOOKS_DEEP_TESTS=1), which runs the same tests with more examples each.

    @settings(max_examples=examples(60))
"""

from __future__ import annotations

import os

DEEP = os.environ.get("JOBHOOKS_DEEP_TESTS", "") not in ("", "0")
DEEP_FACTOR = 10


def examples(default: int) -> int:
    """`default` examples in the default run, `DEEP_FACTOR` times as many in a deep run."""
    return default * DEEP_FACTOR if DEEP else default
