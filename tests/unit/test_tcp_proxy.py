"""The loopback TCP proxy: refuse() looks like a dead endpoint, accept() brings it back."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest
from jobhooks_tools.local.tcp_proxy import TcpProxy


class Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(1024):
            self.request.sendall(data)


@pytest.fixture
def echo_port() -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def echo_through(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(payload)
        return connection.recv(1024)


def test_forwards_refuses_and_accepts_again_on_the_same_port(echo_port: int) -> None:
    with TcpProxy("127.0.0.1", echo_port) as proxy:
        port = proxy.port
        assert echo_through(port, b"ping") == b"ping"

        proxy.refuse()
        with pytest.raises(ConnectionRefusedError):
            echo_through(port, b"ping")

        proxy.accept()
        assert proxy.port == port
        assert echo_through(port, b"pong") == b"pong"


def test_refuse_drops_established_connections(echo_port: int) -> None:
    with TcpProxy("127.0.0.1", echo_port) as proxy:
        connection = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
        connection.sendall(b"hello")
        assert connection.recv(1024) == b"hello"

        proxy.refuse()

        with connection:
            try:
                connection.sendall(b"again")
                assert connection.recv(1024) == b""
            except (ConnectionResetError, BrokenPipeError):
                pass
