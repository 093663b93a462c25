"""`jobhooks portal link|revoke` and `jobhooks grants add|list|remove` against the local API
server, which routes and authorizes requests as template.yaml's HttpApi does."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from jobhooks_tools.local.api_server import ApiServer, load_api_module, serve_api
from jobhooks_tools.local.template import LocalResources

from tests.integration.api_support import local_api, run_cli
from tests.integration.portal_support import exchange, gateway_api, link_token

# Imported while collecting: its logger then writes to pytest's capture, not to a test's capsys.
load_api_module()

BOUND = "arn:aws:sts::123456789012:assumed-role/acme-ci/run-1"


@pytest.fixture
def api(stack: LocalResources, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    monkeypatch.setenv("COLUMNS", "100")
    with local_api(monkeypatch) as server:
        yield server


def test_portal_link_prints_exactly_url_and_expiry_and_the_link_opens_once(
    api: ApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    before = datetime.now(UTC)
    printed = run_cli(capsys, "portal", "link", "--tenant", "acme", "--ttl", "2h")
    assert printed.code == 0, printed.stderr
    link = printed.json()
    assert set(link) == {"url", "expires_at"}
    assert link["url"].startswith(f"{api.url}/portal#t=v1.")
    expires = datetime.fromisoformat(link["expires_at"].replace("Z", "+00:00"))
    assert before + timedelta(hours=2) - timedelta(seconds=5) < expires
    assert expires <= datetime.now(UTC) + timedelta(hours=2)

    in_process = gateway_api()
    token = link_token(link["url"])
    assert exchange(in_process, token).status == 200
    assert exchange(in_process, token).status == 410


@pytest.mark.parametrize("ttl", ["30s", "25h", "soon", "0"])
def test_portal_link_refuses_lifetimes_out_of_bounds_as_usage_errors(
    api: ApiServer, capsys: pytest.CaptureFixture[str], ttl: str
) -> None:
    refused = run_cli(capsys, "portal", "link", "--tenant", "acme", "--ttl", ttl)
    assert refused.code == 2 and "--ttl" in refused.stderr


def test_portal_revoke_ends_a_tenants_links_and_one_session(
    api: ApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    in_process = gateway_api()
    unused = link_token(run_cli(capsys, "portal", "link", "--tenant", "acme").json()["url"])
    opened = exchange(
        in_process, link_token(run_cli(capsys, "portal", "link", "--tenant", "acme").json()["url"])
    )
    session_id = opened.body["session_id"]

    ended = run_cli(capsys, "portal", "revoke", "--session", session_id)
    assert ended.code == 0, ended.stderr
    assert ended.json()["session_id"] == session_id

    revoked = run_cli(capsys, "portal", "revoke", "--tenant", "acme")
    assert revoked.code == 0 and revoked.json()["epoch"] == 1
    assert exchange(in_process, unused).status == 403

    both = run_cli(capsys, "portal", "revoke", "--tenant", "acme", "--session", session_id)
    assert both.code == 2
    bad = run_cli(capsys, "portal", "revoke", "--session", "not-a-session")
    assert bad.code == 1 and "session_id" in bad.stderr


def test_grants_add_list_remove(api: ApiServer, capsys: pytest.CaptureFixture[str]) -> None:
    added = run_cli(
        capsys,
        "grants", "add",
        "--principal", "arn:aws:sts::123456789012:assumed-role/acme-ci/*",
        "--tenant", "acme", "--tenant", "acme-staging",
        "--description", "acme's deploy pipeline",
    )  # fmt: skip
    assert added.code == 0, added.stderr
    grant = added.json()
    assert grant["tenants"] == ["acme", "acme-staging"]
    assert grant["grant_id"].startswith("grt_")

    table = run_cli(capsys, "grants", "list")
    header, row = table.stdout.splitlines()
    assert header.split() == ["ID", "TENANTS", "PRINCIPAL", "PATTERN"]
    assert row.split()[:2] == [grant["grant_id"], "acme,acme-staging"]
    assert run_cli(capsys, "grants", "list", "--output", "json").json()["grants"] == [grant]

    role_form = run_cli(
        capsys,
        "grants", "add", "--principal", "arn:aws:iam::123456789012:role/acme-ci",
        "--tenant", "acme",
    )  # fmt: skip
    assert role_form.code == 1
    assert "assumed-role/acme-ci/*" in role_form.stderr

    removed = run_cli(capsys, "grants", "remove", grant["grant_id"])
    assert removed.code == 0 and removed.json() == {"grant_id": grant["grant_id"], "removed": True}
    again = run_cli(capsys, "grants", "remove", grant["grant_id"])
    assert again.code == 1 and "grant_not_found" in again.stderr


def test_a_tenant_bound_caller_cannot_issue_links_or_manage_grants(
    stack: LocalResources, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with local_api(monkeypatch) as operator:
        run_cli(
            capsys,
            "grants", "add", "--principal", "arn:aws:sts::123456789012:assumed-role/acme-ci/*",
            "--tenant", "acme",
        )  # fmt: skip
        operator_url = operator.url
    assert operator_url
    server = serve_api(caller_arn=BOUND)
    monkeypatch.setenv("JOBHOOKS_API_URL", server.url)
    try:
        for argv in (
            ("portal", "link", "--tenant", "acme"),
            ("portal", "revoke", "--tenant", "acme"),
            ("grants", "list"),
        ):
            refused = run_cli(capsys, *argv)
            assert refused.code == 1 and "operator_only" in refused.stderr, argv
    finally:
        server.shutdown()
