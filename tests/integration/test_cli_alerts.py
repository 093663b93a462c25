"""`jobhooks alerts`: the CLI against the local API server, in front of the real handler and
moto's server (`stack`): CLI -> jobhooks_tools.local.api_server -> functions/api/app.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from jobhooks_tools.local.api_server import ApiServer, load_api_module
from jobhooks_tools.local.template import LocalResources

from tests.integration.api_support import local_api, run_cli

load_api_module()


@pytest.fixture
def api(stack: LocalResources, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiServer]:
    with local_api(monkeypatch, allow_private_webhooks=True) as server:
        yield server


def test_alert_rules_are_added_listed_and_removed(
    api: ApiServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    added = run_cli(
        capsys, "alerts", "add", "--tenant", "acme", "--job-name", "billing-*",
        "--failure-rate", "0.2", "--p95-ms", "60000", "--min-outcomes", "5", "--window", "1h",
    )  # fmt: skip
    assert added.code == 0, added.stderr
    rule = added.json()
    assert rule["rule_id"].startswith("alr_")
    assert (rule["tenant_id"], rule["job_name"]) == ("acme", "billing-*")
    assert (rule["failure_rate"], rule["p95_ms"]) == (0.2, 60000)
    assert (rule["min_outcomes"], rule["window_seconds"]) == (5, 3600)
    assert rule["degraded"] == []
    other = run_cli(
        capsys, "alerts", "add", "--tenant", "globex", "--job-name", "x", "--p95-ms", "9"
    )
    assert other.code == 0, other.stderr

    table = run_cli(capsys, "alerts", "list", "--tenant", "acme")
    assert table.code == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["ID", "JOBS", "THRESHOLDS", "WINDOW", "DEGRADED"]
    assert len(lines) == 2 and rule["rule_id"] in lines[1] and "fail>=0.2,p95>=60000ms" in lines[1]
    listed = run_cli(capsys, "alerts", "list", "--tenant", "acme", "--output", "json").json()
    assert [r["rule_id"] for r in listed["rules"]] == [rule["rule_id"]]
    assert listed["recent_alerts"] == []

    refused = run_cli(capsys, "alerts", "remove", rule["rule_id"], "--tenant", "globex")
    assert refused.code == 1 and "alert_rule_not_found" in refused.stderr
    removed = run_cli(capsys, "alerts", "remove", rule["rule_id"])
    assert removed.code == 0, removed.stderr
    assert removed.json() == {"rule_id": rule["rule_id"], "deleted": True}
    assert (
        run_cli(capsys, "alerts", "list", "--tenant", "acme", "--output", "json").json()["rules"]
        == []
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--job-name", "x"], "give --failure-rate, --p95-ms or both"),
        (["--job-name", "x", "--failure-rate", "1.5"], "at most 1"),
        (["--job-name", "x", "--failure-rate", "0.2", "--window", "soon"], "not a duration"),
    ],
)
def test_bad_rules_are_refused_as_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    result = run_cli(capsys, "alerts", "add", "--tenant", "acme", *argv)
    assert result.code == 2
    assert message in result.stderr


def test_the_api_refuses_a_window_out_of_range_with_its_field(
    api: ApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(
        capsys, "alerts", "add", "--tenant", "acme", "--job-name", "x", "--failure-rate", "0.2",
        "--window", "2d",
    )  # fmt: skip
    assert result.code == 1
    assert "window_seconds" in result.stderr
