"""The webhook HTTP client: the only code in jobhooks that opens an outbound connection.

One `post()` is one delivery attempt, and it never raises for anything the network or the
receiver does; it returns a `PostResult`. Before connecting it asks the `NetworkPolicy` (on
every attempt, since DNS answers change), then connects to the address the policy checked,
never to a second resolution of the name (no DNS rebinding). TLS is verified against the URL's
host name, the `Host` header is the URL's, nothing is retried and redirects are never followed:
a 3xx comes back as a status like any other.

A warm client keeps the connection of an answer it read to its end for the next POST to the same
(scheme, host, port, checked address, TLS name): see `keepalive`. Only a connection opened to an
address this attempt's policy check returned is used; anything in doubt (a body longer than the
excerpt, an error, a 5xx, a deadline cut-off, `Connection: close`) closes the connection instead.

Time is bounded twice. The connect timeout bounds the TCP handshake; a total deadline (at most
15 s) bounds everything else. Socket timeouts are per read, so a receiver that trickles one byte
at a time would defeat them: a watchdog shuts the socket down when the deadline passes (which
also covers a slow TLS handshake or slow headers), and the body loop checks the deadline between
reads. At most `RESPONSE_EXCERPT_BYTES` of the body are read; a longer body closes the connection.

Nothing here logs above debug level, and never a URL path, query, header value or body.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from http.client import HTTPException
from http.client import HTTPResponse as RawHTTPResponse
from typing import Any, Final

from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ReadTimeoutError,
    SSLError,
)
from urllib3.response import BaseHTTPResponse
from urllib3.util import Timeout

from jobhooks import __version__
from jobhooks.delivery.exceptions import RefusalCode, RefusedUrlError
from jobhooks.delivery.keepalive import DEFAULT_MAX_PER_KEY, ConnectionKey, IdleConnections
from jobhooks.delivery.model import MAX_TOTAL_TIMEOUT_SECONDS, PostError, PostResult
from jobhooks.delivery.network_policy import (
    CheckedTarget,
    IPAddress,
    NetworkPolicy,
    Resolver,
    resolve_host,
)

DEFAULT_CONNECT_TIMEOUT_SECONDS: Final = 5.0
DEFAULT_TOTAL_TIMEOUT_SECONDS: Final = 15.0
RESPONSE_EXCERPT_BYTES: Final = 4096
USER_AGENT: Final = f"jobhooks/{__version__}"

# Headers this module owns: the caller cannot aim the request elsewhere or change its framing.
_OWNED_HEADERS: Final = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "accept-encoding"}
)

_log = logging.getLogger(__name__)


class WebhookClient:
    """POSTs webhooks within the network policy. One instance serves many attempts."""

    def __init__(
        self,
        policy: NetworkPolicy | None = None,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_SECONDS,
        total_timeout: float = DEFAULT_TOTAL_TIMEOUT_SECONDS,
        ca_bundle: str | os.PathLike[str] | None = None,
        idle_connections: IdleConnections[_GuardedPool] | None = None,
    ) -> None:
        """`ca_bundle` replaces the system CAs (tests serve certificates from their own CA);
        `idle_connections` holds the connections kept for reuse (its defaults otherwise)."""
        if not 0 < total_timeout <= MAX_TOTAL_TIMEOUT_SECONDS:
            raise ValueError(
                f"total_timeout must be more than 0 and at most {MAX_TOTAL_TIMEOUT_SECONDS} s"
            )
        if not 0 < connect_timeout <= total_timeout:
            raise ValueError("connect_timeout must be more than 0 and at most total_timeout")
        self.policy = policy if policy is not None else NetworkPolicy()
        self.connect_timeout = connect_timeout
        self.total_timeout = total_timeout
        self._ca_bundle = ca_bundle
        self._tls_context: ssl.SSLContext | None = None
        self._tls_lock = threading.Lock()
        self.idle_connections: IdleConnections[_GuardedPool] = (
            idle_connections if idle_connections is not None else IdleConnections()
        )

    def close(self) -> None:
        """Close the connections kept for reuse."""
        self.idle_connections.close()

    def post(
        self, url: str, body: bytes, headers: Mapping[str, str], *, timeout: float | None = None
    ) -> PostResult:
        """POST `body` to `url` once; the result says what happened.

        `timeout` shortens this one POST's total deadline (ingest's first attempts end with
        their phase); it never lengthens it beyond the client's `total_timeout`.
        """
        started = time.monotonic()
        seconds = self.total_timeout if timeout is None else min(timeout, self.total_timeout)
        deadline = _Deadline(max(0.0, seconds))
        try:
            return self._post(url, body, headers, deadline, started)
        finally:
            deadline.close()

    def _post(
        self,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        deadline: _Deadline,
        started: float,
    ) -> PostResult:
        def failed(error: PostError, detail: str, address: str | None = None) -> PostResult:
            result = PostResult(None, error, detail, _elapsed_ms(started), address=address)
            _log.debug("webhook POST not answered: %s (%s ms)", error.value, result.latency_ms)
            return result

        try:
            target = self.policy.check_url(url)
        except RefusedUrlError as refusal:
            return failed(
                _REFUSAL_ERRORS.get(refusal.code, PostError.URL_NOT_ALLOWED), str(refusal)
            )

        request_headers = self._request_headers(target, headers)
        outcome: tuple[PostError, str] = (PostError.TIMEOUT, _deadline_detail(deadline.seconds))
        address_text: str | None = None
        # Every address passed the policy; trying the next one when a connection cannot be
        # made at all is what browsers do for dual-stack hosts, and nothing was sent yet.
        for address in target.addresses:
            if deadline.expired:
                break
            address_text = str(address)
            key = ConnectionKey(
                target.scheme,
                target.host,
                target.port,
                address_text,
                target.host if target.scheme == "https" else None,
            )
            # The key holds the address this attempt's policy check returned: a connection
            # kept for another address (an older DNS answer) is never found here.
            pool = self.idle_connections.take(key) or self._pool(target, address)
            pool.deadline_slot.current = deadline
            try:
                response = pool.urlopen(
                    "POST",
                    target.request_target,
                    body=body,
                    headers=request_headers,
                    retries=False,
                    redirect=False,
                    assert_same_host=False,
                    preload_content=False,
                    decode_content=False,
                    timeout=Timeout(
                        connect=min(self.connect_timeout, deadline.remaining()),
                        read=deadline.remaining(),
                    ),
                )
            except (HTTPError, HTTPException, OSError) as error:
                pool.close()
                outcome = _classify(error, deadline, target, address, deadline.seconds)
                # NewConnectionError is a ConnectTimeoutError: either way no byte was sent.
                if isinstance(error, ConnectTimeoutError) and not deadline.cut_off:
                    continue
                return failed(*outcome, address=address_text)
            if deadline.cut_off:
                # The watchdog's shutdown reads as a clean end of stream, and http.client ends
                # the header block there: what looks like a response may be half of one.
                response.close()
                pool.close()
                return failed(PostError.TIMEOUT, _deadline_detail(deadline.seconds), address_text)
            read_to_end = False
            try:
                result, read_to_end = self._read_response(response, deadline, started, address_text)
            finally:
                if _may_reuse(response, read_to_end, deadline):
                    response.release_conn()
                    pool.deadline_slot.current = None
                    self.idle_connections.give_back(key, pool)
                else:
                    response.close()
                    pool.close()
            _log.debug("webhook POST answered %s (%s ms)", result.status_code, result.latency_ms)
            return result
        return failed(*outcome, address=address_text)

    def _pool(self, target: CheckedTarget, address: IPAddress) -> _GuardedPool:
        # One connection per pool and one pool per key: a pool is a single connection to an
        # address this attempt's policy check returned (it reconnects to that address only).
        if target.scheme == "http":
            return _GuardedHTTPConnectionPool(
                str(address), target.port, maxsize=1, retries=False, deadline=_DeadlineSlot()
            )
        return _GuardedHTTPSConnectionPool(
            str(address),
            target.port,
            maxsize=1,
            retries=False,
            ssl_context=self._tls(),
            server_hostname=target.host,
            assert_hostname=target.host,
            deadline=_DeadlineSlot(),
        )

    def _tls(self) -> ssl.SSLContext:
        # Made for the first https POST, not with the client: loading the CA store is the
        # largest part of building a client, and an invocation that POSTs nothing never needs it.
        if self._tls_context is None:
            with self._tls_lock:
                if self._tls_context is None:
                    context = ssl.create_default_context(cafile=self._ca_bundle)
                    context.minimum_version = ssl.TLSVersion.TLSv1_2
                    self._tls_context = context
        return self._tls_context

    @staticmethod
    def _request_headers(target: CheckedTarget, headers: Mapping[str, str]) -> dict[str, str]:
        request_headers = {
            name: value for name, value in headers.items() if name.lower() not in _OWNED_HEADERS
        }
        request_headers["Host"] = target.host_header
        # The body is never decompressed (a compression bomb's door), so ask for one that the
        # excerpt can show as text.
        request_headers["Accept-Encoding"] = "identity"
        if not any(name.lower() == "user-agent" for name in request_headers):
            request_headers["User-Agent"] = USER_AGENT
        return request_headers

    @staticmethod
    def _read_response(
        response: BaseHTTPResponse, deadline: _Deadline, started: float, address: str
    ) -> tuple[PostResult, bool]:
        """The result, and whether the body was read without an error (to its end or the cap)."""
        status = response.status
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        excerpt = bytearray()
        read_cleanly = False
        # The status is the receiver's answer; the body is only kept for the attempt log, so a
        # body cut short by the cap, the deadline or a broken connection does not undo it.
        try:
            while len(excerpt) < RESPONSE_EXCERPT_BYTES and not deadline.expired:
                chunk = response.read1(RESPONSE_EXCERPT_BYTES - len(excerpt), decode_content=False)
                if not chunk:
                    break
                excerpt += chunk
            read_cleanly = True
        except (HTTPError, HTTPException, OSError):
            pass
        result = PostResult(
            status_code=status,
            error=None,
            detail=None,
            latency_ms=_elapsed_ms(started),
            response_excerpt=_excerpt_text(bytes(excerpt)),
            retry_after_seconds=retry_after,
            address=address,
        )
        return result, read_cleanly


def _may_reuse(response: BaseHTTPResponse, read_cleanly: bool, deadline: _Deadline) -> bool:
    """Whether the connection can carry the next POST: the answer was read to its very end
    (so no byte of it is left for the next one to misread), it was not a 5xx (a struggling
    receiver or proxy gets a fresh start), nothing was cut off and the receiver (or HTTP/1.0)
    did not ask to close."""
    if not read_cleanly or deadline.cut_off or deadline.expired or response.status >= 500:
        return False
    # http.client's own response knows the framing: closed means Content-Length or the last
    # chunk was reached (not merely the excerpt cap), will_close covers `Connection: close`,
    # HTTP/1.0 without keep-alive and a body that ends only when the connection does.
    raw = getattr(response, "_original_response", None)
    return isinstance(raw, RawHTTPResponse) and raw.isclosed() and not raw.will_close


def make_webhook_client(
    *,
    allow_private_networks: bool = False,
    total_timeout: float = DEFAULT_TOTAL_TIMEOUT_SECONDS,
    resolver: Resolver = resolve_host,
    keep_alive_per_receiver: int = DEFAULT_MAX_PER_KEY,
) -> WebhookClient:
    """The client every webhook POST goes through, deliveries and test sends alike: the network
    policy of these settings, a connect timeout within the total, and up to
    `keep_alive_per_receiver` idle connections kept per receiver (as many as POST at once)."""
    return WebhookClient(
        NetworkPolicy(allow_private_networks=allow_private_networks, resolver=resolver),
        connect_timeout=min(DEFAULT_CONNECT_TIMEOUT_SECONDS, total_timeout),
        total_timeout=total_timeout,
        idle_connections=IdleConnections(max_per_key=keep_alive_per_receiver),
    )


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> int | None:
    """Seconds to wait from a `Retry-After` value (delta-seconds or HTTP-date), else `None`."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        # Ten digits is three centuries; anything longer is garbage, not a plan.
        return int(value) if len(value) <= 10 else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # HTTP dates are GMT even when written "-0000"
    delta = (when - (now or datetime.now(UTC))).total_seconds()
    return max(0, math.ceil(delta))


