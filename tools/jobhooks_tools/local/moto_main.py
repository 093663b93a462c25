"""moto's server, made to keep two promises of AWS that its threads break: DynamoDB's conditional
writes are atomic, and SQS never loses a message it accepted.

DynamoDB applies each conditional write atomically: of two writers whose condition holds only for
the first to land, exactly one succeeds. moto's server answers requests on threads and checks a
condition and applies the write as two steps without a lock, so two concurrent conditional
writes can both succeed there. Code that relies on DynamoDB's rule (a claim taken once, an
endpoint marked failing once, a delivery settled once) then fails, or worse passes, for reasons
AWS never shows. Answering each table's requests one at a time restores the rule (`TableLocks`).
Only each table's: DynamoDB serves every table apart, so a request on one table never waits for
another table's writes there, and must not here either (a tenant's claim queued behind another
tenant's delivery writes is a wait AWS does not have, and the isolation bench measured it).

moto's SQS queue deletes a message by rebuilding its message list from a copy, without the lock
that adding a message takes: a message sent while another is deleted from the same queue can
vanish (a shovel test saw 3 of 1,000 acknowledged messages never arrive). Adding and deleting
take one lock here. Receiving keeps moto's threads: a long poll waits without holding it.

A snapshot of moto's whole state can be taken and put back (`POST /moto-api/jobhooks/snapshot/NAME`,
`POST /moto-api/jobhooks/restore/NAME`): the tests provision template.yaml once per server, take
a snapshot, and restore it before each test instead of resetting moto and provisioning again
(about 0.5 s of the server's CPU and more of the test process's per test; a restore costs
milliseconds). A restore puts back every service's state as the snapshot found it, not only the
data: a queue attribute changed, a table deleted, a key rotated or a resource added by the last
test is undone too, and services the snapshot did not use are reset as moto's own reset does.

Three of moto's costs per request are cut, as every function's calls (and every test's) queue at
this one server: the dispatcher finds each host's backend once (`BackendsByHost`), no request
line is formatted for a log that goes nowhere, and a DynamoDB item answer moto's serializer
would leave as it is is written as it is (`PlainAnswers`).

Run as `python -m jobhooks_tools.local.moto_main -H HOST -p PORT` (moto_server's arguments).
"""

from __future__ import annotations

import base64
import copy
import copyreg
import functools
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

# Held while a message is added to or deleted from an SQS queue, and by a snapshot or a restore.
_SQS_QUEUE_LOCK = threading.RLock()

