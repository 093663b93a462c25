"""moto's server, made to keep two promises of AWS that its threads break: DynamoDB's conditional
writes are atomic, and SQS never loses a message it accepted.

DynamoDB applies each conditional write atomically: of two writers whose condition holds only for
the first to land, exactly one succeeds. moto's server answers requests on threads and checks a
condition and applies the write as two steps without a lock, so two concurrent conditional
writes can both succeed there. Code that relies on DynamoDB's rule (a claim taken once, an
endpoint marked failing once, a delivery settled once) then fails, or worse passes, for reasons
AWS never shows. Answering a table's requests one at a time restores the rule. One lock per
table, not one for all: DynamoDB does not make one table's writers wait for another's, and with
a single lock every function's calls queued behind whichever table was busiest (ingest's claims
behind the deliver function's retries of a failing tenant). A request that names several tables
(BatchWriteItem, TransactWriteItems) takes their locks in name order; one that names none, or
changes the tables themselves (CreateTable, DeleteTable, ...), takes all of them.

moto's SQS queue deletes a message by rebuilding its message list from a copy, without the lock
that adding a message takes: a message sent while another is deleted from the same queue can
vanish (a shovel test saw 3 of 1,000 acknowledged messages never arrive). Adding and deleting
take the queue's lock here (each queue its own). Receiving keeps moto's threads: a long poll
waits without holding it.

Run as `python -m jobhooks_tools.local.moto_main -H HOST -p PORT` (moto_server's arguments).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
from collections.abc import Iterator
from typing import Any

# DynamoDB's item operations and where each names its tables; any other action (CreateTable,
# DeleteTable, UpdateTable, PartiQL, ...) holds every table.
_ITEM_ACTIONS = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactGetItems",
        "TransactWriteItems",
    }
)


class _TableLocks:
    """A lock per table, plus a shared/exclusive gate: item requests pass it shared, requests
    on the tables themselves exclusively (no item request runs meanwhile, and none starts while
    one waits)."""

    def __init__(self) -> None:
        self._locks: dict[str, threading.Lock] = {}
        self._gate = threading.Condition()
        self._sharing = 0
        self._exclusive = False
        self._waiting = 0

    @contextlib.contextmanager
    def holding(self, tables: list[str] | None) -> Iterator[None]:
        if tables is None:
            with self._gate:
                self._waiting += 1
                self._gate.wait_for(lambda: not self._exclusive and not self._sharing)
                self._waiting -= 1
                self._exclusive = True
            try:
                yield
            finally:
                with self._gate:
                    self._exclusive = False
                    self._gate.notify_all()
            return
        with self._gate:
            self._gate.wait_for(lambda: not self._exclusive and not self._waiting)
            self._sharing += 1
            locks = [self._locks.setdefault(name, threading.Lock()) for name in sorted(tables)]
        try:
            with contextlib.ExitStack() as stack:
                for lock in locks:
                    stack.enter_context(lock)
                yield
        finally:
            with self._gate:
                self._sharing -= 1
                self._gate.notify_all()


def _tables_of(action: str | None, params: Any) -> list[str] | None:
    """The tables an item request names; None for any other request (it holds them all)."""
    if action not in _ITEM_ACTIONS or not isinstance(params, dict):
        return None
    if "TableName" in params:
        return [str(params["TableName"])]
    if isinstance(params.get("RequestItems"), dict):
        return [str(name) for name in params["RequestItems"]] or None
    names = {
        str(operation["TableName"])
        for item in params.get("TransactItems") or []
        if isinstance(item, dict)
        for operation in item.values()
        if isinstance(operation, dict) and "TableName" in operation
    }
    return sorted(names) or None


def serialize_dynamodb() -> None:
    """Answer each table's DynamoDB requests one at a time (module docstring)."""
    from moto.dynamodb.responses import DynamoHandler

    if getattr(DynamoHandler.call_action, "_jobhooks_serialized", False):
        return
    answer = DynamoHandler.call_action
    locks = _TableLocks()

    @functools.wraps(answer)
    def one_at_a_time(self: Any) -> Any:
        action = self.get_endpoint_name(self.headers)
        with locks.holding(_tables_of(action, getattr(self, "params", None))):
            return answer(self)

    one_at_a_time._jobhooks_serialized = True  # type: ignore[attr-defined]
    DynamoHandler.call_action = one_at_a_time  # type: ignore[method-assign]


def serialize_sqs_queue_writes() -> None:
    """Add and delete messages of each of moto's SQS queues under its own lock (module
    docstring)."""
    from moto.sqs.models import Queue

    if getattr(Queue.delete_message, "_jobhooks_serialized", False):
        return
    for name in ("add_message", "delete_message"):
        change = getattr(Queue, name)

        def under_lock(self: Any, *args: Any, _change: Any = change, **kwargs: Any) -> Any:
            # dict.setdefault is atomic: two first writers of a queue get the same lock.
            lock = self.__dict__.setdefault("_jobhooks_writes", threading.RLock())
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
