"""A stack deployed with `AnalyticsPseudonymize=true`: every function that writes analytics rows
(ingest, spill, the API's quarantine replay) reads the stack's generated key from Secrets
Manager, with its own role's grant on that secret, and the rows land under pseudonyms.

The key and the variable naming it come from template.yaml itself (the `PseudonymizeAnalytics`
condition), provisioned once per worker as a stack of its own (`PSEUDONYMIZED_STACK`); the rows
go through a real Firehose stream (moto's server), as in test_ingest_analytics.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from jobhooks.analytics.pseudonymize import PSEUDONYMIZED_COLUMNS, key_from_text, pseudonym
from jobhooks.analytics.row import AnalyticsRow
from jobhooks.ingest.model import IngestOutcome
from jobhooks.spill.messages import SpilledRows, spill_messages
from jobhooks_tools.local.event_source import SqsEventSource
from jobhooks_tools.local.moto_server import local_aws_environment
from jobhooks_tools.local.template import LocalResources, provision
from jobhooks_tools.sample_events import demo_key, make_job_event

from tests.fixtures.stack import ProvisionedStacks
from tests.integration.api_support import InProcessApi, load_function, use_context
from tests.integration.test_ingest import NEW_KEY, Bridge, event_id_of, open_bridge
from tests.integration.test_ingest_analytics import SPILL_FUNCTION, Stream

PSEUDONYMIZED_STACK = "pseudonymized"
KEY_VARIABLE = "JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_SECRET_ARN"


def fresh_pseudonymized_stack(stacks: ProvisionedStacks) -> LocalResources:
    return stacks.fresh(
        PSEUDONYMIZED_STACK,
        lambda: provision(
            fetcher_keys=[demo_key().hex],
            endpoint_url=stacks.server.endpoint_url,
            parameters={"AnalyticsPseudonymize": "true"},
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
def stream(bridge: Bridge) -> Stream:
    created = Stream(bridge.stack.policy_names["AnalyticsDeliveryStream"])
    bridge.configure(JOBHOOKS_ANALYTICS_STREAM=created.name)
    return created


def pseudonymized(row: dict[str, Any], *, event_id: str, tenant_id: str, job_id: str) -> bool:
    """The row holds these ids as pseudonyms under the stack's key, and never as they are."""
    secret = boto3.client("secretsmanager").get_secret_value(SecretId=os.environ[KEY_VARIABLE])
    key = key_from_text(secret["SecretString"])
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
