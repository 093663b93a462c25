"""A stack deployed with `AnalyticsPseudonymize=true`: every function that writes analytics rows
(ingest, spill, the API's quarantine replay) reads the stack's generated key from Secrets
Manager, with its own role's grant on that secret, and the rows land under pseudonyms; the
functions that read a tenant's rows (the alerts evaluation, the portal's job-health chart) read
the same key with their own roles' grants, to find the tenant under its pseudonym.

The key and the variable naming it come from template.yaml itself (the `PseudonymizeAnalytics`
condition), provisioned once per worker as a stack of its own (`PSEUDONYMIZED_STACK`); the rows
go through a real Firehose stream (moto's server), as in test_ingest_analytics.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from jobhooks.alerts.store import AlertRuleStore
from jobhooks.analytics.pseudonymize import PSEUDONYMIZED_COLUMNS, key_from_text, pseudonym
from jobhooks.analytics.row import AnalyticsRow
from jobhooks.ingest.model import IngestOutcome
from jobhooks.spill.messages import SpilledRows, spill_messages
from jobhooks_tools.local.analytics.files import LocalFileSink
from jobhooks_tools.local.event_source import SqsEventSource
from jobhooks_tools.local.gateway import LOCAL_PARAMETERS
from jobhooks_tools.local.moto_server import local_aws_environment
from jobhooks_tools.local.template import LocalResources, provision
from jobhooks_tools.sample_events import demo_key, make_job_event

from tests.fixtures.stack import ProvisionedStacks
from tests.integration.api_support import InProcessApi, lambda_context, load_function, use_context
from tests.integration.portal_support import gateway_api, open_portal
from tests.integration.test_ingest import NEW_KEY, Bridge, event_id_of, open_bridge
from tests.integration.test_ingest_analytics import SPILL_FUNCTION, Stream
from tests.integration.test_portal_api import analytics_row

PSEUDONYMIZED_STACK = "pseudonymized"
KEY_VARIABLE = "JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_SECRET_ARN"


def fresh_pseudonymized_stack(stacks: ProvisionedStacks) -> LocalResources:
    return stacks.fresh(
        PSEUDONYMIZED_STACK,
        lambda: provision(
            fetcher_keys=[demo_key().hex],
            endpoint_url=stacks.server.endpoint_url,
            # The local operator, as on `jobhooks dev`: it opens the portal links.
            parameters={**LOCAL_PARAMETERS, "AnalyticsPseudonymize": "true"},
        ),
    )


@pytest.fixture(scope="module")
def pseudonymized_stack(provisioned_stacks: ProvisionedStacks) -> Iterator[LocalResources]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name, value in local_aws_environment(provisioned_stacks.server.endpoint_url).items():
            monkeypatch.setenv(name, value)
        yield fresh_pseudonymized_stack(provisioned_stacks)


@pytest.fixture
def bridge(
    pseudonymized_stack: LocalResources,
    provisioned_stacks: ProvisionedStacks,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Bridge]:
    with open_bridge(
        pseudonymized_stack, provisioned_stacks, monkeypatch, fresh=fresh_pseudonymized_stack
    ) as opened:
        yield opened


@pytest.fixture
def functions(
    pseudonymized_stack: LocalResources,
    provisioned_stacks: ProvisionedStacks,
    monkeypatch: pytest.MonkeyPatch,
) -> LocalResources:
    """The stack as provisioned and the functions' environment, for functions loaded afresh."""
    for name, value in local_aws_environment(provisioned_stacks.server.endpoint_url).items():
        monkeypatch.setenv(name, value)
    assert fresh_pseudonymized_stack(provisioned_stacks) == pseudonymized_stack
    for name, value in pseudonymized_stack.environment().items():
        monkeypatch.setenv(name, value)
    return pseudonymized_stack


@pytest.fixture
def stream(bridge: Bridge) -> Stream:
    created = Stream(bridge.stack.policy_names["AnalyticsDeliveryStream"])
    bridge.configure(JOBHOOKS_ANALYTICS_STREAM=created.name)
    return created


def stack_key() -> bytes:
    """The stack's generated key, read as the operator."""
    secret = boto3.client("secretsmanager").get_secret_value(SecretId=os.environ[KEY_VARIABLE])
    return key_from_text(secret["SecretString"])


def pseudonymized(row: dict[str, Any], *, event_id: str, tenant_id: str, job_id: str) -> bool:
    """The row holds these ids as pseudonyms under the stack's key, and never as they are."""
    key = stack_key()
    plain = {"event_id": event_id, "account_id": tenant_id, "job_id": job_id}
    assert set(plain) == set(PSEUDONYMIZED_COLUMNS)
    return all(row[column] == pseudonym(key, column, value) for column, value in plain.items())


def test_the_stack_names_its_generated_key_to_the_functions(bridge: Bridge) -> None:
    arn = bridge.stack.refs["AnalyticsPseudonymizationKey"]
    for function in ("IngestFunction", "SpillFunction", "ApiFunction"):
        assert bridge.stack.environment(function)[KEY_VARIABLE] == arn


def test_ingest_writes_the_row_under_pseudonyms(bridge: Bridge, stream: Stream) -> None:
    # IngestRole's grant on the key (ReadFetcherKeys names it when the stack pseudonymizes).
    event = make_job_event(demo_key(), tenant_id="acme", job_id="job-7")
    bridge.send(event)

    stats = bridge.run()

    assert (stats.succeeded, stats.failed) == (1, 0)
    (row,) = stream.rows()
    assert pseudonymized(row, event_id=event_id_of(event), tenant_id="acme", job_id="job-7")
    assert "acme" not in json.dumps(row)


