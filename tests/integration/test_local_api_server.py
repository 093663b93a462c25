"""The local API (`jobhooks dev`) answers local clients only: its own Host, no foreign Origin.

It has no authorization, so a web page must not drive it: through DNS rebinding (a page's own
name resolving to 127.0.0.1, so the browser lets it read the answers) or cross-site (a form or
`fetch` that POSTs to 127.0.0.1, e.g. `/test` to probe the developer's LAN). Requests go over a
real socket to the server in front of the real handler and moto's server (`stack`).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from jobhooks_tools.local.api_server import ApiServer, serve_api
from jobhooks_tools.local.template import LocalResources

from tests.integration.api_support import local_api, run_cli

CREATE = b'{"tenant_id": "acme", "url": "https://hooks.example.com/in"}'


@dataclass(frozen=True)
class RawAnswer:
    status: int
    headers: dict[str, str]
    body: bytes
    closed: bool  # the server closed the connection after answering

    @property
    def error(self) -> dict[str, Any]:
        document = json.loads(self.body)
        assert set(document) == {"error"}, document
        error = document["error"]
        assert isinstance(error, dict)
        return error


def send(
    server: ApiServer,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes = b"",
    *,
    trailing: bytes = b"",
) -> RawAnswer:
    """One request written by hand (so Host is whatever the test says), then `trailing` bytes."""
    port = int(server.url.rsplit(":", 1)[1])
    lines = [f"{method} {path} HTTP/1.1"] + [f"{name}: {value}" for name, value in headers.items()]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(head + body + trailing)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(65536)
            assert chunk, f"connection closed before an answer: {received!r}"
            received += chunk
        head_bytes, _, rest = received.partition(b"\r\n\r\n")
        status_line, *header_lines = head_bytes.decode("latin-1").split("\r\n")
        answer_headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in header_lines)
        }
        length = int(answer_headers.get("content-length", "0"))
        while len(rest) < length:
            chunk = connection.recv(65536)
            assert chunk, "connection closed mid-answer"
            rest += chunk
        extra = rest[length:]
        closed = False
        if "close" in answer_headers.get("connection", "").lower():
            # Whatever follows the refused request is never read as another request.
            while chunk := connection.recv(65536):
                extra += chunk
            closed = True
        assert extra == b"", f"more than one answer: {extra[:200]!r}"
    return RawAnswer(int(status_line.split()[1]), answer_headers, rest[:length], closed)


@pytest.fixture
def server(stack: LocalResources, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    with local_api(monkeypatch) as server:
        yield server


def own(server: ApiServer, name: str = "127.0.0.1") -> str:
    return f"{name}:{server.url.rsplit(':', 1)[1]}"


def subscriptions(server: ApiServer) -> list[Any]:
    listed = send(server, "GET", "/v1/subscriptions?tenant_id=acme", {"Host": own(server)})
    assert listed.status == 200, listed.body
    return list(json.loads(listed.body)["subscriptions"])


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{port}",  # DNS rebinding: the page's own name, now resolving to 127.0.0.1
        "evil.example",
        "127.0.0.1:1",  # another local port: another local web server's pages
        "localhost:1",
        "127.0.0.1.:{port}",
        "[::1]:{port}",  # not where this server listens (IPv4 only)
        "10.0.0.5:{port}",
        "",
    ],
)
def test_refuses_a_host_other_than_its_own(server: ApiServer, host: str) -> None:
    port = server.url.rsplit(":", 1)[1]
    answer = send(
        server,
        "POST",
        "/v1/subscriptions",
        {"Host": host.format(port=port), "Content-Type": "application/json"},
        CREATE,
    )
    assert answer.status == 403, answer.body
    assert answer.error["code"] == "forbidden_host"
    assert "only answers local clients" in answer.error["message"]
    assert f"127.0.0.1:{port}" in answer.error["message"]
    assert answer.headers["content-type"] == "application/json"
    assert subscriptions(server) == []


def test_refuses_a_request_without_host_or_with_two(server: ApiServer) -> None:
    port = int(server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(b"GET /v1/dlq HTTP/1.0\r\n\r\n")
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    assert received.startswith(b"HTTP/1.0 403") or received.startswith(b"HTTP/1.1 403")
    assert b'"forbidden_host"' in received
    twice = send(
        server, "GET", "/v1/dlq", {"Host": own(server), "host": "evil.example"}
    )  # fmt: skip
    assert (twice.status, twice.error["code"]) == (403, "forbidden_host")


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",  # a cross-site form or fetch
        "https://evil.example",
        "http://evil.example:{port}",  # DNS rebinding, seen from the page
        "http://localhost:1",  # another local web server's pages
        "http://127.0.0.1:1",
        "https://127.0.0.1:{port}",
        "null",  # sandboxed frames, file:// pages
        "",
    ],
)
def test_refuses_an_origin_other_than_its_own(server: ApiServer, origin: str) -> None:
    port = server.url.rsplit(":", 1)[1]
    answer = send(
        server,
        "POST",
        "/v1/subscriptions",
        {
            "Host": own(server),
            "Origin": origin.format(port=port),
            "Content-Type": "application/json",
        },
        CREATE,
    )
    assert answer.status == 403, answer.body
    assert answer.error["code"] == "forbidden_origin"
    assert "only answers local clients" in answer.error["message"]
    assert subscriptions(server) == []


def test_refuses_a_cross_site_browser_request_that_carries_no_origin(server: ApiServer) -> None:
    """A browser's no-cors GET (an <img>, a prefetch) sends no Origin, but says where it is from."""
    for site in ("cross-site", "same-site"):
        answer = send(server, "GET", "/v1/dlq", {"Host": own(server), "Sec-Fetch-Site": site})
        assert (answer.status, answer.error["code"]) == (403, "forbidden_origin")