_REFUSAL_ERRORS: Final = {
    RefusalCode.URL_HOST_UNRESOLVABLE: PostError.DNS_ERROR,
    RefusalCode.ADDRESS_NOT_PUBLIC: PostError.ADDRESS_NOT_PUBLIC,
}


def _classify(
    error: BaseException,
    deadline: _Deadline,
    target: CheckedTarget,
    address: IPAddress,
    total_timeout: float,
) -> tuple[PostError, str]:
    where = f"{address} port {target.port}"
    if deadline.cut_off:
        return PostError.TIMEOUT, _deadline_detail(total_timeout)
    if isinstance(error, NewConnectionError):
        return PostError.CONNECT_ERROR, f"could not connect to {where}: {_os_reason(error)}"
    if isinstance(error, ConnectTimeoutError):
        return PostError.TIMEOUT, f"connecting to {where} timed out"
    if isinstance(error, ReadTimeoutError) or _caused_by(error, TimeoutError):
        return PostError.TIMEOUT, f"{where} did not answer in time"
    if isinstance(error, SSLError) or _caused_by(error, ssl.SSLError):
        return (
            PostError.TLS_ERROR,
            f"TLS with {target.host} at {where} failed: {_tls_reason(error)}",
        )
    return PostError.PROTOCOL_ERROR, f"{where} broke the HTTP exchange: {_os_reason(error)}"


