"""The loopback receiver counts the TCP connections it accepts, not the POSTs on them
(bench/cost.py prices a TLS handshake per new connection)."""

from __future__ import annotations

import http.client
import time

from jobhooks_tools.local.demo_receiver import DemoReceiver


def _post(connection: http.client.HTTPConnection, headers: dict[str, str]) -> int:
    connection.request("POST", "/orders", body=b"{}", headers=headers)
    response = connection.getresponse()
    response.read()
    return response.status


def test_posts_on_a_kept_alive_connection_count_one_connection() -> None:
    with DemoReceiver() as receiver:
        receiver.add_endpoint("orders")
        connection = http.client.HTTPConnection(receiver.host, receiver.port, timeout=5)
        try:
            # Unsigned, so answered 401, but each is a complete exchange on the same socket.
            assert [_post(connection, {}) for _ in range(3)] == [401, 401, 401]
        finally:
            connection.close()
        assert len(receiver.received("orders")) == 3
        assert receiver.connections() == 1


def test_posts_that_close_their_connection_count_one_connection_each() -> None:
    with DemoReceiver() as receiver:
        receiver.add_endpoint("orders")
        for _ in range(2):
            connection = http.client.HTTPConnection(receiver.host, receiver.port, timeout=5)
            try:
                assert _post(connection, {"Connection": "close"}) == 401
            finally:
                connection.close()
        assert len(receiver.received("orders")) == 2
        assert receiver.connections() == 2


def test_a_receiver_told_to_take_its_time_answers_that_late() -> None:
    # bench/cost.py --receiver-ms: the POSTing functions wait as for a receiver far away.
    with DemoReceiver(answer_after_seconds=0.3) as receiver:
        receiver.add_endpoint("orders")
        connection = http.client.HTTPConnection(receiver.host, receiver.port, timeout=5)
        try:
            started = time.monotonic()
            assert _post(connection, {}) == 401
            assert time.monotonic() - started >= 0.3
        finally:
            connection.close()