def test_refuses_a_cors_preflight_from_another_origin(server: ApiServer) -> None:
    answer = send(
        server,
        "OPTIONS",
        "/v1/subscriptions",
        {
            "Host": own(server),
            "Origin": "http://evil.example",
            "Access-Control-Request-Method": "POST",
        },
    )
    assert (answer.status, answer.error["code"]) == (403, "forbidden_origin")
    assert "access-control-allow-origin" not in answer.headers


def test_a_refusal_shows_in_the_activity_log() -> None:
    """`jobhooks dev` prints the access log as its `api` activity lines."""
    lines: list[str] = []
    with serve_api(access_log=lines.append) as server:
        answer = send(server, "GET", "/v1/dlq", {"Host": "evil.example"})
    assert answer.status == 403
    assert lines == ["refused (forbidden_host)", '"GET /v1/dlq HTTP/1.1" 403 -']


def test_a_refused_request_closes_the_connection_unread(server: ApiServer) -> None:
    """The body of a refused request is not read, so it must not be read as the next request."""
    smuggled = (
        f"POST /v1/subscriptions HTTP/1.1\r\nHost: {own(server)}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(CREATE)}\r\n\r\n"
    ).encode() + CREATE
    answer = send(
        server,
        "POST",
        "/v1/subscriptions",
        {"Host": "evil.example", "Content-Type": "application/json"},
        smuggled,
    )
    assert answer.status == 403
    assert answer.closed
    assert subscriptions(server) == []


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LocalHost"])
def test_answers_its_own_host_with_or_without_its_own_origin(server: ApiServer, name: str) -> None:
    created = send(
        server,
        "POST",
        "/v1/subscriptions",
        {"Host": own(server, name), "Content-Type": "application/json"},
        CREATE,
    )
    assert created.status == 201, created.body
    for origin in (f"http://{own(server)}", f"http://{own(server, 'localhost')}"):
        listed = send(
            server,
            "GET",
            "/v1/subscriptions?tenant_id=acme",
            {"Host": own(server, name), "Origin": origin, "Sec-Fetch-Site": "same-origin"},
        )
        assert listed.status == 200, listed.body
    typed = send(server, "GET", "/v1/dlq", {"Host": own(server), "Sec-Fetch-Site": "none"})
    assert typed.status == 200, typed.body  # a URL typed into the address bar


def test_the_cli_still_reaches_the_local_api(
    stack: LocalResources, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with local_api(monkeypatch):
        added = run_cli(
            capsys, "webhooks", "add", "--tenant", "acme", "--url", "https://hooks.example.com/in"
        )
        assert added.code == 0, added.stderr
        listed = run_cli(capsys, "webhooks", "list", "--tenant", "acme", "--output", "json")
        assert listed.code == 0, listed.stderr
        assert [item["subscription_id"] for item in listed.json()["subscriptions"]] == [
            added.json()["subscription_id"]
        ]
