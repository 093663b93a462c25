"""The analytics table end to end: signed events published through RabbitMQ, shovelled, ingested,
written as rows, and read back through the `jobhooks analytics` CLI against `jobhooks dev`'s API.

What must come out: one row per verified, deduplicated event (a completed and a failed event
delivered to a subscription, and an event no subscription wanted), none for the copies of an
event, a quarantined message or a test send; and `jobhooks analytics check` passing against the
stack, then failing, naming the step, when the stack's sink loses or alters a row.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from jobhooks.analytics.columns import COLUMN_NAMES, record_problems
from jobhooks.analytics.questions import questions
from jobhooks.analytics.row import AnalyticsRow
from jobhooks.inbound.outcome import format_timestamp
from jobhooks.webhook_signature import webhook_id_for
from jobhooks_tools.local.analytics.files import row_files
from jobhooks_tools.publisher import SamplePublication, Tampering, tamper
from jobhooks_tools.sample_events import (
    SampleEvent,
    completed_body,
    demo_key,
    failed_body,
    make_job_event,
    re_emit,
)

from tests.e2e.harness import Bridge, unique_tenant
from tests.integration.api_support import CliRun, run_cli

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]


@pytest.fixture
def cli(bridge: Bridge, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Callable[..., CliRun]:
    """`jobhooks ARGV...` pointed at the bridge's API, as `jobhooks dev` tells users to."""
    assert bridge.stack.api_url
    monkeypatch.setenv("JOBHOOKS_API_URL", bridge.stack.api_url)
    monkeypatch.setenv("JOBHOOKS_API_AUTH", "none")
    return lambda *argv: run_cli(capsys, *argv)


def publication(event: SampleEvent, tenant: str, kind: str = "original") -> SamplePublication:
    event_id = event.headers["ce-id"]
    assert isinstance(event_id, bytes)
    return SamplePublication(
        event=event,
        vhost=None,
        event_id=event_id.decode(),
        tenant_id=tenant,
        event_type=event.routing_key,
        kind=kind,
    )


def test_every_verified_deduplicated_event_is_one_row_and_nothing_else_is(
    bridge: Bridge, cli: Callable[..., CliRun]
) -> None:
    key, nonce = demo_key(), uuid.uuid4().hex[:8]
    job_name = f"e2e_analytics_{nonce}"
    subscribed, unwanted = unique_tenant("rows"), unique_tenant("rows-unmatched")
    subscription = bridge.subscribe(subscribed)
    signed_at = int(time.time())
    moment = datetime.fromtimestamp(signed_at - 30, UTC)

    def completed(tenant: str, offset_ms: int) -> SampleEvent:
        job_id = f"{nonce}-{tenant}-completed"
        at = format_timestamp(moment + timedelta(milliseconds=offset_ms))
        body = completed_body(job_id, source=job_name, execution_ms=1200, completed_at=at)
        return make_job_event(key, tenant_id=tenant, job_id=job_id, timestamp=signed_at, body=body)

    delivered_ok = completed(subscribed, 0)
    delivered_failed = make_job_event(
        key,
        status="failed",
        tenant_id=subscribed,
        job_id=f"{nonce}-failed",
        timestamp=signed_at,
        emitted_at=moment + timedelta(milliseconds=1),
        body=failed_body(f"{nonce}-failed", source=job_name),
    )
    unmatched = completed(unwanted, 2)
    originals = [
        publication(delivered_ok, subscribed),
        publication(delivered_failed, subscribed),
        publication(unmatched, unwanted),
    ]
    copies = [
        publication(delivered_ok, subscribed, "redelivery"),  # the very same message again
        publication(re_emit(delivered_failed, key, timestamp=signed_at + 5), subscribed),
    ]
    quarantined = tamper(originals[2], Tampering.CE_TENANTID, key)

    bridge.publish([*originals, *copies, quarantined])
    bridge.wait_for_deliveries(
        {
            subscription.endpoint: {
                webhook_id_for(p.event_id) for p in originals if p.tenant_id == subscribed
            }
        },
        timeout=90,
    )
    tested = bridge.api("POST", f"/v1/subscriptions/{subscription.subscription_id}/test")
    assert tested["delivered"] is True
    bridge.stack.wait_until_idle(timeout=60)
    assert any(q["event_id"] == originals[2].event_id for q in bridge.quarantined())

    window = ("--from", format_timestamp(moment), "--to", format_timestamp(moment + timedelta(1)))
    run = cli("analytics", "rows", *window, "--output", "json")

    assert run.code == 0, run.stderr
    listed = run.json()
    assert list(listed) == ["rows"]
    ours = [row for row in listed["rows"] if row["job_name"] == job_name]
    # Rows come by timestamp_utc, and a failure's is its ce-time: the re-emitted copy carries a
    # later one, and either copy may reach ingest first. One row per event is the behaviour.
    assert sorted((row["event_id"], row["status"], row["account_id"]) for row in ours) == sorted(
        [
            (originals[0].event_id, "success", subscribed),
            (originals[1].event_id, "failure", subscribed),
            (originals[2].event_id, "success", unwanted),
        ]
    )
    for row in ours:
        assert list(row) == list(COLUMN_NAMES) and record_problems(row) == []
    assert tested["event_id"] not in {row["event_id"] for row in listed["rows"]}
    by_event = {row["event_id"]: row for row in ours}
    assert by_event[originals[0].event_id]["duration_ms"] == 1200
    assert by_event[originals[1].event_id]["error_category"] == "datasource_error"
    # Ingest wrote each row once: the copies were deduplicated before any write.
    written = [
        json.loads(line)
        for path in row_files(bridge.stack.analytics_dir)
        for line in path.read_text().splitlines()
    ]
    assert sorted(r["event_id"] for r in written if r["job_name"] == job_name) == sorted(
        p.event_id for p in originals
    )

    by_account = cli("analytics", "query", "failure_rate_by_account", *window, "--output", "json")
    assert by_account.code == 0, by_account.stderr
    answer = by_account.json()
    assert list(answer) == ["question", "engine", "from", "to", "columns", "rows"]
    assert answer["engine"] == "duckdb"
    rates = {row[0]: row[1:] for row in answer["rows"]}
    assert rates[subscribed] == [2, 1, 0.5] and rates[unwanted] == [1, 0, 0.0]


