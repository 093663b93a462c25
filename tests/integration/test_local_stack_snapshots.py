"""A provisioned stack put back from moto's snapshot is the stack a fresh provision gives.

The `stack` fixture provisions template.yaml once per moto server and restores a snapshot of
moto's whole state before each test (tests/fixtures/stack.py, `jobhooks_tools.local.moto_main`).
These tests change every kind of state a test can change (data, attributes, resources added
and deleted, secrets, keys, subscriptions, roles, buckets), restore, and compare everything
moto can list with what the provision left. Each test makes its changes and restores within
itself (the first twice, from the same snapshot), so none depends on which test ran before it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from jobhooks_tools.local import iam
from jobhooks_tools.local.moto_server import MotoServer, local_aws_environment
from jobhooks_tools.local.template import LocalResources

from tests.fixtures.stack import STACK, ProvisionedStacks, provision_stack


def fresh(stacks: ProvisionedStacks) -> LocalResources:
    return stacks.fresh(STACK, lambda: provision_stack(stacks.server.endpoint_url))


def everything(endpoint_url: str) -> dict[str, Any]:
    """All the state moto shows through the APIs the bridge (and its tests) use."""
    session = boto3.session.Session()

    def client(service: str) -> Any:
        return session.client(service, endpoint_url=endpoint_url)

    sqs, dynamodb, kms = client("sqs"), client("dynamodb"), client("kms")
    secrets, sns, iam_client, s3 = (
        client("secretsmanager"),
        client("sns"),
        client("iam"),
        client("s3"),
    )
    state: dict[str, Any] = {"queues": {}, "tables": {}, "keys": {}, "secrets": {}, "topics": {}}
    for url in sqs.list_queues().get("QueueUrls", []):
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        tags = sqs.list_queue_tags(QueueUrl=url).get("Tags", {})
        state["queues"][url] = {"attributes": attributes, "tags": tags}
    for name in dynamodb.list_tables()["TableNames"]:
        state["tables"][name] = {
            "description": dynamodb.describe_table(TableName=name)["Table"],
            "ttl": dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"],
            "items": dynamodb.scan(TableName=name)["Items"],
        }
    for key in kms.list_keys()["Keys"]:
        key_id = key["KeyId"]
        state["keys"][key_id] = {
            "metadata": kms.describe_key(KeyId=key_id)["KeyMetadata"],
            "rotation": kms.get_key_rotation_status(KeyId=key_id)["KeyRotationEnabled"],
        }
    state["aliases"] = kms.list_aliases()["Aliases"]
    listed = secrets.list_secrets(IncludePlannedDeletion=True)["SecretList"]
    for secret in listed:
        value = secrets.get_secret_value(SecretId=secret["ARN"])
        state["secrets"][secret["ARN"]] = {
            "listed": secret,
            "value": value.get("SecretString"),
            "version": value["VersionId"],
        }
    for topic in sns.list_topics()["Topics"]:
        arn = topic["TopicArn"]
        state["topics"][arn] = sns.get_topic_attributes(TopicArn=arn)["Attributes"]
    state["subscriptions"] = sns.list_subscriptions()["Subscriptions"]
    state["roles"] = iam_client.list_roles()["Roles"]
    state["buckets"] = [bucket["Name"] for bucket in s3.list_buckets()["Buckets"]]
    return state


def change_everything(stack: LocalResources) -> None:
    """What a test may leave behind, of every kind."""
    session = boto3.session.Session()
    sqs, dynamodb, kms = session.client("sqs"), session.client("dynamodb"), session.client("kms")
    secrets, sns = session.client("secretsmanager"), session.client("sns")
    types = stack.types
    # Data: a message in every queue (one delayed, one in flight), an item in every table.
    for logical_id in (k for k, kind in types.items() if kind == "AWS::SQS::Queue"):
        sqs.send_message(QueueUrl=stack.refs[logical_id], MessageBody=f"left by {logical_id}")
    ingest = stack.queue_url("IngestQueue")
    sqs.send_message(QueueUrl=ingest, MessageBody="delayed", DelaySeconds=60)
    received = sqs.receive_message(QueueUrl=ingest, VisibilityTimeout=300, WaitTimeSeconds=0)
    assert received.get("Messages"), "a message is in flight"
    tables = [k for k, kind in types.items() if kind == "AWS::DynamoDB::Table"]
    for logical_id in tables:
        dynamodb.put_item(
            TableName=stack.refs[logical_id], Item=an_item(dynamodb, stack, logical_id)
        )
    # Beyond data: attributes, resources deleted and added, values rotated, keys disabled.
    sqs.set_queue_attributes(QueueUrl=ingest, Attributes={"VisibilityTimeout": "1"})
    sqs.tag_queue(QueueUrl=ingest, Tags={"left": "behind"})
    sqs.delete_queue(QueueUrl=stack.queue_url("DeliveryQueue"))
    sqs.create_queue(QueueName="left-behind")
    dynamodb.delete_table(TableName=stack.table_name(tables[0]))
    dynamodb.create_table(
        TableName="left-behind",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for logical_id in (k for k, kind in types.items() if kind == "AWS::SecretsManager::Secret"):
        secrets.put_secret_value(SecretId=stack.refs[logical_id], SecretString="rotated")
    secrets.create_secret(Name="left-behind", SecretString="x")
    for logical_id in (k for k, kind in types.items() if kind == "AWS::KMS::Key"):
        kms.disable_key_rotation(KeyId=stack.refs[logical_id])
        kms.disable_key(KeyId=stack.refs[logical_id])
    new_key = kms.create_key(Description="left behind")["KeyMetadata"]["KeyId"]
    kms.create_alias(AliasName="alias/left-behind", TargetKeyId=new_key)
    topics = [k for k, kind in types.items() if kind == "AWS::SNS::Topic"]
    assert topics, "template.yaml has an SNS topic"
    for logical_id in topics:
        sns.subscribe(
            TopicArn=stack.refs[logical_id],
            Protocol="sqs",
            Endpoint=stack.arns["IngestQueue"],
        )
        sns.set_topic_attributes(
            TopicArn=stack.refs[logical_id], AttributeName="DisplayName", AttributeValue="left"
        )
    sns.create_topic(Name="left-behind")
    session.client("iam").create_role(
        RoleName="left-behind",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )
    s3 = session.client("s3")
    s3.create_bucket(Bucket="left-behind")
    s3.put_object(Bucket="left-behind", Key="object", Body=b"left behind")


def an_item(dynamodb: Any, stack: LocalResources, logical_id: str) -> dict[str, Any]:
    table = dynamodb.describe_table(TableName=stack.table_name(logical_id))["Table"]
    kinds = {a["AttributeName"]: a["AttributeType"] for a in table["AttributeDefinitions"]}
    values = {"S": {"S": "left-behind"}, "N": {"N": "1"}, "B": {"B": b"left-behind"}}
    return {name: values[kind] for name, kind in kinds.items()}


@pytest.fixture
def local_aws(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    """boto3 pointed at the worker's moto server, whose state these tests manage themselves."""
    for name, value in local_aws_environment(moto_server.endpoint_url).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return moto_server


