"""IAM enforced off AWS (docs/iam-local.md): each function calls moto as its role in template.yaml,
read from the template itself, and the suite fails when a role misses a grant the code needs."""

from __future__ import annotations

import copy
import importlib.util
import logging
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.exceptions import ClientError
from jobhooks_tools.local import iam
from jobhooks_tools.local.activity import describe
from jobhooks_tools.local.event_source import SqsEventSource
from jobhooks_tools.local.moto_server import MotoServer
from jobhooks_tools.local.template import LocalResources, load_template, provision
from jobhooks_tools.sample_events import demo_key

from tests.fixtures.iam_grants import (
    EXERCISED_FILE_VARIABLE,
    REPORT_FAILS_VARIABLE,
    SessionGrants,
    allow_list,
    unexercised_grants,
)

# pytester: runs one test of the suite in a session of its own, in this process.
pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
GET_CLAIM = "dynamodb:GetItem"
DELETE_MESSAGE = "sqs:DeleteMessage"
SUITE_REPORT_VARIABLES = (EXERCISED_FILE_VARIABLE, REPORT_FAILS_VARIABLE)


def without_ingest_claims_read(template: dict[str, Any]) -> dict[str, Any]:
    """template.yaml as it was before the fix: IngestRole may not GetItem on ClaimsTable."""
    changed = copy.deepcopy(template)
    statements = changed["Resources"]["IngestRole"]["Properties"]["Policies"][0]["PolicyDocument"][
        "Statement"
    ]
    (claims,) = [s for s in statements if s["Sid"] == "ClaimEvents"]
    assert GET_CLAIM in claims["Action"]
    claims["Action"] = [a for a in claims["Action"] if a != GET_CLAIM]
    return changed


def claims_get(resources: LocalResources) -> dict[str, Any]:
    return {"TableName": resources.table_name("ClaimsTable"), "Key": {"event_id": {"S": "x"}}}


def test_ingest_may_read_the_claims_table_as_template_yaml_grants(stack: LocalResources) -> None:
    assert iam.check("IngestFunction", "dynamodb", "dynamodb", "GetItem", claims_get(stack)) == []


def test_a_grant_removed_from_the_template_is_refused_locally(aws: MotoServer) -> None:
    weakened = provision(
        without_ingest_claims_read(load_template()),
        fetcher_keys=[demo_key().hex],
        endpoint_url=aws.endpoint_url,
    )
    (refusal,) = iam.check(
        "IngestFunction", "dynamodb", "dynamodb", "GetItem", claims_get(weakened)
    )
    assert refusal.action == GET_CLAIM
    assert refusal.resource == weakened.arns["ClaimsTable"]
    # The deliver role's own grant on the same table is untouched.
    assert (
        iam.check("DeliverFunction", "dynamodb", "dynamodb", "GetItem", claims_get(weakened)) == []
    )