# DynamoDB's item operations, answered under the locks of the tables they name. Every other
# operation (creating, changing, listing or describing tables, PartiQL, backups, tags) may read
# or change any table, and is answered alone.
ITEM_OPERATIONS = frozenset(
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


def tables_named(operation: str, params: Any) -> list[str] | None:
    """The tables an item operation reads or writes, sorted (the order their locks are taken
    in); None when the operation is no item operation or names no table it can be held to.
    A table named by its ARN is the same table as by its name."""
    if operation not in ITEM_OPERATIONS or not isinstance(params, dict):
        return None
    names: list[Any]
    if "TransactItems" in params:
        names = [
            action.get("TableName")
            for item in params["TransactItems"] or ()
            if isinstance(item, dict)
            for action in item.values()
            if isinstance(action, dict)
        ]
    elif "RequestItems" in params:
        names = list(params["RequestItems"] or ())
    else:
        names = [params.get("TableName")]
    if not names or not all(isinstance(name, str) and name for name in names):
        return None
    return sorted({name.rpartition(":table/")[2] for name in names})


class _Catalogue:
    """Shared by the item requests (each also holding its tables' own locks), held alone by a
    request that may touch any table and by a snapshot or a restore. A request waiting to hold
    it alone goes before item requests that come after it, so a steady stream of item requests
    cannot keep it waiting."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._sharing = 0
        self._alone = False
        self._waiting_alone = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._changed:
            while self._alone or self._waiting_alone:
                self._changed.wait()
            self._sharing += 1
        try:
            yield
        finally:
            with self._changed:
                self._sharing -= 1
                if not self._sharing:
                    self._changed.notify_all()

    @contextmanager
    def alone(self) -> Iterator[None]:
        with self._changed:
            self._waiting_alone += 1
            while self._alone or self._sharing:
                self._changed.wait()
            self._waiting_alone -= 1
            self._alone = True
        try:
            yield
        finally:
            with self._changed:
                self._alone = False
                self._changed.notify_all()


class TableLocks:
    """DynamoDB's requests, each table's one at a time and every table's apart (module
    docstring): an item request holds the locks of the tables it names, any other request holds
    every table."""

    def __init__(self) -> None:
        self._catalogue = _Catalogue()
        self._tables: dict[str, threading.Lock] = {}

    @contextmanager
    def held_for(self, operation: str, params: Any) -> Iterator[None]:
        tables = tables_named(operation, params)
        if tables is None:
            with self._catalogue.alone():
                yield
            return
        with self._catalogue.shared(), ExitStack() as held:
            for table in tables:
                # setdefault is one step under the interpreter lock: two requests naming a new
                # table get the same lock.
                held.enter_context(self._tables.setdefault(table, threading.Lock()))
            yield

    def every_table(self) -> AbstractContextManager[None]:
        """Held while no DynamoDB request is being answered (a snapshot, a restore)."""
        return self._catalogue.alone()


_TABLE_LOCKS = TableLocks()


def serialize_dynamodb() -> None:
    """Answer each DynamoDB table's requests one at a time (module docstring)."""
    from moto.dynamodb.responses import DynamoHandler

    if getattr(DynamoHandler.call_action, "_jobhooks_serialized", False):
        return
    answer = DynamoHandler.call_action
    locks = _TABLE_LOCKS

    @functools.wraps(answer)
    def one_at_a_time_per_table(self: Any) -> Any:
        # moto has parsed the request into `params` before it answers it.
        with locks.held_for(self._get_action(), getattr(self, "params", None)):
            return answer(self)

    one_at_a_time_per_table._jobhooks_serialized = True  # type: ignore[attr-defined]
    DynamoHandler.call_action = one_at_a_time_per_table  # type: ignore[method-assign]


def serialize_sqs_queue_writes() -> None:
    """Add and delete messages of moto's SQS queues under one lock (module docstring)."""
    from moto.sqs.models import Queue

    if getattr(Queue.delete_message, "_jobhooks_serialized", False):
        return
    lock = _SQS_QUEUE_LOCK
    for name in ("add_message", "delete_message"):
        change = getattr(Queue, name)

        def under_lock(self: Any, *args: Any, _change: Any = change, **kwargs: Any) -> Any:
            with lock:
                return _change(self, *args, **kwargs)

        functools.update_wrapper(under_lock, change)
        under_lock._jobhooks_serialized = True  # type: ignore[attr-defined]
        setattr(Queue, name, under_lock)


# ------------------------------------------------------------------------------ snapshots

SNAPSHOT_PATH = "/moto-api/jobhooks/snapshot/"
RESTORE_PATH = "/moto-api/jobhooks/restore/"


def _copyable_locks() -> None:
    """A copy of a model gets locks of its own, unlocked: a lock guards the object that holds
    it (moto's SQS queue has a Condition its long polls wait on), never its copy. Without this,
    copying a queue fails (a lock cannot be copied); copying a Condition field by field would
    give the copy the original's bound `acquire`."""
    copyreg.pickle(threading.Condition, lambda _condition: (threading.Condition, ()))
    copyreg.pickle(type(threading.Lock()), lambda _lock: (threading.Lock, ()))
    copyreg.pickle(type(threading.RLock()), lambda _lock: (threading.RLock, ()))


@dataclass(frozen=True)
class _Place:
    """Where one region's backend of one service lives in moto: BackendDict[account][region]."""

    services: Any  # moto.core.base_backend.BackendDict
    account_id: str
    account: Any  # moto.core.base_backend.AccountSpecificBackend
    region: str
    backend: Any  # moto.core.base_backend.BaseBackend


@dataclass(frozen=True)
class _Snapshot:
    places: tuple[_Place, ...]
    # Each place's backend.__dict__, deep-copied in one go (a model that refers to another,
    # such as a queue to its dead-letter queue, still does in every copy).
    states: tuple[dict[str, Any], ...]

    def states_copied(self) -> list[dict[str, Any]]:
        return copy.deepcopy(list(self.states), _keeping_backends(self.places))


