"""The webhook HTTP client against real receivers on loopback, friendly and hostile.

Every receiver listens on 127.0.0.x; nothing here connects anywhere else. Names resolve through
an in-memory resolver (`hook.test` -> 127.0.0.1), and TLS uses a throwaway CA made per session,
so the client runs with `allow_private_networks=True` except where a test says otherwise.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from jobhooks.delivery.http_client import (
    MAX_TOTAL_TIMEOUT_SECONDS,
    RESPONSE_EXCERPT_BYTES,
    WebhookClient,
    make_webhook_client,
    parse_retry_after,
)
from jobhooks.delivery.keepalive import IdleConnections
from jobhooks.delivery.model import PostError, PostResult
from jobhooks.delivery.network_policy import NetworkPolicy

pytestmark = pytest.mark.timeout(30)

BODY = b'{"type":"job.completed","data":{"jobId":"j_1"}}'
SIGNED_HEADERS = {
    "content-type": "application/json",
    "webhook-id": "msg_1",
    "webhook-timestamp": "1750000000",
    "webhook-signature": "v1,c2lnbmF0dXJl",
}


# --- names ---------------------------------------------------------------------------------


class FakeResolver:
    """Answers from a script: `answers[name]` is used for the first call, the last entry for
    every later call, so a test can make a name change its answer (DNS rebinding)."""

    def __init__(self, answers: dict[str, list[Sequence[str]]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def __call__(self, host: str) -> Sequence[str]:
        self.calls.append(host)
        if host not in self.answers:
            raise OSError(f"{host} does not resolve")
        script = self.answers[host]
        return script[min(self.calls.count(host), len(script)) - 1]


def resolving(host: str = "hook.test", *addresses: str) -> FakeResolver:
    return FakeResolver({host: [list(addresses or ["127.0.0.1"])]})


# --- certificates --------------------------------------------------------------------------


@dataclass(frozen=True)
class Certificates:
    ca_bundle: Path
    servers: dict[str, ssl.SSLContext]  # host name -> server context presenting its cert


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    directory = tmp_path_factory.mktemp("tls")
    now = datetime.now(UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("jobhooks test CA"))
        .issuer_name(_name("jobhooks test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_bundle = directory / "ca.pem"
    ca_bundle.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))

    servers: dict[str, ssl.SSLContext] = {}
    for host in ("hook.test", "other.test"):
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(host))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
            )
            .sign(ca_key, hashes.SHA256())
        )
        cert_file, key_file = directory / f"{host}.pem", directory / f"{host}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        servers[host] = context
    return Certificates(ca_bundle, servers)


# --- receivers -----------------------------------------------------------------------------


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]  # lower-case names
    body: bytes


Behaviour = Callable[["Receiver", socket.socket], None]


@dataclass
class Receiver:
    """A TCP (optionally TLS) server on loopback that runs `behaviour` on each connection."""

    behaviour: Behaviour
    tls: ssl.SSLContext | None = None
    host: str = "127.0.0.1"
    port: int = 0
    connections: int = 0
    requests: list[Request] = field(default_factory=list)
    bytes_sent: int = 0
    stopped: threading.Event = field(default_factory=threading.Event)
    handlers: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Receiver:
        self._listener = socket.create_server((self.host, self.port))
        self._listener.settimeout(0.05)
        self.port = self._listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()
        return self

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            handler = threading.Thread(target=self._handle, args=(connection,), daemon=True)
            self.handlers.append(handler)
            handler.start()

    def _handle(self, connection: socket.socket) -> None:
        connection.settimeout(10)
        with contextlib.suppress(OSError), contextlib.ExitStack() as cleanup:
            cleanup.callback(connection.close)
            if self.tls is not None:
                connection = self.tls.wrap_socket(connection, server_side=True)
                cleanup.callback(connection.close)
            self.behaviour(self, connection)

    def read_request(self, connection: socket.socket) -> Request:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = connection.recv(65536)
            if not chunk:
                raise ConnectionError("the client closed before sending a request")
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, target, _ = request_line.split(" ")
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        while len(body) < int(headers.get("content-length", "0")):
            body += connection.recv(65536)
        request = Request(method, target, headers, body)
        self.requests.append(request)
        return request

    def send(self, connection: socket.socket, data: bytes) -> None:
        connection.sendall(data)
        self.bytes_sent += len(data)

    def finish(self, timeout: float = 5.0) -> None:
        """Wait for the handlers to end (they end when the client hangs up)."""
        for handler in list(self.handlers):
            handler.join(timeout)

    def stop(self) -> None:
        self.stopped.set()
        self._listener.close()
        self.finish(1.0)


@pytest.fixture
def receivers() -> Iterator[Callable[..., Receiver]]:
    started: list[Receiver] = []

    def start(behaviour: Behaviour, **options: object) -> Receiver:
        receiver = Receiver(behaviour, **options).start()  # type: ignore[arg-type]
        started.append(receiver)
        return receiver

    yield start
    for receiver in started:
        receiver.stop()


def response(
    status: int = 200, headers: Sequence[tuple[str, str]] = (), body: bytes = b"ok"
) -> bytes:
    reason = {200: "OK", 302: "Found", 429: "Too Many Requests", 503: "Unavailable"}.get(
        status, "X"
    )
    lines = [f"HTTP/1.1 {status} {reason}", f"Content-Length: {len(body)}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def answer(
    status: int = 200, headers: Sequence[tuple[str, str]] = (), body: bytes = b"ok"
) -> Behaviour:
    def behaviour(receiver: Receiver, connection: socket.socket) -> None:
        receiver.read_request(connection)
        receiver.send(connection, response(status, headers, body))

    return behaviour


def hang(receiver: Receiver, connection: socket.socket) -> None:
    receiver.stopped.wait()


def read_then_hang(receiver: Receiver, connection: socket.socket) -> None:
    receiver.read_request(connection)
    receiver.stopped.wait()


def trickle_body(receiver: Receiver, connection: socket.socket) -> None:
    receiver.read_request(connection)
    receiver.send(connection, b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n")
    while not receiver.stopped.wait(0.2):
        receiver.send(connection, b"x")


def trickle_headers(receiver: Receiver, connection: socket.socket) -> None:
    receiver.read_request(connection)
    receiver.send(connection, b"HTTP/1.1 200 OK\r\nX-Slow: ")
    while not receiver.stopped.wait(0.2):
        receiver.send(connection, b"x")


HUGE_BODY_BYTES = 50 * 1024 * 1024


def stream_huge_body(receiver: Receiver, connection: socket.socket) -> None:
    receiver.read_request(connection)
    receiver.send(
        connection, f"HTTP/1.1 200 OK\r\nContent-Length: {HUGE_BODY_BYTES}\r\n\r\n".encode()
    )
    chunk = b"0123456789abcdef" * 4096  # generated lazily: 64 KiB at a time
    while receiver.bytes_sent < HUGE_BODY_BYTES:
        receiver.send(connection, chunk)


def hang_up_after_request(receiver: Receiver, connection: socket.socket) -> None:
    receiver.read_request(connection)


# --- clients -------------------------------------------------------------------------------


def make_client(
    certificates: Certificates,
    resolver: FakeResolver,
    *,
    allow_private_networks: bool = True,
    trust_test_ca: bool = True,
    connect_timeout: float = 2.0,
    total_timeout: float = 5.0,
) -> WebhookClient:
    return WebhookClient(
        NetworkPolicy(allow_private_networks=allow_private_networks, resolver=resolver),
        connect_timeout=connect_timeout,
        total_timeout=total_timeout,
        ca_bundle=certificates.ca_bundle if trust_test_ca else None,
    )


def timed_post(client: WebhookClient, url: str) -> tuple[PostResult, float]:
    started = time.monotonic()
    result = client.post(url, BODY, SIGNED_HEADERS)
    return result, time.monotonic() - started


def tls_receiver(
    receivers: Callable[..., Receiver],
    certificates: Certificates,
    behaviour: Behaviour,
    **kw: object,
) -> Receiver:
    return receivers(behaviour, tls=certificates.servers["hook.test"], **kw)


# --- TLS, Host and what is sent --------------------------------------------------------------


def test_posts_over_verified_tls_to_the_checked_address_with_the_urls_host(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, answer(200, body=b'{"received":true}'))
    client = make_client(certificates, resolving("hook.test", "127.0.0.1"))

    result = client.post(
        f"https://hook.test:{receiver.port}/hooks/fetcher?tenant=acme",
        BODY,
        {**SIGNED_HEADERS, "Host": "evil.test", "Transfer-Encoding": "chunked"},
    )

    assert result.status_code == 200
    assert result.succeeded
    assert (result.error, result.detail) == (None, None)
    assert result.response_excerpt == '{"received":true}'
    assert result.address == "127.0.0.1"
    assert result.latency_ms >= 0
    [request] = receiver.requests
    assert (request.method, request.target) == ("POST", "/hooks/fetcher?tenant=acme")
    assert request.headers["host"] == f"hook.test:{receiver.port}"
    assert request.body == BODY
    assert request.headers["content-length"] == str(len(BODY))
    assert "transfer-encoding" not in request.headers
    assert request.headers["accept-encoding"] == "identity"
    assert request.headers["user-agent"].startswith("jobhooks/")
    for name, value in SIGNED_HEADERS.items():
        assert request.headers[name] == value


def test_sends_a_path_that_looks_like_an_authority_to_the_checked_receiver(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, answer(200))
    client = make_client(certificates, resolving())

    result = client.post(f"https://hook.test:{receiver.port}//other.test/x", BODY, {})

    assert result.status_code == 200
    [request] = receiver.requests
    assert request.target == "//other.test/x"
    assert request.headers["host"] == f"hook.test:{receiver.port}"


def test_refuses_certificate_for_another_name(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = receivers(answer(200), tls=certificates.servers["other.test"])
    client = make_client(certificates, resolving("hook.test", "127.0.0.1"))

    result = client.post(f"https://hook.test:{receiver.port}/", BODY, SIGNED_HEADERS)

    assert result.status_code is None
    assert result.error is PostError.TLS_ERROR
    assert result.detail is not None and "hook.test" in result.detail
    assert receiver.requests == []


def test_refuses_certificate_from_an_untrusted_ca(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, answer(200))
    client = make_client(certificates, resolving(), trust_test_ca=False)

    result = client.post(f"https://hook.test:{receiver.port}/", BODY, SIGNED_HEADERS)

    assert result.error is PostError.TLS_ERROR
    assert result.detail is not None and "certificate verify failed" in result.detail
    assert receiver.requests == []


# --- DNS rebinding -------------------------------------------------------------------------


def test_connects_only_to_the_address_it_checked(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    # The public address of a real attack is played by 127.0.0.1 (development mode admits it),
    # the rebinding answer by 127.0.0.2, where a trap listens on the same port.
    checked = tls_receiver(receivers, certificates, answer(200))
    trap = tls_receiver(receivers, certificates, answer(200), host="127.0.0.2", port=checked.port)
    resolver = FakeResolver({"hook.test": [["127.0.0.1"], ["127.0.0.2"]]})
    client = make_client(certificates, resolver)

    result = client.post(f"https://hook.test:{checked.port}/", BODY, SIGNED_HEADERS)

    assert result.status_code == 200
    assert result.address == "127.0.0.1"
    assert resolver.calls == ["hook.test"]
    assert (checked.connections, len(checked.requests)) == (1, 1)
    assert trap.connections == 0

    # The next attempt checks the name again (and only once again).
    client.post(f"https://hook.test:{checked.port}/", BODY, SIGNED_HEADERS)
    assert resolver.calls == ["hook.test", "hook.test"]
    assert trap.connections == 1


def test_refuses_a_name_whose_only_answer_is_private_without_connecting(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, answer(200))
    resolver = resolving("hook.test", "127.0.0.1")
    client = make_client(certificates, resolver, allow_private_networks=False)

    result = client.post(f"https://hook.test:{receiver.port}/", BODY, SIGNED_HEADERS)

    assert result.error is PostError.ADDRESS_NOT_PUBLIC
    assert result.detail is not None and "127.0.0.1, a loopback address" in result.detail
    assert result.address is None
    assert resolver.calls == ["hook.test"]
    assert receiver.connections == 0


def test_falls_back_to_the_next_checked_address_when_one_cannot_be_reached(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, answer(204, body=b""))
    client = make_client(certificates, resolving("hook.test", "127.0.0.2", "127.0.0.1"))

    result = client.post(f"https://hook.test:{receiver.port}/", BODY, SIGNED_HEADERS)

    assert result.status_code == 204
    assert result.address == "127.0.0.1"


# --- development setting off -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("http://127.0.0.1:{port}/", PostError.URL_NOT_ALLOWED),
        ("https://127.0.0.1:{port}/", PostError.ADDRESS_NOT_PUBLIC),
        ("https://localhost:{port}/", PostError.ADDRESS_NOT_PUBLIC),
        ("https://nowhere.test:{port}/", PostError.DNS_ERROR),
    ],
)
def test_refuses_local_receiver_without_connecting_when_development_setting_is_off(
    receivers: Callable[..., Receiver], url: str, error: PostError
) -> None:
    receiver = receivers(answer(200))
    client = WebhookClient(NetworkPolicy(resolver=FakeResolver({"localhost": [["127.0.0.1"]]})))

    result = client.post(url.format(port=receiver.port), BODY, SIGNED_HEADERS)

    assert result.status_code is None
    assert result.error is error
    assert result.detail
    assert receiver.connections == 0


def test_the_default_client_refuses_plain_http_and_loopback() -> None:
    client = WebhookClient()
    assert client.policy.allow_private_networks is False
    assert client.post("http://example.com/", BODY, {}).error is PostError.URL_NOT_ALLOWED
    assert client.post("https://127.0.0.1/", BODY, {}).error is PostError.ADDRESS_NOT_PUBLIC


# --- redirects and retries -------------------------------------------------------------------


def test_returns_a_redirect_without_following_it(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    target = receivers(answer(200))
    redirecting = tls_receiver(
        receivers,
        certificates,
        answer(302, headers=[("Location", f"http://127.0.0.1:{target.port}/stolen")]),
    )
    client = make_client(certificates, resolving())

    result = client.post(f"https://hook.test:{redirecting.port}/", BODY, SIGNED_HEADERS)

    assert result.status_code == 302
    assert not result.succeeded
    assert result.error is None
    time.sleep(0.1)  # a followed redirect would have connected by now
    assert target.connections == 0


def test_does_not_retry_when_the_receiver_hangs_up(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, hang_up_after_request)
    client = make_client(certificates, resolving())

    result = client.post(f"https://hook.test:{receiver.port}/", BODY, SIGNED_HEADERS)

    assert result.status_code is None
    assert result.error is PostError.PROTOCOL_ERROR
    assert receiver.connections == 1
    assert len(receiver.requests) == 1


def test_reports_a_refused_connection(certificates: Certificates) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        free_port = probe.getsockname()[1]
    client = make_client(certificates, resolving())

    result = client.post(f"https://hook.test:{free_port}/", BODY, SIGNED_HEADERS)

    assert result.error is PostError.CONNECT_ERROR
    assert result.detail is not None and f"127.0.0.1 port {free_port}" in result.detail
    assert result.address == "127.0.0.1"


# --- time and size bounds ----------------------------------------------------------------------


def test_cuts_off_a_receiver_that_never_completes_the_tls_handshake(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = receivers(hang)  # accepts the TCP connection, then says nothing at all
    client = make_client(certificates, resolving(), connect_timeout=0.5, total_timeout=1.0)

    result, elapsed = timed_post(client, f"https://hook.test:{receiver.port}/")

    assert result.error is PostError.TIMEOUT
    assert 0.4 <= elapsed < 1.5


def test_cuts_off_a_receiver_that_accepts_the_request_and_never_answers(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, read_then_hang)
    client = make_client(certificates, resolving(), connect_timeout=0.5, total_timeout=1.0)

    result, elapsed = timed_post(client, f"https://hook.test:{receiver.port}/")

    assert result.error is PostError.TIMEOUT
    assert len(receiver.requests) == 1
    assert 0.9 <= elapsed < 2.0


def test_cuts_off_a_receiver_that_trickles_its_headers_at_the_total_deadline(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, trickle_headers)
    client = make_client(certificates, resolving(), connect_timeout=0.5, total_timeout=1.0)

    result, elapsed = timed_post(client, f"https://hook.test:{receiver.port}/")

    assert result.status_code is None
    assert result.error is PostError.TIMEOUT
    assert "deadline" in (result.detail or "")
    assert 0.9 <= elapsed < 2.0


def test_cuts_off_a_receiver_that_trickles_its_body_at_the_total_deadline(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, trickle_body)
    client = make_client(certificates, resolving(), connect_timeout=0.5, total_timeout=1.0)

    result, elapsed = timed_post(client, f"https://hook.test:{receiver.port}/")

    # The receiver did answer 200; the slow body only shortens the excerpt.
    assert result.status_code == 200
    assert 0 < len(result.response_excerpt) <= 10
    assert set(result.response_excerpt) == {"x"}
    assert 0.9 <= elapsed < 2.0


def test_cuts_off_the_same_trickle_over_plain_http(receivers: Callable[..., Receiver]) -> None:
    receiver = receivers(trickle_headers)
    client = WebhookClient(
        NetworkPolicy(allow_private_networks=True), connect_timeout=0.5, total_timeout=1.0
    )

    result, elapsed = timed_post(client, f"http://127.0.0.1:{receiver.port}/")

    assert result.error is PostError.TIMEOUT
    assert 0.9 <= elapsed < 2.0


def test_reads_at_most_the_excerpt_of_a_huge_body(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, stream_huge_body)
    client = make_client(certificates, resolving())

    result, elapsed = timed_post(client, f"https://hook.test:{receiver.port}/")

    assert result.status_code == 200
    assert result.response_excerpt == ("0123456789abcdef" * 256)
    assert len(result.response_excerpt.encode()) == RESPONSE_EXCERPT_BYTES
    assert elapsed < 2.0
    receiver.finish()
    assert receiver.bytes_sent < HUGE_BODY_BYTES // 2


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("é".encode() * 3000, "é" * 2048),
        (b"\xff" * 5000, "\ufffd" * (RESPONSE_EXCERPT_BYTES // 3)),
        (b"ok \xe2\x82", "ok \ufffd"),
    ],
)
def test_keeps_the_excerpt_within_the_cap_as_utf8(
    receivers: Callable[..., Receiver], certificates: Certificates, body: bytes, expected: str
) -> None:
    receiver = tls_receiver(receivers, certificates, answer(500, body=body))
    client = make_client(certificates, resolving())

    result = client.post(f"https://hook.test:{receiver.port}/", BODY, SIGNED_HEADERS)

    assert result.status_code == 500
    assert result.response_excerpt == expected
    assert len(result.response_excerpt.encode()) <= RESPONSE_EXCERPT_BYTES


@pytest.mark.parametrize(
    ("total_timeout", "connect_timeout"),
    [(0, 1), (MAX_TOTAL_TIMEOUT_SECONDS + 1, 1), (5, 6), (5, 0)],
)
def test_refuses_timeouts_outside_the_bounds(total_timeout: float, connect_timeout: float) -> None:
    with pytest.raises(ValueError):
        WebhookClient(total_timeout=total_timeout, connect_timeout=connect_timeout)


# --- Retry-After -------------------------------------------------------------------------------


def test_reports_retry_after_in_seconds(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, answer(429, headers=[("Retry-After", "120")]))
    client = make_client(certificates, resolving())

    result = client.post(f"https://hook.test:{receiver.port}/", BODY, SIGNED_HEADERS)

    assert (result.status_code, result.retry_after_seconds) == (429, 120)


def test_reports_retry_after_given_as_an_http_date(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    receiver = tls_receiver(receivers, certificates, answer(503, headers=[("Retry-After", later)]))
    client = make_client(certificates, resolving())

    result = client.post(f"https://hook.test:{receiver.port}/", BODY, SIGNED_HEADERS)

    assert result.status_code == 503
    assert result.retry_after_seconds is not None
    assert 115 <= result.retry_after_seconds <= 121


NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("120", 120),
        (" 0 ", 0),
        ("Sun, 01 Mar 2026 12:02:00 GMT", 120),
        ("Sunday, 01-Mar-26 12:02:00 GMT", 120),  # obsolete RFC 850 form
        ("Sun Mar  1 12:02:00 2026", 120),  # asctime form
        ("Sun, 01 Mar 2026 11:00:00 GMT", 0),  # in the past: retry now
        (None, None),
        ("", None),
        ("-5", None),
        ("1.5", None),
        ("soon", None),
        ("99999999999", None),
        ("9" * 5000, None),
    ],
)
def test_parses_retry_after(value: str | None, seconds: int | None) -> None:
    assert parse_retry_after(value, now=NOW) == seconds


# --- kept-alive connections ------------------------------------------------------------------


def kept_response(
    status: int = 200, headers: Sequence[tuple[str, str]] = (), body: bytes = b"ok"
) -> bytes:
    """An answer that leaves the connection open (HTTP/1.1's default)."""
    reason = {200: "OK", 503: "Unavailable"}.get(status, "X")
    lines = [f"HTTP/1.1 {status} {reason}", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def keep_alive(*answers: bytes) -> Behaviour:
    """Answers request after request on one connection until the client hangs up; the last
    answer repeats. An answer's own `Connection: close` does not end the loop: the receiver
    waits for a next request the client must not send."""

    def behaviour(receiver: Receiver, connection: socket.socket) -> None:
        served = 0
        while True:
            receiver.read_request(connection)  # raises when the client hangs up
            receiver.send(connection, answers[min(served, len(answers) - 1)])
            served += 1

    return behaviour


def answer_then_close(receiver: Receiver, connection: socket.socket) -> None:
    """Keep-alive framing, then the receiver closes the idle connection anyway (its idle
    timeout, a restart)."""
    receiver.read_request(connection)
    receiver.send(connection, kept_response(200))


def answer_then_trickle(receiver: Receiver, connection: socket.socket) -> None:
    """Answers the first request, then trickles the headers of the second: only the total
    deadline's watchdog, not a socket timeout, ends that."""
    receiver.read_request(connection)
    receiver.send(connection, kept_response(200))
    trickle_headers(receiver, connection)


def post_twice(client: WebhookClient, url: str) -> tuple[PostResult, PostResult]:
    return client.post(url, BODY, SIGNED_HEADERS), client.post(url, BODY, SIGNED_HEADERS)


def test_reuses_the_connection_for_the_next_post_to_the_same_receiver(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, keep_alive(kept_response(200, body=b"a")))
    client = make_client(certificates, resolving())

    first, second = post_twice(client, f"https://hook.test:{receiver.port}/hook")

    assert (first.status_code, second.status_code) == (200, 200)
    assert (first.response_excerpt, second.response_excerpt) == ("a", "a")
    assert (receiver.connections, len(receiver.requests)) == (1, 2)
    for request in receiver.requests:
        assert "connection" not in request.headers
        assert request.body == BODY
        assert request.headers["host"] == f"hook.test:{receiver.port}"
    client.close()
    receiver.finish()
    assert all(not handler.is_alive() for handler in receiver.handlers)


def test_reuses_a_plain_http_connection_in_development_mode(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = receivers(keep_alive(kept_response(200)))
    client = make_client(certificates, resolving())

    first, second = post_twice(client, f"http://hook.test:{receiver.port}/")

    assert (first.status_code, second.status_code) == (200, 200)
    assert (receiver.connections, len(receiver.requests)) == (1, 2)


def test_never_reuses_a_connection_made_to_an_address_the_new_check_did_not_return(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    # The same name, port and TLS name: only the checked address differs between attempts.
    first_address = tls_receiver(receivers, certificates, keep_alive(kept_response(200)))
    second_address = tls_receiver(
        receivers,
        certificates,
        keep_alive(kept_response(200)),
        host="127.0.0.2",
        port=first_address.port,
    )
    resolver = FakeResolver({"hook.test": [["127.0.0.1"], ["127.0.0.2"]]})
    client = make_client(certificates, resolver)

    first, second = post_twice(client, f"https://hook.test:{first_address.port}/")

    assert (first.address, second.address) == ("127.0.0.1", "127.0.0.2")
    assert (first_address.connections, len(first_address.requests)) == (1, 1)
    assert (second_address.connections, len(second_address.requests)) == (1, 1)


def test_opens_a_new_connection_after_the_receiver_answers_connection_close(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    # `response()` says `Connection: close`; this receiver keeps the socket open regardless.
    receiver = tls_receiver(receivers, certificates, keep_alive(response(200)))
    client = make_client(certificates, resolving())

    first, second = post_twice(client, f"https://hook.test:{receiver.port}/")

    assert (first.status_code, second.status_code) == (200, 200)
    assert (receiver.connections, len(receiver.requests)) == (2, 2)


def test_closes_the_connection_after_an_answer_longer_than_the_excerpt(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    long_answer = kept_response(200, body=b"x" * (RESPONSE_EXCERPT_BYTES + 1))
    receiver = tls_receiver(receivers, certificates, keep_alive(long_answer))
    client = make_client(certificates, resolving())

    first, second = post_twice(client, f"https://hook.test:{receiver.port}/")

    assert first.response_excerpt == "x" * RESPONSE_EXCERPT_BYTES
    assert second.status_code == 200
    assert (receiver.connections, len(receiver.requests)) == (2, 2)


def test_reuses_the_connection_after_an_answer_of_exactly_the_excerpt_size(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    exact = kept_response(200, body=b"x" * RESPONSE_EXCERPT_BYTES)
    receiver = tls_receiver(receivers, certificates, keep_alive(exact))
    client = make_client(certificates, resolving())

    first, second = post_twice(client, f"https://hook.test:{receiver.port}/")

    assert first.response_excerpt == second.response_excerpt == "x" * RESPONSE_EXCERPT_BYTES
    assert (receiver.connections, len(receiver.requests)) == (1, 2)


def test_opens_a_new_connection_after_a_server_error(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(
        receivers, certificates, keep_alive(kept_response(503), kept_response(200))
    )
    client = make_client(certificates, resolving())

    first, second = post_twice(client, f"https://hook.test:{receiver.port}/")

    assert (first.status_code, second.status_code) == (503, 503)
    assert (receiver.connections, len(receiver.requests)) == (2, 2)


def test_posts_on_a_new_connection_when_the_receiver_closed_the_kept_one(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, answer_then_close)
    client = make_client(certificates, resolving())
    url = f"https://hook.test:{receiver.port}/"

    first = client.post(url, BODY, SIGNED_HEADERS)
    receiver.finish()  # the receiver has closed the connection the client kept
    second = client.post(url, BODY, SIGNED_HEADERS)

    assert (first.status_code, second.status_code) == (200, 200)
    assert (second.error, second.detail) == (None, None)
    assert (receiver.connections, len(receiver.requests)) == (2, 2)


def test_opens_a_new_connection_once_the_kept_one_was_idle_too_long(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, keep_alive(kept_response(200)))
    now = [1000.0]
    client = WebhookClient(
        NetworkPolicy(allow_private_networks=True, resolver=resolving()),
        connect_timeout=2.0,
        total_timeout=5.0,
        ca_bundle=certificates.ca_bundle,
        idle_connections=IdleConnections(idle_seconds=30.0, clock=lambda: now[0]),
    )
    url = f"https://hook.test:{receiver.port}/"

    client.post(url, BODY, SIGNED_HEADERS)
    now[0] += 29.9
    client.post(url, BODY, SIGNED_HEADERS)
    assert receiver.connections == 1
    now[0] += 30.0
    last = client.post(url, BODY, SIGNED_HEADERS)

    assert last.status_code == 200
    assert (receiver.connections, len(receiver.requests)) == (2, 3)


def test_cuts_off_a_kept_connection_at_the_total_deadline(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, answer_then_trickle)
    client = make_client(certificates, resolving(), connect_timeout=0.5, total_timeout=1.0)
    url = f"https://hook.test:{receiver.port}/"

    first = client.post(url, BODY, SIGNED_HEADERS)
    second, elapsed = timed_post(client, url)

    assert first.status_code == 200
    assert second.error is PostError.TIMEOUT
    assert 0.9 <= elapsed < 2.0
    assert (receiver.connections, len(receiver.requests)) == (1, 2)
    assert len(client.idle_connections) == 0


def answer_then_read_and_hang_up(receiver: Receiver, connection: socket.socket) -> None:
    """Answers the first request, reads the second and closes without an answer: from the
    client's side, a kept connection that broke after the request went out."""
    receiver.read_request(connection)
    receiver.send(connection, kept_response(200))
    receiver.read_request(connection)


def test_does_not_post_again_when_a_kept_connection_breaks_after_the_request(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    receiver = tls_receiver(receivers, certificates, answer_then_read_and_hang_up)
    client = make_client(certificates, resolving())
    url = f"https://hook.test:{receiver.port}/"

    first, second = post_twice(client, url)

    assert first.status_code == 200
    # The receiver may have acted on it: the attempt fails (and is retried on the schedule
    # with the same webhook-id), it is not sent again on a new connection within the attempt.
    assert second.status_code is None
    assert second.error is PostError.PROTOCOL_ERROR
    assert (receiver.connections, len(receiver.requests)) == (1, 2)
    third = client.post(url, BODY, SIGNED_HEADERS)
    assert third.status_code == 200
    assert (receiver.connections, len(receiver.requests)) == (2, 3)


def keep_alive_in_step(step: threading.Barrier) -> Behaviour:
    """Like `keep_alive`, but answers only when `step.parties` requests are in: the POSTs of a
    round are in flight at the same time, as a deliver batch's are."""

    def behaviour(receiver: Receiver, connection: socket.socket) -> None:
        while True:
            receiver.read_request(connection)
            step.wait(5)
            receiver.send(connection, kept_response(200))

    return behaviour


@pytest.mark.parametrize(("per_receiver", "connections"), [(2, 2), (1, 3)])
def test_keeps_as_many_connections_per_receiver_as_it_is_told(
    receivers: Callable[..., Receiver], per_receiver: int, connections: int
) -> None:
    receiver = receivers(keep_alive_in_step(threading.Barrier(2)))
    client = make_webhook_client(
        allow_private_networks=True,
        resolver=resolving(),
        keep_alive_per_receiver=per_receiver,
    )
    url = f"http://hook.test:{receiver.port}/"

    with ThreadPoolExecutor(max_workers=2) as workers:
        for _ in range(2):  # two rounds of two POSTs at once
            results = list(workers.map(lambda _: client.post(url, BODY, SIGNED_HEADERS), [1, 2]))
            assert [result.status_code for result in results] == [200, 200]

    assert (receiver.connections, len(receiver.requests)) == (connections, 4)


def test_never_reads_bytes_sent_after_an_answer_as_the_next_answer(
    receivers: Callable[..., Receiver], certificates: Certificates
) -> None:
    # A receiver (or a proxy in front of it) that sends a second, unasked answer after the first:
    # the next POST must get the answer to its own request, never the one queued before it.
    forged = kept_response(200, body=b"a") + kept_response(299, body=b"forged")
    receiver = tls_receiver(receivers, certificates, keep_alive(forged))
    client = make_client(certificates, resolving())

    first, second = post_twice(client, f"https://hook.test:{receiver.port}/")

    assert (first.status_code, first.response_excerpt) == (200, "a")
    assert (second.status_code, second.response_excerpt) == (200, "a")
    assert len(receiver.requests) == 2