def _caused_by(error: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = error
    for _ in range(8):  # urllib3 nests at most a few levels; a cycle must not loop forever
        if seen is None:
            return False
        if isinstance(seen, kind) or any(isinstance(arg, kind) for arg in seen.args):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _os_reason(error: BaseException) -> str:
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.strerror:
            return seen.strerror
        nested = next((arg for arg in seen.args if isinstance(arg, BaseException)), None)
        seen = nested or seen.__cause__
    return type(error).__name__


def _tls_reason(error: BaseException) -> str:
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return f"certificate verify failed ({seen.verify_message})"
        if isinstance(seen, ssl.SSLError) and seen.reason:
            return str(seen.reason).lower().replace("_", " ")
        if isinstance(seen, ssl.CertificateError):
            return str(seen)
        nested = next((arg for arg in seen.args if isinstance(arg, BaseException)), None)
        seen = nested or seen.__cause__
    return "handshake failed"


def _deadline_detail(total_timeout: float) -> str:
    return f"the receiver did not answer within the {total_timeout:g} s deadline"


def _excerpt_text(raw: bytes) -> str:
    # Replacement characters take three bytes each; trim so the stored excerpt stays in bounds.
    text = raw.decode("utf-8", errors="replace")
    return text.encode()[:RESPONSE_EXCERPT_BYTES].decode("utf-8", errors="ignore")


def _elapsed_ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


class _Deadline:
    """The attempt's total deadline, enforced on every socket it guards.

    `guard()` keeps a duplicate of each socket's descriptor (the TLS layer takes over the
    original, and a kept connection outlives the attempt) and a timer thread shuts them down
    when time is up, which wakes any read blocked on them. Closing the duplicates at the end of
    the attempt leaves the connection itself open.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._at = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer: threading.Timer | None = None
        self._closed = False
        self.cut_off = False

    def remaining(self) -> float:
        return max(0.0, self._at - time.monotonic())

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def guard(self, sock: socket.socket) -> None:
        with self._lock:
            if self._closed:
                return
            # fromfd duplicates the descriptor; an SSLSocket (a reused connection) has no dup().
            self._sockets.append(socket.fromfd(sock.fileno(), sock.family, sock.type))
            if self._timer is None:
                self._timer = threading.Timer(self.remaining(), self._cut_off)
                self._timer.daemon = True
                self._timer.start()

    def _cut_off(self) -> None:
        with self._lock:
            if self._closed:
                return
            self.cut_off = True
            for sock in self._sockets:
                with contextlib.suppress(OSError):  # the peer may have closed it already
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()


def _guarded(sock: socket.socket, deadline: _Deadline) -> socket.socket:
    try:
        deadline.guard(sock)
    except OSError:  # out of file descriptors for the duplicate
        sock.close()
        raise
    return sock


class _DeadlineSlot:
    """The deadline of the attempt that holds a pool: a kept connection serves several."""

    def __init__(self) -> None:
        self.current: _Deadline | None = None

    def guard(self, sock: socket.socket) -> socket.socket:
        if self.current is None:  # a pool is only used between take and give back
            sock.close()
            raise RuntimeError("a webhook connection was used outside an attempt")
        return _guarded(sock, self.current)

    def before_request(self, connection: HTTPConnection, *, kept: bool) -> None:
        """Ready a kept connection for this attempt, or drop it if the receiver closed it."""
        sock = connection.sock
        if sock is None or not kept:
            # A new connection: `_new_conn` guarded it. (A fresh TLS socket may well be
            # readable already: TLS 1.3 session tickets arrive right after the handshake.)
            return
        if not connection.is_connected:
            # The receiver closed it (or sent something unasked) while it was idle. Nothing of
            # this request was written, so a fresh connection to the same checked address is
            # the same attempt, not a retry.
            connection.close()
            return
        self.guard(sock)
        if self.current is not None:
            # The socket timeout of the last attempt would otherwise apply to this one's writes.
            sock.settimeout(max(self.current.remaining(), 0.001))


class _Guarded(HTTPConnection):
    """The deadline guard of a connection, for plain and TLS connections alike: every new
    socket is guarded right after the TCP handshake (before TLS, so a stalled handshake is cut
    off too), and every request, on a new or a kept socket, is held to the current POST's
    deadline."""

    def __init__(self, *args: Any, deadline: _DeadlineSlot, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = deadline
        self._kept = False  # whether this socket already carried a request

    def _new_conn(self) -> socket.socket:
        self._kept = False
        return self._deadline.guard(super()._new_conn())

    def request(self, *args: Any, **kwargs: Any) -> None:
        self._deadline.before_request(self, kept=self._kept)
        super().request(*args, **kwargs)
        self._kept = True  # after: a reconnect inside request() resets it in _new_conn


class _GuardedHTTPSConnection(_Guarded, HTTPSConnection):
    pass


class _GuardedHTTPConnection(_Guarded):
    pass


class _GuardedPool(HTTPConnectionPool):
    def __init__(self, *args: Any, deadline: _DeadlineSlot, **kwargs: Any) -> None:
        super().__init__(*args, deadline=deadline, **kwargs)
        self.deadline_slot = deadline


class _GuardedHTTPSConnectionPool(_GuardedPool, HTTPSConnectionPool):
    ConnectionCls = _GuardedHTTPSConnection


class _GuardedHTTPConnectionPool(_GuardedPool):
    ConnectionCls = _GuardedHTTPConnection