def _keeping_backends(places: Iterable[_Place]) -> dict[int, Any]:
    """A deepcopy memo under which moto's backend containers are never copied: a model that
    refers to its backend refers to the live one."""
    memo: dict[int, Any] = {}
    for place in places:
        for kept in (place.services, place.account, place.backend):
            memo[id(kept)] = kept
    return memo


def _loaded_services() -> list[Any]:
    """moto's list of the services in use (BackendDict instances), the one its reset empties."""
    from moto.core.base_backend import BackendDict

    loaded: list[Any] = BackendDict._instances  # type: ignore[misc]
    return loaded


def _loaded_places() -> list[_Place]:
    return [
        _Place(services, account_id, account, region, backend)
        for services in _loaded_services()
        for account_id, account in list(services.items())
        for region, backend in list(account.items())
    ]


def _quiet() -> ExitStack:
    """Every lock a request changes state under, then moto's backend lock: no request is half
    way through a change while the state is copied or put back. The order is the one requests
    take them in (a DynamoDB request may create a backend under the backend lock)."""
    from moto.core.base_backend import backend_lock

    held = ExitStack()
    for lock in (_TABLE_LOCKS.every_table(), _SQS_QUEUE_LOCK, backend_lock):
        held.enter_context(lock)
    return held


class Snapshots:
    """moto's state by name, taken and put back in this process (module docstring)."""

    def __init__(self) -> None:
        self._taken: dict[str, _Snapshot] = {}

    def take(self, name: str) -> int:
        """Keep the current state of every loaded service as `name`; how many backends."""
        with _quiet():
            places = tuple(_loaded_places())
            states = copy.deepcopy(
                [place.backend.__dict__ for place in places], _keeping_backends(places)
            )
            self._taken[name] = _Snapshot(places, tuple(states))
        return len(places)

    def restore(self, name: str) -> bool:
        """Put every service back as snapshot `name` found it; False if there is no such one."""
        from moto.core.model_instances import reset_model_data

        snapshot = self._taken.get(name)
        if snapshot is None:
            return False
        kept = {id(place.backend) for place in snapshot.places}
        with _quiet():
            states = snapshot.states_copied()
            # What moto's reset does to a backend the snapshot does not have (a service or a
            # region first used since): reset it, which also ends whatever it runs, and drop it.
            for place in _loaded_places():
                if id(place.backend) not in kept:
                    place.backend.reset()
            loaded = _loaded_services()
            for services in loaded:
                for account in services.values():
                    dict.clear(account)
                dict.clear(services)
            loaded.clear()
            for place, state in zip(snapshot.places, states, strict=True):
                dict.__setitem__(place.services, place.account_id, place.account)
                dict.__setitem__(place.account, place.region, place.backend)
                place.backend.__dict__ = state
                if place.services not in loaded:
                    loaded.append(place.services)
            # moto's list of model instances for its dashboard, as its reset clears it.
            reset_model_data()
        return True


def answer_snapshot_request(
    environ: dict[str, Any], start_response: Callable[..., Any], snapshots: Snapshots
) -> list[bytes] | None:
    """The answer to a snapshot or restore request; None for any other request (moto's)."""
    path = str(environ.get("PATH_INFO", ""))
    for prefix, act in ((SNAPSHOT_PATH, snapshots.take), (RESTORE_PATH, snapshots.restore)):
        if not path.startswith(prefix):
            continue
        name = path[len(prefix) :]
        if environ.get("REQUEST_METHOD") != "POST" or not name:
            return _json(start_response, "400 Bad Request", {"error": f"POST {prefix}NAME"})
        if act(name) is False:
            return _json(start_response, "404 Not Found", {"error": f"no snapshot {name}"})
        return _json(start_response, "200 OK", {"snapshot": name})
    return None


def _json(start_response: Callable[..., Any], status: str, body: dict[str, Any]) -> list[bytes]:
    encoded = json.dumps(body).encode()
    start_response(
        status, [("Content-Type", "application/json"), ("Content-Length", str(len(encoded)))]
    )
    return [encoded]


