"""`jobhooks inspect` and `jobhooks keys derive` on the sample events of events/."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jobhooks_tools.cli.main import main

EVENTS = Path(__file__).parents[2] / "events"
DEMO_HEX = "f4ab532dc6dcf763bf8139e75e9bef6d8af5c329ce3e03ba05fd39ff729f6ffa"
DEMO_APP_ENC_KEY = "dGhpcy1pcy1hLTMyLWJ5dGUtbWFzdGVyLWtleTEyMzQ="
EXPECTED = json.loads((EVENTS / "expected.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_inspect_reaches_the_documented_verdict(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["inspect", str(EVENTS / "sqs" / f"{name}.json"), "--key-hex", DEMO_HEX])
    printed = json.loads(capsys.readouterr().out)
    # "accepted" or a reason code, then maybe "(what differs with an option)".
    verdict = EXPECTED[name].split()[0]
    if verdict == "accepted":
        assert code == 0 and printed["type"] in ("job.completed", "job.failed")
        assert printed["data"]["account_id"] == "acme"
    else:
        assert code == 3 and printed["rejected"] == verdict
        assert printed["detail"]


def test_inspect_refuses_a_legacy_message_that_names_a_tenant(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = str(EVENTS / "sqs/legacy-other-tenant.json")
    code = main(["inspect", path, "--key-hex", DEMO_HEX, "--allow-legacy"])
    printed = json.loads(capsys.readouterr().out)
    assert code == 3 and printed["rejected"] == "tenant_mismatch"
    assert "does not sign the tenant" in printed["detail"]


def test_inspect_times_a_rewritten_ce_time_by_t(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EVENTS / "sqs/rewritten-ce-time.json")
    code = main(["inspect", path, "--key-hex", DEMO_HEX, "--release", "fetcher@2.0.2"])
    data = json.loads(capsys.readouterr().out)["data"]
    assert code == 0 and data["timestamp_utc"] == "2026-07-13T18:04:12.000Z"
    assert data["unmeasured"] == ["timestamp_utc", "queue_wait_ms", "duration_ms"]


def test_inspect_checks_ce_source_against_an_allowlist(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(EVENTS / "sqs/foreign-source.json")
    allowlist = ["--allowed-sources", "//lerian.fetcher/worker"]
    assert main(["inspect", path, "--key-hex", DEMO_HEX, *allowlist]) == 3
    assert json.loads(capsys.readouterr().out)["rejected"] == "untrusted_source"
    completed = str(EVENTS / "sqs/completed.json")
    assert main(["inspect", completed, "--key-hex", DEMO_HEX, *allowlist]) == 0
    capsys.readouterr()
    monkeypatch.setenv("JOBHOOKS_ALLOWED_SOURCES", "//lerian.fetcher/worker")  # the stack's
    assert main(["inspect", path, "--key-hex", DEMO_HEX]) == 3
    capsys.readouterr()
    assert main(["inspect", path, "--key-hex", DEMO_HEX, "--allowed-sources", "a,,b"]) == 2


def test_inspect_accepts_legacy_only_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "inspect",
            str(EVENTS / "sqs/legacy.json"),
            "--app-enc-key",
            DEMO_APP_ENC_KEY,
            "--allow-legacy",
        ]
    )
    assert (
        code == 0
        and json.loads(capsys.readouterr().out)["data"]["queue_name"] == "fetcher.job.events"
    )


def test_inspect_judges_a_bare_message_against_received_at(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = str(EVENTS / "forwarded/completed.json")
    assert main(["inspect", path, "--key-hex", DEMO_HEX]) == 3  # today it is months old
    assert json.loads(capsys.readouterr().out)["rejected"] == "stale_timestamp"
    assert (
        main(["inspect", path, "--key-hex", DEMO_HEX, "--received-at", "2026-07-13T18:04:13Z"]) == 0
    )


def test_inspect_reads_keys_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JOBHOOKS_FETCHER_HMAC_KEYS", f"{'00' * 32},{DEMO_HEX}")
    assert main(["inspect", str(EVENTS / "sqs/completed.json")]) == 0
    monkeypatch.delenv("JOBHOOKS_FETCHER_HMAC_KEYS")
    monkeypatch.setenv("APP_ENC_KEY", DEMO_APP_ENC_KEY)
    assert main(["inspect", str(EVENTS / "sqs/failed.json")]) == 0


def test_bad_usage_exits_2_with_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("JOBHOOKS_FETCHER_HMAC_KEYS", raising=False)
    monkeypatch.delenv("APP_ENC_KEY", raising=False)
    assert main(["inspect", str(EVENTS / "sqs/completed.json")]) == 2
    assert "no key" in capsys.readouterr().err
    assert main(["inspect", str(EVENTS / "sqs/completed.json"), "--key-hex", "abc"]) == 2
    with pytest.raises(SystemExit) as exited:
        main(["inspect"])
    assert exited.value.code == 2


def test_keys_derive_from_flag_and_stdin() -> None:
    command = [sys.executable, "-m", "jobhooks_tools.cli.main", "keys", "derive"]
    by_flag = subprocess.run(
        [*command, "--app-enc-key", DEMO_APP_ENC_KEY], capture_output=True, text=True
    )
    by_stdin = subprocess.run(
        command, input=DEMO_APP_ENC_KEY + "\n", capture_output=True, text=True
    )
    assert by_flag.stdout.strip() == by_stdin.stdout.strip() == DEMO_HEX
    short = subprocess.run([*command, "--app-enc-key", "c2hvcnQ="], capture_output=True, text=True)
    assert short.returncode == 2 and "at least 32" in short.stderr


def test_sample_events_are_up_to_date(tmp_path: Path) -> None:
    before = {p.relative_to(EVENTS): p.read_bytes() for p in EVENTS.rglob("*.json")}
    subprocess.run([sys.executable, str(EVENTS / "generate.py")], check=True, capture_output=True)
    after = {p.relative_to(EVENTS): p.read_bytes() for p in EVENTS.rglob("*.json")}
    assert after == before, "events/ is stale: run python events/generate.py and commit"
