"""A loopback webhook receiver that verifies Standard Webhooks signatures, for demos and tests.

What a customer's endpoint does, in a few lines: read the body, verify `webhook-signature` with
the subscription's secret (the `standardwebhooks` library when it is installed, as a customer
would, else `jobhooks.webhook_signature`), answer 2xx. One server holds several endpoints, one
per path, each with its own secrets and behaviour, so a test can give every subscription its
own receiver and check that nothing arrives where it does not belong.

    receiver = DemoReceiver().start()
    url = receiver.add_endpoint("acme-orders", secret)     # http://127.0.0.1:PORT/acme-orders
    receiver.set_status("acme-orders", 503)                # failing until set back to 200
    receiver.go_down(); receiver.come_back()               # connections refused, then accepted
    receiver.connections()                                 # TCP connections accepted so far
    receiver.stop()
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import json
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from jobhooks.webhook_signature import InvalidWebhookSecretError, sign

# The Standard Webhooks default tolerance for `webhook-timestamp`.
TIMESTAMP_TOLERANCE_SECONDS: Final = 300
_MAX_BODY_BYTES: Final = 1_048_576


@dataclass(frozen=True)
class ReceivedWebhook:
    """One POST as the receiver saw it."""

    endpoint: str
    webhook_id: str
    timestamp: str
    body: bytes = field(repr=False)
    headers: dict[str, str] = field(repr=False)
    verified: bool
    problem: str | None
    answered: int
    received_at: float

    @property
    def document(self) -> Any:
        return json.loads(self.body)


@dataclass
class _Endpoint:
    name: str
    secrets: list[str]
    status: int = 200
    received: list[ReceivedWebhook] = field(default_factory=list)


def verify_webhook(body: bytes, headers: dict[str, str], secrets: Sequence[str]) -> str | None:
    """None when one of `secrets` signed this request; otherwise what is wrong with it."""
    lowered = {name.lower(): value for name, value in headers.items()}
    webhook_id = lowered.get("webhook-id", "")
    timestamp = lowered.get("webhook-timestamp", "")
    signature = lowered.get("webhook-signature", "")
    if not (webhook_id and timestamp and signature):
        return "missing webhook-id, webhook-timestamp or webhook-signature"
    if not secrets:
        return "no secret to verify with"
    try:
        from standardwebhooks.webhooks import Webhook, WebhookVerificationError
    except ImportError:  # a dev dependency: fall back on the bridge's own signing code
        return _verify_with_jobhooks(webhook_id, timestamp, signature, body, secrets)
    problem = "no matching signature"
    for secret in secrets:
        try:
            Webhook(secret).verify(body, lowered, json_parse=False)
        except WebhookVerificationError as error:
            problem = str(error)
            continue
        return None
    return problem


def _verify_with_jobhooks(
    webhook_id: str, timestamp: str, signature: str, body: bytes, secrets: Sequence[str]
) -> str | None:
    try:
        moment = int(timestamp)
    except ValueError:
        return "webhook-timestamp is not an integer"
    if abs(time.time() - moment) > TIMESTAMP_TOLERANCE_SECONDS:
        return "webhook-timestamp is outside the tolerance"
    offered = set()
    for entry in signature.split():
        version, _, value = entry.partition(",")
        if version == "v1":
            with contextlib.suppress(binascii.Error):
                offered.add(base64.b64decode(value, validate=True))
    for secret in secrets:
        try:
            expected = base64.b64decode(sign(webhook_id, moment, body, [secret]).split(",", 1)[1])
        except InvalidWebhookSecretError:
            continue
        if any(hmac.compare_digest(expected, candidate) for candidate in offered):
            return None
    return "no matching signature"


class _ConnectionsServer(ThreadingHTTPServer):
    """Knows its open connections: an HTTP/1.1 server keeps them past `server_close()`."""

    daemon_threads = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, address = super().get_request()
        with self._open_lock:
            self._open.add(connection)
        return connection, address

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        with self._open_lock:
            open_connections = list(self._open)
        for connection in open_connections:
            with contextlib.suppress(OSError):  # its handler may be closing it right now
                connection.shutdown(socket.SHUT_RDWR)


class DemoReceiver:
    """A threaded HTTP server on loopback; `on_webhook` is called for every POST it answers."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        on_webhook: Callable[[ReceivedWebhook], None] | None = None,
        answer_after_seconds: float = 0.0,
    ) -> None:
        """`answer_after_seconds`: how long every POST waits before its answer, as a receiver
        across the internet would (benches price the functions' wait with it)."""
        self.host = host
        self.port = port
        self._on_webhook = on_webhook
        self._answer_after = answer_after_seconds
        self._endpoints: dict[str, _Endpoint] = {}
        # TCP connections accepted since start (benches price a TLS handshake per connection).
        self._connections = 0
        self._lock = threading.Condition()
        self._server: _ConnectionsServer | None = None
        self._thread: threading.Thread | None = None

    # -- endpoints ---------------------------------------------------------------------------

    def add_endpoint(self, name: str, secret: str | None = None) -> str:
        """Serve /<name>, verifying with `secret` (more can be trusted later); returns its URL."""
        with self._lock:
            self._endpoints[name] = _Endpoint(name, [secret] if secret else [])
        return self.url(name)

    def trust(self, name: str, secret: str) -> None:
        """Also accept signatures made with `secret` (a new or rotated subscription secret)."""
        with self._lock:
            self._endpoints[name].secrets.append(secret)

    def set_status(self, name: str, status: int) -> None:
        """Answer every later POST to /<name> with `status` (a failing receiver, then fixed)."""
        with self._lock:
            self._endpoints[name].status = status

    def url(self, name: str) -> str:
        return f"http://{self.host}:{self.port}/{name}"

    # -- what arrived ------------------------------------------------------------------------

    def received(self, name: str | None = None) -> list[ReceivedWebhook]:
        with self._lock:
            endpoints = [self._endpoints[name]] if name else list(self._endpoints.values())
            return [webhook for endpoint in endpoints for webhook in endpoint.received]

    def connections(self) -> int:
        """How many TCP connections the server has accepted: one per POST while senders close
        them (`Connection: close`), fewer when they keep them alive."""
        with self._lock:
            return self._connections

    def wait_for(
        self, condition: Callable[[DemoReceiver], bool], timeout: float, *, what: str = ""
    ) -> None:
        """Block until `condition(self)` holds (checked on every POST and every 0.5 s)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not condition(self):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"the receiver did not see {what or 'it'} in {timeout} s")
                self._lock.wait(min(remaining, 0.5))

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> DemoReceiver:
        self._listen()
        return self

    def go_down(self) -> None:
        """Stop listening and drop the open connections, as a receiver that dies does: senders
        (also those keeping connections alive) get connection refused until `come_back()`."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
            server.drop_connections()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def come_back(self) -> None:
        """Listen again on the same port."""
        if self._server is None:
            self._listen()

    def stop(self) -> None:
        self.go_down()

    def __enter__(self) -> DemoReceiver:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _listen(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:  # once per accepted connection, before its first request
                super().setup()
                with receiver._lock:
                    receiver._connections += 1

            def do_POST(self) -> None:  # http.server's naming
                receiver._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # every POST is reported through on_webhook instead

        server = _ConnectionsServer((self.host, self.port), Handler)
        self.port = int(server.server_address[1])
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="demo-receiver",
            daemon=True,
        )
        self._thread.start()

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("content-length") or 0)
        body = request.rfile.read(min(length, _MAX_BODY_BYTES))
        headers = {name.lower(): value for name, value in request.headers.items()}
        name = request.path.strip("/").split("?", 1)[0]
        with self._lock:
            endpoint = self._endpoints.get(name)
            secrets = list(endpoint.secrets) if endpoint else []
            status = endpoint.status if endpoint else 404
        problem = verify_webhook(body, headers, secrets) if endpoint else "no such endpoint"
        answered = status if problem is None else (status if status >= 400 else 401)
        webhook = ReceivedWebhook(
            endpoint=name,
            webhook_id=headers.get("webhook-id", ""),
            timestamp=headers.get("webhook-timestamp", ""),
            body=body,
            headers=headers,
            verified=problem is None,
            problem=problem,
            answered=answered,
            received_at=time.time(),
        )
        with self._lock:
            if endpoint is not None:
                endpoint.received.append(webhook)
            self._lock.notify_all()
        reply = b"" if answered < 300 else json.dumps({"error": problem or "failing"}).encode()
        if self._answer_after > 0:
            time.sleep(self._answer_after)
        request.send_response(answered)
        request.send_header("content-type", "application/json")
        request.send_header("content-length", str(len(reply)))
        request.end_headers()
        request.wfile.write(reply)
        if self._on_webhook is not None:
            with contextlib.suppress(Exception):
                self._on_webhook(webhook)