class BackendsByHost:
    """Mixed into moto's dispatcher: the backend of each host is looked up once.

    moto lists its package directory (a listdir, then a stat per service) and tries every
    service's URL patterns on each request, under the dispatcher's one lock: about a quarter of
    the server's CPU per DynamoDB call here. The answer for a host never changes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._backends_by_host: dict[str | None, Any] = {}

    def get_backend_for_host(self, host: str | None) -> Any:
        try:
            return self._backends_by_host[host]
        except KeyError:
            backend = super().get_backend_for_host(host)  # type: ignore[misc]
            self._backends_by_host[host] = backend
            return backend


def serve_snapshots(plain_answers: PlainAnswers | None = None) -> None:
    """Make moto's server (moto.server.main) answer the snapshot and restore requests (and the
    plain answers' report, when they are checked)."""
    import moto.server
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    _copyable_locks()
    snapshots = Snapshots()

    class WithSnapshots(BackendsByHost, DomainDispatcherApplication):  # type: ignore[misc]
        def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
            answer = answer_snapshot_request(environ, start_response, snapshots)
            if answer is None and plain_answers is not None:
                answer = plain_answers.answer(environ, start_response)
            if answer is not None:
                return answer
            return super().__call__(environ, start_response)

    moto.server.DomainDispatcherApplication = WithSnapshots  # type: ignore[attr-defined,misc]


# ------------------------------------------------------------------------------ plain answers

# DynamoDB's item operations whose answers hold items (AttributeValues), counts and capacity,
# written plainly: the transactions' answers are left to moto's serializer.
PLAIN_OPERATIONS = ITEM_OPERATIONS - {"TransactGetItems", "TransactWriteItems"}
PLAIN_ANSWERS_PATH = "/moto-api/jobhooks/plain-answers"
# Set (to anything) in the server's environment: every plain answer is also made by moto's
# serializer and the two compared (`PlainAnswers`), for the test that holds them equal.
CHECK_PLAIN_ANSWERS = "JOBHOOKS_MOTO_CHECK_PLAIN_ANSWERS"


def is_plain(value: Any) -> bool:
    """JSON that moto's serializer would write as it is: objects, arrays, strings, numbers and
    booleans, and bytes (a blob: `_blob` encodes it as the serializer does). A null (a member
    the serializer leaves out) or anything else (a timestamp) is not."""
    if isinstance(value, str | bool | int | float | bytes):
        return True
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(is_plain(item) for item in value)
    return False


