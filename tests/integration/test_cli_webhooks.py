"""`jobhooks webhooks`: the CLI against the local API server, in front of the real handler and
moto's server (`stack`): CLI -> jobhooks_tools.local.api_server -> functions/api/app.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from jobhooks_tools.cli.main import build_parser
from jobhooks_tools.local.api_server import ApiServer, load_api_module
from jobhooks_tools.local.template import LocalResources
from standardwebhooks.webhooks import Webhook

from tests.integration.api_support import Receiver, local_api, run_cli

# Imported while collecting: its logger then writes to pytest's capture, not to a test's capsys.
load_api_module()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.stop()


@pytest.fixture
def api(stack: LocalResources, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    with local_api(monkeypatch, allow_private_webhooks=True) as server:
        yield server


def test_webhooks_round_trip(
    api: ApiServer, receiver: Receiver, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    added = run_cli(
        capsys, "webhooks", "add", "--tenant", "acme", "--url", receiver.url,
        "--events", "job.completed, job.failed", "--description", "payments",
    )  # fmt: skip
    assert added.code == 0, added.stderr
    created = added.json()
    subscription_id, secret = created["subscription_id"], created["secret"]
    assert secret.startswith("whsec_")
    assert created["event_types"] == ["job.completed", "job.failed"]

    other = run_cli(
        capsys, "webhooks", "add", "--tenant", "acme", "--url",
        "https://hooks.example.com/a/very/long/path/that/will/not/fit/in/eighty/columns",
    )  # fmt: skip
    assert other.code == 0, other.stderr
    table = run_cli(capsys, "webhooks", "list", "--tenant", "acme")
    assert table.code == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "EVENTS", "URL"]
    assert len(lines) == 3
    assert all(len(line) <= 80 for line in lines), table.stdout
    assert any(subscription_id in line and "completed,failed" in line for line in lines)
    assert secret not in table.stdout
    as_json = run_cli(capsys, "webhooks", "list", "--tenant", "acme", "--output", "json")
    assert len(as_json.json()["subscriptions"]) == 2

    shown = run_cli(capsys, "webhooks", "show", subscription_id)
    assert shown.json()["description"] == "payments"
    assert "whsec_" not in shown.stdout
    assert run_cli(capsys, "webhooks", "show", subscription_id, "--tenant", "globex").code == 1

    tested = run_cli(capsys, "webhooks", "test", subscription_id)
    assert tested.code == 0, tested.stderr
    assert tested.json()["delivered"] is True
    Webhook(secret).verify(receiver.requests[-1].body, receiver.requests[-1].headers)

    rotated = run_cli(capsys, "webhooks", "rotate-secret", subscription_id, "--grace", "1h")
    assert rotated.code == 0, rotated.stderr
    new_secret = rotated.json()["secret"]
    assert run_cli(capsys, "webhooks", "test", subscription_id).code == 0
    for key in (secret, new_secret):
        Webhook(key).verify(receiver.requests[-1].body, receiver.requests[-1].headers)

    disabled = run_cli(capsys, "webhooks", "update", subscription_id, "--disable")
    assert disabled.json()["status"] == "disabled"
    moved = run_cli(capsys, "webhooks", "update", subscription_id, "--url", receiver.url + "/v2")
    assert moved.json()["url"].endswith("/v2")
    receiver.default_status = 500
    failed = run_cli(capsys, "webhooks", "test", subscription_id)
    assert failed.code == 1
    assert failed.json()["status_code"] == 500
    assert failed.stderr.strip() == "jobhooks: test webhook not delivered: 500"

    removed = run_cli(capsys, "webhooks", "remove", subscription_id)
    assert removed.json() == {"subscription_id": subscription_id, "deleted": True}
    gone = run_cli(capsys, "webhooks", "show", subscription_id)
    assert gone.code == 1
    assert gone.stdout == ""
    assert len(gone.stderr.strip().splitlines()) == 1
    assert gone.stderr.startswith("jobhooks: subscription_not_found: ")


def test_add_refuses_a_hostile_url_with_its_reason(
    api: ApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    refused = run_cli(
        capsys, "webhooks", "add", "--tenant", "acme", "--url", "https://169.254.169.254/latest"
    )
    assert refused.code == 1
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("jobhooks: address_not_public: url: the address 169.254.169.254")
    unknown = run_cli(
        capsys, "webhooks", "add", "--tenant", "acme", "--url", "https://a.example",
        "--events", "job.started",
    )  # fmt: skip
    assert unknown.code == 1
    assert unknown.stderr.startswith("jobhooks: invalid_request: event_types.0: ")


def test_usage_errors_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JOBHOOKS_API_URL", raising=False)
    no_endpoint = run_cli(capsys, "webhooks", "list", "--tenant", "acme")
    assert no_endpoint.code == 2
    assert "JOBHOOKS_API_URL" in no_endpoint.stderr
    assert len(no_endpoint.stderr.strip().splitlines()) == 1
    monkeypatch.setenv("JOBHOOKS_API_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("JOBHOOKS_API_AUTH", "kerberos")
    bad_auth = run_cli(capsys, "webhooks", "list", "--tenant", "acme")
    assert bad_auth.code == 2
    assert "sigv4 or none" in bad_auth.stderr
    assert run_cli(capsys, "webhooks", "list").code == 2  # --tenant is required
    assert run_cli(capsys, "webhooks", "list", "--tenant", "a", "--output", "xml").code == 2
    assert run_cli(capsys, "webhooks", "rotate-secret", "sub_x", "--grace", "soon").code == 2
    assert run_cli(capsys, "webhooks", "update", "sub_x", "--auth", "none").code == 2
    assert run_cli(capsys, "deliveries", "list", "--auth", "none").code == 2
    monkeypatch.setenv("JOBHOOKS_API_AUTH", "none")
    unreachable = run_cli(capsys, "dlq", "list")
    assert unreachable.code == 1
    assert unreachable.stderr.startswith("jobhooks: cannot reach the API at http://127.0.0.1:9")


COMMANDS = {
    "webhooks": ["add", "list", "show", "update", "remove", "rotate-secret", "test", "recover"],
    "deliveries": ["list", "show", "replay"],
    "quarantine": ["list", "show", "replay"],
    "dlq": ["list", "redrive"],
}


def every_command() -> list[list[str]]:
    argvs = []
    for group, commands in COMMANDS.items():
        argvs.append([group])
        argvs.extend([group, command] for command in commands)
    return argvs


@pytest.mark.parametrize("argv", every_command(), ids=" ".join)
def test_every_command_has_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, *argv, "--help")
    assert result.code == 0
    assert result.stdout.startswith("usage: jobhooks " + " ".join(argv))


def test_the_cli_offers_exactly_the_documented_commands() -> None:
    parser = build_parser()
    choices = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for group, commands in COMMANDS.items():
        group_parser = choices[group]
        assert list(group_parser._subparsers._group_actions[0].choices) == commands


def test_add_beyond_the_tenants_endpoint_cap_is_refused_with_its_reason(
    stack: LocalResources, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with local_api(monkeypatch, max_subscriptions_per_tenant=2):
        for n in range(2):
            added = run_cli(
                capsys, "webhooks", "add", "--tenant", "acme", "--url", f"https://{n}.example/h"
            )
            assert added.code == 0
        refused = run_cli(
            capsys, "webhooks", "add", "--tenant", "acme", "--url", "https://2.example/h"
        )
    assert refused.code == 1
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("jobhooks: subscription_limit_reached: tenant 'acme' already has 2")


def test_job_name_filters_are_added_replaced_and_cleared(
    api: ApiServer, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    added = run_cli(
        capsys, "webhooks", "add", "--tenant", "acme", "--url", receiver.url,
        "--job-name", "billing-*", "--job-name", "audit",
    )  # fmt: skip
    assert added.code == 0, added.stderr
    subscription_id = added.json()["subscription_id"]
    assert added.json()["job_names"] == ["billing-*", "audit"]

    replaced = run_cli(
        capsys, "webhooks", "update", subscription_id, "--job-name", "nightly-*"
    )  # fmt: skip
    assert replaced.code == 0, replaced.stderr
    assert replaced.json()["job_names"] == ["nightly-*"]

    cleared = run_cli(capsys, "webhooks", "update", subscription_id, "--job-name", "")
    assert cleared.code == 0, cleared.stderr
    assert cleared.json()["job_names"] == []
    assert run_cli(capsys, "webhooks", "show", subscription_id).json()["job_names"] == []

    refused = run_cli(
        capsys, "webhooks", "update", subscription_id, "--job-name", "x" * 129
    )  # fmt: skip
    assert refused.code != 0
    assert "job_names" in refused.stderr


def test_recover_prints_progress_and_counts_and_refuses_what_it_cannot_do(
    api: ApiServer, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    added = run_cli(capsys, "webhooks", "add", "--tenant", "acme", "--url", receiver.url).json()
    subscription_id = added["subscription_id"]
    since = "2026-01-01T00:00:00Z"

    nothing = run_cli(capsys, "webhooks", "recover", subscription_id, "--since", since)
    assert nothing.code == 0, nothing.stderr
    assert nothing.json() == {
        "subscription_id": subscription_id,
        "since": "2026-01-01T00:00:00.000Z",
        "sent": 0,
        "by_status": {},
        "unavailable": 0,
        "pages": 1,
    }
    assert nothing.stderr == f"recover {subscription_id}: 0 sent, done\n"

    for bad, problem in (("yesterday", "is not an ISO 8601 time"), ("2026-12-06", "no time zone")):
        refused = run_cli(capsys, "webhooks", "recover", subscription_id, "--since", bad)
        assert refused.code == 2
        assert "--since" in refused.stderr and problem in refused.stderr
    future = run_cli(capsys, "webhooks", "recover", subscription_id, "--since", "2999-01-01T00:00Z")
    assert future.code == 1
    assert future.stderr.startswith("jobhooks: invalid_since: since: ")
    other = run_cli(
        capsys, "webhooks", "recover", subscription_id, "--since", since, "--tenant", "globex"
    )
    assert other.code == 1
    assert other.stderr.startswith("jobhooks: subscription_not_found: ")
    assert run_cli(capsys, "webhooks", "update", subscription_id, "--disable").code == 0
    disabled = run_cli(capsys, "webhooks", "recover", subscription_id, "--since", since)
    assert disabled.code == 1
    assert disabled.stderr.startswith("jobhooks: subscription_not_active: ")
