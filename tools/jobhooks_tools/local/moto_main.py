"""moto's server, with DynamoDB's requests answered one at a time, as DynamoDB's writes are atomic.

DynamoDB applies each conditional write atomically: of two writers whose condition holds only for
the first to land, exactly one succeeds. moto's server answers requests on threads and checks a
condition and applies the write as two steps without a lock, so two concurrent conditional
writes can both succeed there. Code that relies on DynamoDB's rule (a claim taken once, an
endpoint marked failing once, a delivery settled once) then fails, or worse passes, for reasons
AWS never shows. Answering DynamoDB's requests one at a time restores the rule; the other
services keep moto's threads.

Run as `python -m jobhooks_tools.local.moto_main -H HOST -p PORT` (moto_server's arguments).
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any


def serialize_dynamodb() -> None:
    """Answer DynamoDB requests under one lock (module docstring)."""
    from moto.dynamodb.responses import DynamoHandler

    if getattr(DynamoHandler.call_action, "_jobhooks_serialized", False):
        return
    answer = DynamoHandler.call_action
    lock = threading.Lock()

    @functools.wraps(answer)
    def one_at_a_time(self: Any) -> Any:
        with lock:
            return answer(self)

    one_at_a_time._jobhooks_serialized = True  # type: ignore[attr-defined]
    DynamoHandler.call_action = one_at_a_time  # type: ignore[method-assign]


def main() -> int:
    from moto.server import main as moto_main

    serialize_dynamodb()
    moto_main(sys.argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