def test_a_restore_undoes_every_kind_of_change(
    local_aws: MotoServer, provisioned_stacks: ProvisionedStacks
) -> None:
    stack = fresh(provisioned_stacks)
    provisioned = everything(local_aws.endpoint_url)
    # The provisioned stack is empty: the comparison below would see leftovers otherwise.
    assert provisioned["queues"] and provisioned["tables"] and provisioned["secrets"]
    for queue in provisioned["queues"].values():
        counts = [v for k, v in queue["attributes"].items() if k.startswith("ApproximateNumber")]
        assert counts == ["0", "0", "0"]
    assert all(table["items"] == [] for table in provisioned["tables"].values())
    assert provisioned["subscriptions"] == [] and provisioned["buckets"] == []
    times = dict(provisioned_stacks.provisioned)
    for _ in range(2):
        change_everything(stack)
        assert everything(local_aws.endpoint_url) != provisioned
        assert fresh(provisioned_stacks) == stack
        assert everything(local_aws.endpoint_url) == provisioned
    assert provisioned_stacks.provisioned == times, "restored, not provisioned again"
    # What was deleted works again: a message goes through the restored queue.
    sqs = boto3.client("sqs")
    sqs.send_message(QueueUrl=stack.queue_url("DeliveryQueue"), MessageBody="after the restore")
    (message,) = sqs.receive_message(QueueUrl=stack.queue_url("DeliveryQueue"))["Messages"]
    assert message["Body"] == "after the restore"


def test_the_stack_fixture_starts_where_a_restore_starts(
    stack: LocalResources, provisioned_stacks: ProvisionedStacks
) -> None:
    at_start = everything(stack.endpoint_url)
    change_everything(stack)
    assert fresh(provisioned_stacks) == stack
    assert everything(stack.endpoint_url) == at_start


def test_the_functions_act_as_the_restored_stacks_roles(
    local_aws: MotoServer, provisioned_stacks: ProvisionedStacks
) -> None:
    stack = fresh(provisioned_stacks)
    get_claim = {"TableName": stack.table_name("ClaimsTable"), "Key": {"event_id": {"S": "x"}}}
    assert iam.check("IngestFunction", "dynamodb", "dynamodb", "GetItem", get_claim) == []
    for _ in range(2):
        # An `aws` test (no stack) leaves the guard with no roles; the restore gives them back.
        iam.use([])
        (unknown,) = iam.check("IngestFunction", "dynamodb", "dynamodb", "GetItem", get_claim)
        assert "not a known principal" in unknown.reason
        assert fresh(provisioned_stacks) == stack
        assert iam.check("IngestFunction", "dynamodb", "dynamodb", "GetItem", get_claim) == []


def test_a_reset_empties_moto_and_the_snapshot_still_restores(
    local_aws: MotoServer, provisioned_stacks: ProvisionedStacks
) -> None:
    stack = fresh(provisioned_stacks)
    provisioned = everything(local_aws.endpoint_url)
    change_everything(stack)
    # What the `aws` fixture does for a test without a stack: moto's reset, which also resets
    # the backends the snapshot keeps.
    local_aws.reset()
    empty = everything(local_aws.endpoint_url)
    assert (empty["queues"], empty["tables"], empty["secrets"], empty["keys"]) == ({},) * 4
    assert fresh(provisioned_stacks) == stack
    assert everything(local_aws.endpoint_url) == provisioned


@pytest.fixture
def private_moto(local_aws: MotoServer) -> Iterator[MotoServer]:
    """A second emulator this test may restart (the worker's own stays up)."""
    server = MotoServer().start()
    try:
        yield server
    finally:
        server.stop()


def test_a_server_started_again_is_provisioned_again(
    private_moto: MotoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in local_aws_environment(private_moto.endpoint_url).items():
        monkeypatch.setenv(name, value)
    stacks = ProvisionedStacks(private_moto)
    first = fresh(stacks)
    assert fresh(stacks) == first
    assert stacks.provisioned == {STACK: 1}
    assert private_moto.restore("never-taken") is False
    private_moto.stop()
    private_moto.start()  # the same port, no snapshot: the stack is provisioned again
    again = fresh(stacks)
    assert stacks.provisioned == {STACK: 2}
    assert again.queue_url("IngestQueue") == first.queue_url("IngestQueue")
    assert boto3.client("sqs").list_queues()["QueueUrls"]