def _blob(value: Any) -> str:
    """A blob as moto's serializer writes it (`_serialize_type_blob`): base64, padded."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not plain JSON")


class PlainAnswers:
    """DynamoDB's item answers written with `json.dumps` instead of moto's serializer.

    moto writes every answer by walking the operation's output shape with a value picker per
    member (about a quarter of the server's CPU for a `GetItem` or a `PutItem`). An item
    operation's result is already the JSON the shape describes, so when it holds nothing the
    serializer would change (`is_plain`), it is written as it is; anything else, and every
    error, goes to moto's serializer. With `CHECK_PLAIN_ANSWERS` set, each plain answer is
    compared with the serializer's (the same headers, the same JSON once parsed), and the
    checked count and the differences are answered at `PLAIN_ANSWERS_PATH`."""

    def __init__(self, *, check: bool = False) -> None:
        self.check = check
        self._members: dict[str, frozenset[str]] = {}
        self.checked = 0
        self.differences: list[dict[str, Any]] = []

    def install(self) -> None:
        from moto import settings
        from moto.core.responses import BaseResponse
        from moto.core.utils import get_service_model
        from moto.dynamodb.responses import DynamoHandler

        if getattr(DynamoHandler.serialized, "_jobhooks_plain", False):
            return
        serialized = BaseResponse.serialized
        answers = self

        def plainly(handler: Any, action_result: Any) -> Any:
            result = action_result.result
            operation = handler._get_action()
            if (
                operation not in PLAIN_OPERATIONS
                or settings.PRETTIFY_RESPONSES
                or not isinstance(result, dict)
                or not is_plain(result)
            ):
                return serialized(handler, action_result)
            service_model = get_service_model(handler.boto3_service_name)
            if handler.determine_response_protocol(service_model) != "json":
                return serialized(handler, action_result)
            version = service_model.metadata.get("jsonVersion", "1.0")
            headers: dict[str, Any] = {"Content-Type": f"application/x-amz-json-{version}"}
            headers.update(handler.response_headers)
            headers["status"] = 200
            # moto's results carry a few members the output shape lacks (`ConsumedCapacityUnits`
            # of an old API version): the serializer writes only the shape's.
            members = answers.members(service_model, operation)
            body = json.dumps({k: v for k, v in result.items() if k in members}, default=_blob)
            answer = 200, headers, body
            if answers.check:
                answers.compare(operation, answer, serialized(handler, action_result))
            return answer

        plainly._jobhooks_plain = True  # type: ignore[attr-defined]
        DynamoHandler.serialized = plainly  # type: ignore[method-assign,assignment]

    def members(self, service_model: Any, operation: str) -> frozenset[str]:
        """The names of the operation's output members (read from the model once)."""
        known = self._members.get(operation)
        if known is None:
            shape = service_model.operation_model(operation).output_shape
            known = frozenset(shape.members) if shape is not None else frozenset()
            self._members[operation] = known
        return known

    def compare(self, operation: str, plain: Any, moto: Any) -> None:
        (plain_status, plain_headers, plain_body) = plain
        (moto_status, moto_headers, moto_body) = moto
        self.checked += 1
        same = (
            plain_status == moto_status
            and plain_headers == moto_headers
            and json.loads(plain_body) == json.loads(moto_body)
        )
        if not same and len(self.differences) < 20:
            self.differences.append(
                {"operation": operation, "plain": [plain_status, plain_headers, plain_body],
                 "moto": [moto_status, moto_headers, moto_body]}
            )  # fmt: skip

    def answer(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") != PLAIN_ANSWERS_PATH:
            return None
        report = {"checked": self.checked, "differences": self.differences}
        return _json(start_response, "200 OK", report)


# ------------------------------------------------------------------------------ request log


def no_request_log() -> None:
    """Write no line per request: werkzeug formats and colours one for every AWS call (about 2 %
    of the server's CPU here), and the server's output goes nowhere (moto_server.py)."""
    import moto.server
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    class Unlogged(MotoRequestHandler):  # type: ignore[misc]
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            return None

    moto.server.MotoRequestHandler = Unlogged  # type: ignore[attr-defined,misc]


# Set by `MotoServer` to the pid of the process that starts the server.
OWNER_PID = "JOBHOOKS_MOTO_OWNER_PID"


def end_with_owner() -> None:
    """Exit once the process that started this server is gone without stopping it (killed, a CI
    timeout, a bench stopped mid-run): a server left behind keeps its memory and its port, and
    answers whatever finds that port next. The owner is this process's parent; when it dies,
    the server is handed to another parent, which is what the watch sees."""
    owner = os.environ.get(OWNER_PID)
    if not owner or not owner.isdigit():
        return
    owner_pid = int(owner)

    def watch() -> None:
        while os.getppid() == owner_pid:
            time.sleep(1)
        os._exit(0)

    threading.Thread(target=watch, name="owner-watch", daemon=True).start()


# How often a thread busy in the interpreter hands it over to another that waits (Python's
# default is 5 ms).
SWITCH_INTERVAL_SECONDS = 0.0005


def hand_over_often() -> None:
    """Let a short request through between a long one's slices.

    Every request here runs on a thread of one interpreter, and a thread that comes back from a
    socket (a request read, an answer written) waits for the interpreter until the thread using
    it hands it over: by default after 5 ms, several times per request. So a claim (about 3 ms
    of work) answered beside a burst of another table's conditional updates (4-7 ms each) took
    as long as the burst, while on AWS a request's time does not depend on other tables'. Handing
    over every 0.5 ms bounds each of those waits at a tenth; the cost is more switching."""
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)


def main() -> int:
    from moto.server import main as moto_main

    end_with_owner()
    hand_over_often()
    serialize_dynamodb()
    serialize_sqs_queue_writes()
    plain_answers = PlainAnswers(check=bool(os.environ.get(CHECK_PLAIN_ANSWERS)))
    plain_answers.install()
    serve_snapshots(plain_answers)
    no_request_log()
    moto_main(sys.argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