# ---------------------------------------------------------------------------- the check

# Seven steps of its own and one per reviewed question: a question added without an answer in
# the check's fixture fails the check.
STEPS = 7 + len(questions())


def test_the_check_passes_against_the_dev_stack(bridge: Bridge, cli: Callable[..., CliRun]) -> None:
    run = cli("analytics", "check", "--amqp-url", bridge.stack.amqp_url, "--rows-timeout", "60")

    assert run.code == 0, run.stdout + run.stderr
    steps = run.stdout.splitlines()
    assert len(steps) == STEPS and all(line.startswith("ok ") for line in steps), run.stdout
    assert re.search(rf" 3/{STEPS} the rows arrive: 2 rows after", run.stdout)
    assert re.search(r'question waiting_jobs: \[\["jobhooks_check_\w+", 2, 0, null', run.stdout)
    assert f"analytics check passed: {STEPS} steps" in run.stderr


@pytest.fixture
def faulty_sink(bridge: Bridge) -> Iterator[Callable[[Callable[..., Any]], None]]:
    def use(change: Callable[[AnalyticsRow], AnalyticsRow | None]) -> None:
        bridge.sink_faults.change = change

    yield use
    bridge.sink_faults.change = None


@pytest.mark.parametrize(
    ("change", "step"),
    [
        # The sink silently loses every failure: the rows never all arrive.
        (lambda row: None if row.status == "failure" else row, f" 3/{STEPS} (the rows arrive)"),
        # The sink rounds durations: the values no longer match the fixture.
        (
            lambda row: row.model_copy(update={"duration_ms": row.duration_ms // 1000 * 1000}),
            f" 6/{STEPS} (the rows hold the fixture)",
        ),
    ],
    ids=["drops-failures", "alters-durations"],
)
def test_the_check_fails_naming_the_step_when_a_row_is_wrong(
    bridge: Bridge,
    cli: Callable[..., CliRun],
    faulty_sink: Callable[[Callable[..., Any]], None],
    change: Callable[[AnalyticsRow], AnalyticsRow | None],
    step: str,
) -> None:
    faulty_sink(change)

    run = cli("analytics", "check", "--amqp-url", bridge.stack.amqp_url, "--rows-timeout", "15")

    assert run.code == 1, run.stdout
    assert run.stdout.splitlines()[-1].startswith("FAIL ")
    assert f"jobhooks: analytics check failed at step{step}" in run.stderr