def test_the_spill_function_pseudonymizes_the_rows_ingest_could_not(
    bridge: Bridge, stream: Stream
) -> None:
    # Ingest spills a row as it is when it could not read the key; the spill function
    # pseudonymizes it before writing it (SpillRole's PseudonymizeSpilledRows).
    row = AnalyticsRow(
        timestamp_utc=datetime(2026, 7, 13, tzinfo=UTC),
        event_id="fetcher.job.completed.job-9",
        release="unknown",
        account_id="acme",
        job_id="job-9",
        job_name="report",
        queue_name="q",
        attempt_count=1,
        queue_wait_ms=0,
        duration_ms=5,
        status="success",
        unmeasured=(),
    )
    (body,) = spill_messages(SpilledRows((row,), pseudonymized=False))
    bridge.sqs.send_message(QueueUrl=bridge.stack.queue_url("SpillQueue"), MessageBody=body)

    drained = SqsEventSource(
        bridge.stack.queue_url("SpillQueue"),
        load_function("spill").handler,
        sqs_client=bridge.sqs,
        strict_responses=True,
        wait_time_seconds=0,
        function_timeout_seconds=10,
        principal=SPILL_FUNCTION,
    ).run_until_idle(20, include_in_flight=True)

    assert (drained.succeeded, drained.failed) == (1, 0)
    (written,) = stream.rows()
    assert pseudonymized(
        written, event_id="fetcher.job.completed.job-9", tenant_id="acme", job_id="job-9"
    )


def test_a_quarantine_replay_through_the_api_writes_the_row_under_pseudonyms(
    bridge: Bridge, stream: Stream
) -> None:
    # The API function verifies the message again and writes its row as ingest does, reading
    # the key with ApiRole's grant (VerifyReplayedMessages names it).
    event = make_job_event(NEW_KEY, tenant_id="acme", job_id="job-8")
    bridge.send(event)
    bridge.run()
    (kept,) = bridge.quarantined()
    bridge.put_fetcher_keys(demo_key(), NEW_KEY)

    api = InProcessApi()
    with use_context(api.module, grants=()):
        replayed = api.post(f"/v1/quarantine/{kept['quarantine_id']}/replay")

    assert replayed.status == 200, replayed.text
    assert replayed.body["outcome"] == IngestOutcome.ACCEPTED.value
    (row,) = stream.rows()
    assert pseudonymized(row, event_id=event_id_of(event), tenant_id="acme", job_id="job-8")


# -- the functions that find a tenant's rows -----------------------------------------------------


def test_the_alerts_function_finds_each_tenants_jobs_under_its_pseudonym(
    functions: LocalResources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # AlertsRole's FindPseudonymizedTenants: the evaluation reads the key with its own role to
    # ask the table about each rule's tenant in the form the rows store it.
    key = stack_key()
    at = datetime.now(UTC) - timedelta(minutes=2)
    acme, globex = (pseudonym(key, "account_id", tenant) for tenant in ("acme", "globex"))
    rows = [
        *(analytics_row(acme, "billing-sync", at, True, 0) for _ in range(3)),
        analytics_row(acme, "billing-sync", at, False, 200),
        *(analytics_row(globex, "billing-sync", at, False, 100) for _ in range(4)),
        # Under the tenant's own id, which the table never holds: a lookup by it finds these.
        *(analytics_row("acme", "billing-sync", at, False, 100) for _ in range(5)),
    ]
    LocalFileSink(tmp_path, clock=lambda: at).put_rows(rows)
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_DIR", str(tmp_path))
    rules = AlertRuleStore(functions.table_name("AlertRulesTable"), boto3.client("dynamodb"))
    acme_rule = rules.create(
        "acme", "billing-*", failure_rate=0.5, min_outcomes=3, window_seconds=900
    )
    globex_rule = rules.create(
        "globex", "billing-*", failure_rate=0.2, min_outcomes=1, window_seconds=900
    )

    alerts = load_function("alerts")
    summary = alerts.handler({}, lambda_context("jobhooks-test-alerts", timeout=60))

    assert summary == {"rules": 2, "degraded": 1, "recovered": 0}
    state = rules.get(acme_rule.rule_id).states["billing-sync"]
    assert (state.outcomes, state.failures, state.failure_rate) == (4, 3, 0.75)
    assert rules.get(globex_rule.rule_id).states == {}


def test_the_portal_charts_its_tenants_jobs_found_under_the_tenants_pseudonym(
    functions: LocalResources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PortalRole's FindPseudonymizedTenant: the job-health chart reads the key with the portal
    # function's role to find the session's tenant as the rows store it.
    key = stack_key()
    day = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    if day > datetime.now(UTC):
        day -= timedelta(days=1)
    acme, globex = (pseudonym(key, "account_id", tenant) for tenant in ("acme", "globex"))
    rows = [
        analytics_row(acme, "payments", day, False, 100),
        analytics_row(acme, "payments", day, False, 300),
        analytics_row(acme, "payments", day, True, 0),
        analytics_row(globex, "globex-secret-job", day, True, 0),
        # Under the tenant's own id, which the table never holds: a lookup by it finds this.
        analytics_row("acme", "payments", day, True, 0),
    ]
    LocalFileSink(tmp_path, clock=lambda: day).put_rows(rows)
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_DIR", str(tmp_path))
    api = gateway_api()
    with use_context(api.module, allow_private_webhooks=True):
        browser = open_portal(api, "acme")
        report = browser.get("/portal/api/analytics/jobs", days=3)

    assert report.status == 200, report.text
    (point,) = report.body["points"]
    assert point == {
        "day": day.date().isoformat(),
        "job_name": "payments",
        "outcomes": 3,
        "failures": 1,
        "failure_rate": 0.3333,
        "p95_duration_ms": 300,
    }
    assert "globex" not in report.text
