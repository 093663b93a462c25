"""How the CLI reaches the API: SigV4 for the deployed API, nothing for the local one, chosen by
configuration; error answers as one line. A recording server on 127.0.0.1 stands in for API
Gateway, and the signature is checked by recomputing it the way API Gateway does."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.integration.api_support import run_cli

ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


@dataclass
class FakeGateway:
    """Records requests; answers `status` with `body`."""

    status: int = 200
    body: Any = field(default_factory=lambda: {"subscriptions": [], "next_cursor": None})
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        gateway = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                gateway.requests.append(("GET", self.path, dict(self.headers.items())))
                payload = json.dumps(gateway.body).encode()
                self.send_response(gateway.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGateway]:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "JOBHOOKS_API_URL", "JOBHOOKS_API_AUTH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    gateway = FakeGateway()
    yield gateway
    gateway.stop()


def expected_signature(method: str, url: str, headers: dict[str, str]) -> str:
    """The signature API Gateway computes for the request it received."""
    lowered = {name.lower(): value for name, value in headers.items()}
    authorization = lowered["authorization"]
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    request = AWSRequest(method=method, url=url, headers={n: lowered[n] for n in signed})
    request.context["timestamp"] = lowered["x-amz-date"]
    signer = SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "execute-api", "eu-west-1")
    return signer.signature(
        signer.string_to_sign(request, signer.canonical_request(request)), request
    )


def test_sigv4_signs_every_request_for_execute_api(
    gateway: FakeGateway, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(
        capsys, "webhooks", "list", "--tenant", "acme corp", "--output", "json",
        "--endpoint", gateway.url, "--auth", "sigv4", "--region", "eu-west-1",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    [(method, path, headers)] = gateway.requests
    assert path == "/v1/subscriptions?limit=50&tenant_id=acme%20corp"
    authorization = headers["Authorization"]
    assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
    assert "/eu-west-1/execute-api/aws4_request" in authorization
    assert "host" in authorization.split("SignedHeaders=")[1]
    signature = authorization.split("Signature=")[1]
    assert signature == expected_signature(method, gateway.url + path, headers)


def test_sigv4_is_the_default_and_carries_the_session_token(
    gateway: FakeGateway, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-token-example")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("JOBHOOKS_API_URL", gateway.url)
    assert run_cli(capsys, "webhooks", "list", "--tenant", "acme").code == 0
    [(_, _, headers)] = gateway.requests
    assert headers["X-Amz-Security-Token"] == "session-token-example"
    assert "x-amz-security-token" in headers["Authorization"]


def test_auth_none_sends_no_signature(
    gateway: FakeGateway, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBHOOKS_API_URL", gateway.url)
    monkeypatch.setenv("JOBHOOKS_API_AUTH", "none")
    assert run_cli(capsys, "dlq", "list", "--output", "json").code == 0
    [(_, path, headers)] = gateway.requests
    assert path == "/v1/dlq?limit=10&queue=delivery"
    assert "Authorization" not in headers


def test_api_gateway_refusals_are_one_line(
    gateway: FakeGateway, capsys: pytest.CaptureFixture[str]
) -> None:
    gateway.status, gateway.body = 403, {"message": "Forbidden"}
    refused = run_cli(
        capsys, "webhooks", "list", "--tenant", "acme",
        "--endpoint", gateway.url, "--region", "eu-west-1",
    )  # fmt: skip
    assert refused.code == 1
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("jobhooks: http_403: Forbidden (check --auth")


def test_sigv4_without_credentials_or_region_is_a_usage_error(
    gateway: FakeGateway,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    no_region = run_cli(capsys, "webhooks", "list", "--tenant", "a", "--endpoint", gateway.url)
    assert no_region.code == 2
    assert "--region" in no_region.stderr
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    no_credentials = run_cli(
        capsys,
        "webhooks",
        "list",
        "--tenant",
        "a",
        "--endpoint",
        gateway.url,
        "--region",
        "eu-west-1",
    )
    assert no_credentials.code == 2
    assert "no AWS credentials" in no_credentials.stderr
    assert gateway.requests == []


EXECUTE_API_HOST = "abc123def4.execute-api.eu-west-1.amazonaws.com"


@pytest.fixture
def execute_api_host(gateway: FakeGateway, monkeypatch: pytest.MonkeyPatch) -> str:
    """The default host name of an API in eu-west-1, resolved to the recording gateway."""
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        return real_getaddrinfo("127.0.0.1" if host == EXECUTE_API_HOST else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return f"http://{EXECUTE_API_HOST}:{gateway.url.rsplit(':', 1)[1]}"


def credential_scope(headers: dict[str, str]) -> str:
    """`<date>/<region>/<service>/aws4_request` of the Authorization header."""
    return headers["Authorization"].split("Credential=")[1].split(",")[0].split("/", 1)[1]


def test_a_default_api_host_is_signed_for_its_own_region_whatever_the_profile_says(
    gateway: FakeGateway,
    execute_api_host: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The operator's profile works in us-east-1; the stack lives in eu-west-1. Signed for
    # us-east-1, API Gateway would refuse every request with 403.
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")

    result = run_cli(capsys, "webhooks", "list", "--tenant", "acme", "--endpoint", execute_api_host)

    assert result.code == 0, result.stderr
    [(method, path, headers)] = gateway.requests
    assert credential_scope(headers).endswith("/eu-west-1/execute-api/aws4_request")
    assert headers["Host"] == execute_api_host.removeprefix("http://")
    signature = headers["Authorization"].split("Signature=")[1]
    assert signature == expected_signature(method, execute_api_host + path, headers)


def test_region_contradicting_a_default_api_host_is_a_usage_error(
    gateway: FakeGateway, execute_api_host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(
        capsys, "webhooks", "list", "--tenant", "acme",
        "--endpoint", execute_api_host, "--region", "us-east-1",
    )  # fmt: skip

    assert result.code == 2
    assert "eu-west-1" in result.stderr and "us-east-1" in result.stderr
    assert gateway.requests == []


def test_a_custom_domain_is_signed_for_the_configured_region(
    gateway: FakeGateway, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 127.0.0.1 stands for a custom domain name: the host says nothing about the region.
    monkeypatch.setenv("AWS_REGION", "eu-west-1")

    assert run_cli(capsys, "webhooks", "list", "--tenant", "a", "--endpoint", gateway.url).code == 0

    [(_, _, headers)] = gateway.requests
    assert credential_scope(headers).endswith("/eu-west-1/execute-api/aws4_request")