def test_a_refused_call_fails_as_on_aws_and_is_logged_naming_function_action_and_resource(
    stack: LocalResources, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Once a function's app is imported in this process (another test, a local stack), Powertools
    # gives the `jobhooks` logger its own handler and stops it propagating, as on AWS: the root
    # logger, where caplog listens, then never sees the guard's records. Listen on the guard's
    # (and only there: each record once, whether or not an app was imported).
    guard = logging.getLogger("jobhooks.local.iam.guard")
    monkeypatch.setattr(guard, "handlers", [*guard.handlers, caplog.handler])
    monkeypatch.setattr(guard, "propagate", False)
    client = boto3.session.Session().client("dynamodb")
    with iam.acting_as("AuthorizerFunction"), pytest.raises(ClientError) as raised:
        client.get_item(**claims_get(stack))
    assert raised.value.response["Error"]["Code"] == "AccessDeniedException"
    (refusal,) = iam.take_refusals()
    expected = f"AuthorizerFunction may not dynamodb:GetItem on {stack.arns['ClaimsTable']}"
    assert str(refusal).startswith(expected)
    (record,) = [r for r in caplog.records if r.name == guard.name]
    assert record.levelno == logging.ERROR
    activity = describe(record)
    assert activity is not None
    assert (activity.source, activity.what) == ("aws", "refused")
    assert activity.text.startswith(expected)


def test_a_service_on_a_moto_process_of_its_own_is_held_to_the_roles_too(aws: MotoServer) -> None:
    # `jobhooks dev` serves DynamoDB from a process of its own (AWS_ENDPOINT_URL_DYNAMODB).
    apart = MotoServer().start()
    try:
        resources = provision(
            fetcher_keys=[demo_key().hex],
            endpoint_url=aws.endpoint_url,
            service_endpoints={"dynamodb": apart.endpoint_url},
        )
        dynamodb = boto3.session.Session().client("dynamodb", endpoint_url=apart.endpoint_url)
        assert resources.table_name("ClaimsTable") in dynamodb.list_tables()["TableNames"]
        with iam.acting_as("IngestFunction"):
            dynamodb.get_item(**claims_get(resources))
        with iam.acting_as("AuthorizerFunction"), pytest.raises(ClientError) as raised:
            dynamodb.get_item(**claims_get(resources))
        assert raised.value.response["Error"]["Code"] == "AccessDeniedException"
        (refusal,) = iam.take_refusals()
        assert refusal.action == GET_CLAIM
    finally:
        apart.stop()


def without_deliver_deletes(template: dict[str, Any]) -> dict[str, Any]:
    """template.yaml with a DeliverRole that may receive from its queue but not delete."""
    changed = copy.deepcopy(template)
    statements = changed["Resources"]["DeliverRole"]["Properties"]["Policies"][0]["PolicyDocument"][
        "Statement"
    ]
    (consume,) = [s for s in statements if s["Sid"] == "ConsumeDeliveryQueueAndBackOff"]
    assert DELETE_MESSAGE in consume["Action"]
    consume["Action"] = [a for a in consume["Action"] if a != DELETE_MESSAGE]
    return changed


def test_the_poller_of_a_handler_loaded_from_its_file_acts_as_its_function(
    aws: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lambda receives and deletes with the function's role. A handler loaded from
    functions/deliver/app.py by file location (its module is in no `sys.modules`, as the
    tests load it) is still DeliverFunction's: without sqs:DeleteMessage in DeliverRole, the
    poller's delete of the record the handler acked is refused, as on AWS."""
    weakened = provision(
        without_deliver_deletes(load_template()),
        fetcher_keys=[demo_key().hex],
        endpoint_url=aws.endpoint_url,
    )
    for name, value in weakened.environment().items():
        monkeypatch.setenv(name, value)
    path = ROOT / "functions" / "deliver" / "app.py"
    spec = importlib.util.spec_from_file_location(f"jobhooks_test_deliver_{uuid.uuid4().hex}", path)
    assert spec is not None and spec.loader is not None
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    assert iam.principal_of_code(app.handler) == "DeliverFunction"

    queue_url = weakened.queue_url("DeliveryQueue")
    sqs = boto3.session.Session().client("sqs")
    # Not a delivery task: the deliver function parks it and acks it, touching nothing else.
    sqs.send_message(QueueUrl=queue_url, MessageBody="not a delivery task")
    stats = SqsEventSource(queue_url, app.handler, sqs_client=sqs, wait_time_seconds=0).run_once()
    assert (stats.received, stats.succeeded, stats.deleted, stats.delete_failures) == (1, 1, 0, 1)
    (refusal,) = iam.take_refusals()
    assert (refusal.principal, refusal.action, refusal.resource) == (
        "DeliverFunction",
        DELETE_MESSAGE,
        weakened.arns["DeliveryQueue"],
    )


def test_the_shovel_may_only_send_to_the_ingest_queue_as_deploy_documents(
    stack: LocalResources,
) -> None:
    ingest = {"QueueUrl": stack.queue_url("IngestQueue"), "Entries": []}
    delivery = {"QueueUrl": stack.queue_url("DeliveryQueue"), "Entries": []}
    assert iam.check("Shovel", "sqs", "sqs", "SendMessageBatch", ingest) == []
    (refusal,) = iam.check("Shovel", "sqs", "sqs", "SendMessageBatch", delivery)
    assert (refusal.action, refusal.resource) == ("sqs:SendMessage", stack.arns["DeliveryQueue"])
    assert stack.principals["Shovel"].policy_source == "deploy/shovel/iam-policy.json"


def test_every_function_of_the_template_acts_as_its_own_role(stack: LocalResources) -> None:
    roles = {
        name: principal.policy_source
        for name, principal in stack.principals.items()
        if name != "Shovel"
    }
    functions = {
        name: resource["Properties"]["Role"]["Fn::GetAtt"][0]
        for name, resource in load_template()["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }
    assert roles == functions


def test_the_suite_fails_a_test_when_ingest_may_not_read_the_claims_table(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the grant removed from template.yaml, the existing ingest test of a completed claim
    fails, naming the action: the suite would have caught the missing grant.

    The ingest test runs in a pytest session of its own, with the suite's own plugins (the
    guard's per-test check is what fails it) and its own moto server, but in this process
    (pytester): a subprocess cost a Python start and every import again (about 9 s of CPU
    instead of 6)."""
    monkeypatch.chdir(ROOT)  # pytester made its own directory the current one
    (tmp_path / "template.yaml").write_text(
        yaml.safe_dump(without_ingest_claims_read(load_template()), sort_keys=False)
    )
    for folder in ("functions", "deploy", "layers"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    test = (
        "tests/integration/test_ingest.py"
        "::test_a_completed_claim_whose_lease_ended_is_never_taken_over"
    )
    monkeypatch.setenv("JOBHOOKS_TEMPLATE", str(tmp_path / "template.yaml"))
    # One test's session: its report of unexercised grants is not the suite's.
    for name in SUITE_REPORT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    recorded = pytester.inline_run(
        test,
        "-q",
        "-p",
        "no:cacheprovider",
        # The outer session's alarm and fault handler stay as they are.
        "-p",
        "no:timeout",
        "-p",
        "no:faulthandler",
        f"--rootdir={ROOT}",
        f"--basetemp={tmp_path / 'inner'}",
    )
    assert recorded.ret == pytest.ExitCode.TESTS_FAILED
    # The guard's check fails the test at teardown, naming the refused call (the test's own
    # assertion fails too, since ingest could not read the claim: that alone would prove
    # nothing about the guard).
    reports = recorded.getreports("pytest_runtest_logreport")
    (refused,) = [r for r in reports if r.when == "teardown" and r.failed]
    assert refused.nodeid == test
    assert "requests that real AWS would refuse" in refused.longreprtext
    assert "IngestFunction may not dynamodb:GetItem on arn:aws:dynamodb:" in refused.longreprtext
    assert "table/jobhooks-ClaimsTable" in refused.longreprtext


def test_every_allow_listed_grant_is_one_the_template_has_with_a_reason(
    stack: LocalResources,
) -> None:
    """tests/iam-grants-only-aws-exercises.yaml may not excuse a grant that is gone (or a typo)."""
    grants = {
        (grant.principal, grant.sid, grant.action)
        for principal in stack.principals.values()
        for grant in principal.policy.grants()
    }
    entries = allow_list()
    assert entries
    stale = [
        (entry["policy"], entry["sid"], action)
        for entry in entries
        for action in entry["actions"]
        if (entry["policy"], entry["sid"], action) not in grants
    ]
    assert stale == []


def test_the_report_lists_the_grants_no_test_exercised_except_the_allow_listed(
    stack: LocalResources,
) -> None:
    known = [g for p in stack.principals.values() for g in p.policy.grants()]
    exercised = {g for g in known if g.principal == "IngestRole"}
    missing = unexercised_grants(known, exercised, allow_list())
    assert not any(g.principal == "IngestRole" for g in missing)
    assert any(g.principal == "DeliverRole" and g.sid == "RecordAttempts" for g in missing)
    # Allow-listed: only real AWS writes the function's logs.
    assert not any(g.sid == "WriteOwnLogs" for g in missing)


def test_under_parallel_workers_the_report_counts_a_grant_any_worker_exercised(
    stack: LocalResources, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(EXERCISED_FILE_VARIABLE, raising=False)
    known = dict.fromkeys(g for p in stack.principals.values() for g in p.policy.grants())
    ingest = {g for g in known if g.principal == "IngestRole"}
    deliver = {g for g in known if g.principal == "DeliverRole"}
    workers = [SessionGrants(dict(known), ingest), SessionGrants(dict(known), deliver)]
    controller = SessionGrants()
    for worker in workers:
        workeroutput: dict[str, Any] = {}
        worker.hand_to_controller(workeroutput)
        controller.take_from_worker(workeroutput)

    report = controller.report()
    assert report is not None
    assert report.known == len(known)
    assert report.missing == unexercised_grants(list(known), ingest | deliver, allow_list())
    assert not any(g.principal in ("IngestRole", "DeliverRole") for g in report.missing)
    # Alone, the first worker would have called the second one's grants unexercised.
    alone = workers[0].report()
    assert alone is not None
    assert any(g.principal == "DeliverRole" and g.sid == "RecordAttempts" for g in alone.missing)
    # A session that ran no function has nothing to judge.
    assert SessionGrants().report() is None
