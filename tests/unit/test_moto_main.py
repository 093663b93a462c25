"""The local AWS server: each host's backend found once, and found as moto finds it; each DynamoDB
table's requests answered one at a time, and every table apart."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from jobhooks_tools.local.moto_main import (
    BackendsByHost,
    TableLocks,
    hand_over_often,
    tables_named,
)
from moto import backends
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app


class Dispatcher(BackendsByHost, DomainDispatcherApplication):  # type: ignore[misc]
    pass


HOSTS = ("dynamodb", "sqs.us-east-1.amazonaws.com", "kms.eu-west-1.amazonaws.com", "moto_api")


@pytest.mark.parametrize("host", HOSTS)
def test_a_host_resolves_to_the_backend_moto_gives_it(host: str) -> None:
    assert Dispatcher(create_backend_app).get_backend_for_host(host) == (
        DomainDispatcherApplication(create_backend_app).get_backend_for_host(host)
    )


def test_each_host_is_looked_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    listings: list[int] = []
    list_modules = backends.list_of_moto_modules

    def counted() -> Any:
        listings.append(1)
        return list_modules()

    monkeypatch.setattr(backends, "list_of_moto_modules", counted)
    dispatcher = Dispatcher(create_backend_app)
    for _ in range(3):
        for host in HOSTS:
            dispatcher.get_backend_for_host(host)
    # moto_api is answered before the listing; the three others list moto's package once each.
    assert len(listings) == 3
    assert dispatcher.get_backend_for_host("dynamodb") == "dynamodb"


# ------------------------------------------------------------------------- each table apart


@pytest.mark.parametrize(
    ("operation", "params", "tables"),
    [
        ("GetItem", {"TableName": "claims"}, ["claims"]),
        ("PutItem", {"TableName": "arn:aws:dynamodb:us-east-1:123456789012:table/claims"},
         ["claims"]),
        ("BatchGetItem", {"RequestItems": {"pages": {}, "claims": {}}}, ["claims", "pages"]),
        ("BatchWriteItem", {"RequestItems": {"claims": []}}, ["claims"]),
        ("TransactWriteItems",
         {"TransactItems": [{"Put": {"TableName": "b"}}, {"Update": {"TableName": "a"}},
                            {"ConditionCheck": {"TableName": "b"}}]},
         ["a", "b"]),
        ("TransactGetItems", {"TransactItems": [{"Get": {"TableName": "a"}}]}, ["a"]),
        # Anything else, or an item request that names no table, holds every table.
        ("CreateTable", {"TableName": "claims"}, None),
        ("ListTables", {}, None),
        ("ExecuteStatement", {"Statement": "SELECT * FROM claims"}, None),
        ("GetItem", {}, None),
        ("BatchGetItem", {"RequestItems": {}}, None),
        ("TransactWriteItems", {"TransactItems": [{"Put": {}}]}, None),
        ("TransactWriteItems", {"TransactItems": ["Put"]}, None),
    ],
)  # fmt: skip
def test_an_item_request_is_held_to_the_tables_it_names(
    operation: str, params: dict[str, Any], tables: list[str] | None
) -> None:
    assert tables_named(operation, params) == tables


def in_thread(work: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


def test_a_request_on_one_table_never_waits_for_another_tables_request() -> None:
    locks = TableLocks()
    answered = threading.Event()

    def get_from_pages() -> None:
        with locks.held_for("GetItem", {"TableName": "pages"}):
            answered.set()

    with locks.held_for("PutItem", {"TableName": "claims"}):
        in_thread(get_from_pages)
        # With one lock for every table this waits for the claim above, which never ends.
        assert answered.wait(timeout=10)


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.001)


class WatchedLock:
    """A table's lock that counts the requests waiting for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.waiting = 0

    def __enter__(self) -> None:
        self.waiting += 1
        self._lock.acquire()
        self.waiting -= 1

    def __exit__(self, *_: object) -> None:
        self._lock.release()


def test_a_tables_requests_are_answered_one_at_a_time() -> None:
    locks = TableLocks()
    watched = WatchedLock()
    locks._tables["claims"] = watched  # type: ignore[assignment]
    order: list[str] = []

    def second_claim() -> None:
        with locks.held_for("UpdateItem", {"TableName": "arn:aws:dynamodb:r:1:table/claims"}):
            order.append("second in")

    with locks.held_for("PutItem", {"TableName": "claims"}):
        second = in_thread(second_claim)
        # The second request waits for the table's lock: its name and its ARN share one.
        wait_until(lambda: watched.waiting == 1)
        order.append("first out")
    second.join(timeout=10)
    assert order == ["first out", "second in"]


def test_a_request_that_may_touch_any_table_waits_for_every_item_request_then_goes_first() -> None:
    locks = TableLocks()
    order: list[str] = []
    catalogue = locks._catalogue

    def create_table() -> None:
        with locks.held_for("CreateTable", {"TableName": "new"}):
            order.append("create")

    def later_get() -> None:
        with locks.held_for("GetItem", {"TableName": "pages"}):
            order.append("later get")

    with locks.held_for("GetItem", {"TableName": "claims"}):
        creating = in_thread(create_table)
        wait_until(lambda: catalogue._waiting_alone == 1)
        later = in_thread(later_get)
        # The later item request waits behind the waiting CreateTable, not beside it: both wait
        # on the catalogue's condition (its waiters, read from CPython's Condition).
        wait_until(lambda: len(catalogue._changed._waiters) == 2)  # type: ignore[attr-defined]
        order.append("get out")
    creating.join(timeout=10)
    later.join(timeout=10)
    assert order == ["get out", "create", "later get"]


def test_a_snapshot_waits_for_the_requests_being_answered() -> None:
    locks = TableLocks()
    order: list[str] = []
    catalogue = locks._catalogue

    def snapshot() -> None:
        with locks.every_table():
            order.append("snapshot")

    with locks.held_for("BatchWriteItem", {"RequestItems": {"claims": [], "pages": []}}):
        taking = in_thread(snapshot)
        wait_until(lambda: catalogue._waiting_alone == 1)
        order.append("batch out")
    taking.join(timeout=10)
    assert order == ["batch out", "snapshot"]


def test_the_server_hands_its_interpreter_over_ten_times_as_often_as_pythons_default() -> None:
    default = sys.getswitchinterval()
    try:
        hand_over_often()
        assert sys.getswitchinterval() == pytest.approx(0.0005)
    finally:
        sys.setswitchinterval(default)
