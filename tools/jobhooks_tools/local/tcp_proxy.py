"""A loopback TCP proxy that can be switched off and on: an outage you can schedule.

Put it between a client and a local service (moto's server for SQS, a RabbitMQ node) and call
`refuse()` to make the service look down: the listener closes, so new connections are refused
(the client sees ECONNREFUSED, exactly as with a dead endpoint), and established connections are
dropped. `accept()` listens again on the same port, so the client's configuration stays valid.

    with TcpProxy("127.0.0.1", moto.port) as proxy:
        client = boto3.client("sqs", endpoint_url=proxy.url)
        proxy.refuse()
        ...
        proxy.accept()
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from types import TracebackType

from jobhooks_tools.local.ports import steady_port

_CHUNK = 65536
# How often the accept loop notices refuse()/stop(); also bounds how long they take.
_POLL_SECONDS = 0.05


class TcpProxy:
    def __init__(
        self,
        target_host: str,
        target_port: int,
        listen_host: str = "127.0.0.1",
        listen_port: int | None = None,
    ) -> None:
        self.target = (target_host, target_port)
        self.host = listen_host
        # `accept()` after `refuse()` listens again on this port: outside the ephemeral range,
        # no client socket can take it while the proxy plays dead.
        self.port = steady_port(listen_host) if listen_port is None else listen_port
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._accepting = threading.Event()
        self.connections_accepted = 0

    @property
    def url(self) -> str:
        """`http://host:port` of the proxy, for HTTP services such as moto's server."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> TcpProxy:
        self.accept()
        return self

    def accept(self) -> None:
        """Listens (again) on the proxy's port; idempotent."""
        with self._lock:
            if self._listener is not None:
                return
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            # The port must be reusable at once although dropped connections sit in TIME_WAIT.
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((self.host, self.port))
            listener.listen(128)
            self.port = int(listener.getsockname()[1])
            self._listener = listener
            self._accepting.set()
            self._accept_thread = threading.Thread(
                target=self._accept_loop, args=(listener,), name="tcp-proxy-accept", daemon=True
            )
            self._accept_thread.start()

    def refuse(self) -> None:
        """Closes the listener (new connections are refused) and drops established ones."""
        with self._lock:
            listener, self._listener = self._listener, None
            self._accepting.clear()
            thread, self._accept_thread = self._accept_thread, None
            connections, self._connections = self._connections, set()
        if thread is not None:
            thread.join()
        if listener is not None:
            listener.close()
        for connection in connections:
            _drop(connection)

    def stop(self) -> None:
        self.refuse()

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # --- internals ------------------------------------------------------------------------

    def _accept_loop(self, listener: socket.socket) -> None:
        # A blocking accept() is not woken by close() from another thread on every platform;
        # polling with a short timeout is.
        with selectors.DefaultSelector() as selector:
            selector.register(listener, selectors.EVENT_READ)
            while self._listener is listener:
                if not selector.select(_POLL_SECONDS):
                    continue
                try:
                    client, _ = listener.accept()
                except OSError:
                    return
                self._open_pipe(client, listener)

    def _open_pipe(self, client: socket.socket, listener: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target, timeout=5)
        except OSError:
            _drop(client)
            return
        upstream.settimeout(None)
        with self._lock:
            if self._listener is not listener:
                _drop(client)
                _drop(upstream)
                return
            self._connections.update((client, upstream))
            self.connections_accepted += 1
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(
                target=self._pump, args=(source, sink), name="tcp-proxy-pump", daemon=True
            ).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(_CHUNK)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            # One side finished: end both, like a single TCP connection would.
            with self._lock:
                self._connections.discard(source)
                self._connections.discard(sink)
            _drop(source)
            _drop(sink)


def _drop(connection: socket.socket) -> None:
    # shutdown() wakes a thread blocked in recv() on the same socket; close() alone does not.
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        connection.close()
