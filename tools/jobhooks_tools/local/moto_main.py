"""moto's server, made to keep two promises of AWS that its threads break: DynamoDB's conditional
writes are atomic, and SQS never loses a message it accepted.

DynamoDB applies each conditional write atomically: of two writers whose condition holds only for
the first to land, exactly one succeeds. moto's server answers requests on threads and checks a
condition and applies the write as two steps without a lock, so two concurrent conditional
writes can both succeed there. Code that relies on DynamoDB's rule (a claim taken once, an
endpoint marked failing once, a delivery settled once) then fails, or worse passes, for reasons
AWS never shows. Answering DynamoDB's requests one at a time restores the rule.

moto's SQS queue deletes a message by rebuilding its message list from a copy, without the lock
that adding a message takes: a message sent while another is deleted from the same queue can
vanish (a shovel test saw 3 of 1,000 acknowledged messages never arrive). Adding and deleting
take one lock here. Receiving keeps moto's threads: a long poll waits without holding it.

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


def serialize_sqs_queue_writes() -> None:
    """Add and delete messages of moto's SQS queues under one lock (module docstring)."""
    from moto.sqs.models import Queue

    if getattr(Queue.delete_message, "_jobhooks_serialized", False):
        return
    lock = threading.RLock()
    for name in ("add_message", "delete_message"):
        change = getattr(Queue, name)

        def under_lock(self: Any, *args: Any, _change: Any = change, **kwargs: Any) -> Any:
            with lock:
                return _change(self, *args, **kwargs)

        functools.update_wrapper(under_lock, change)
        under_lock._jobhooks_serialized = True  # type: ignore[attr-defined]
        setattr(Queue, name, under_lock)


def main() -> int:
    from moto.server import main as moto_main

    serialize_dynamodb()
    serialize_sqs_queue_writes()
    moto_main(sys.argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
