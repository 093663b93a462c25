"""jobhooks_tools.local.template builds, on moto's server, exactly the queues and tables of
template.yaml.

The expectations are read from template.yaml with cfn-lint's own parser (not with the module
under test), so a template change and a provisioning bug cannot cancel out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from cfnlint.decode import cfn_yaml
from jobhooks.ingest.settings import IngestSettings
from jobhooks.management.settings import ManagementSettings
from jobhooks_tools.local.dev_stack import DevStack, DevStackSettings
from jobhooks_tools.local.moto_server import MotoServer
from jobhooks_tools.local.template import (
    LocalResources,
    LocalTemplateError,
    find_template,
    load_template,
    provision,
)

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE: dict[str, Any] = cfn_yaml.load(str(ROOT / "template.yaml"))
SQS_DEFAULTS = {"VisibilityTimeout": 30, "MessageRetentionPeriod": 345_600}
KEY_HEX = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"


def of_type(resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource["Properties"]
        for logical_id, resource in TEMPLATE["Resources"].items()
        if resource["Type"] == resource_type
    }


QUEUES = of_type("AWS::SQS::Queue")
TABLES = of_type("AWS::DynamoDB::Table")


@pytest.fixture
def resources(aws: MotoServer) -> LocalResources:
    return provision(endpoint_url=aws.endpoint_url)


def test_every_queue_has_the_template_attributes(resources: LocalResources) -> None:
    sqs = boto3.client("sqs")
    assert {k for k, t in resources.types.items() if t == "AWS::SQS::Queue"} == set(QUEUES)
    for logical_id, spec in QUEUES.items():
        url = resources.queue_url(logical_id)
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        assert attributes["QueueArn"] == resources.arns[logical_id]
        assert attributes["QueueArn"].endswith(":jobhooks-" + logical_id)
        for name, default in SQS_DEFAULTS.items():
            assert int(attributes[name]) == spec.get(name, default), (logical_id, name)
        assert attributes["SqsManagedSseEnabled"] == "true"
        redrive = spec.get("RedrivePolicy")
        if redrive is None:
            assert "RedrivePolicy" not in attributes, logical_id
            continue
        actual = json.loads(attributes["RedrivePolicy"])
        dlq = redrive["deadLetterTargetArn"]["Fn::GetAtt"][0]
        assert actual["deadLetterTargetArn"] == resources.arns[dlq]
        assert int(actual["maxReceiveCount"]) == redrive["maxReceiveCount"]


def describe_indexes(description: dict[str, Any]) -> dict[str, Any]:
    return {
        index["IndexName"]: (index["KeySchema"], index["Projection"]["ProjectionType"])
        for index in description.get("GlobalSecondaryIndexes", [])
    }


def test_every_table_has_the_template_keys_indexes_and_ttl(resources: LocalResources) -> None:
    dynamodb = boto3.client("dynamodb")
    assert {k for k, t in resources.types.items() if t == "AWS::DynamoDB::Table"} == set(TABLES)
    for logical_id, spec in TABLES.items():
        name = resources.table_name(logical_id)
        description = dynamodb.describe_table(TableName=name)["Table"]
        assert description["KeySchema"] == spec["KeySchema"]
        assert {
            (d["AttributeName"], d["AttributeType"]) for d in description["AttributeDefinitions"]
        } == {(d["AttributeName"], d["AttributeType"]) for d in spec["AttributeDefinitions"]}
        assert describe_indexes(description) == {
            index["IndexName"]: (index["KeySchema"], index["Projection"]["ProjectionType"])
            for index in spec.get("GlobalSecondaryIndexes", [])
        }
        ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        wanted = spec.get("TimeToLiveSpecification")
        if wanted:
            assert ttl["TimeToLiveStatus"] == "ENABLED", logical_id
            assert ttl["AttributeName"] == wanted["AttributeName"]
        else:
            assert ttl["TimeToLiveStatus"] == "DISABLED", logical_id


def test_key_and_fetcher_keys_secret_exist(resources: LocalResources) -> None:
    key = boto3.client("kms").describe_key(KeyId=resources.refs["SubscriptionSecretsKey"])
    assert key["KeyMetadata"]["Enabled"] is True
    secret = boto3.client("secretsmanager").get_secret_value(
        SecretId=resources.refs["FetcherKeysSecret"]
    )
    # Nobody passed keys: the template's placeholder, which is not a key.
    template_secret = TEMPLATE["Resources"]["FetcherKeysSecret"]["Properties"]
    assert secret["SecretString"] == template_secret["SecretString"]
    assert secret["Name"] == "jobhooks/fetcher-keys"


def test_environment_points_the_functions_at_the_local_resources(
    resources: LocalResources,
) -> None:
    environment = resources.environment()
    assert environment["JOBHOOKS_INGEST_QUEUE_URL"] == resources.queue_url("IngestQueue")
    assert environment["JOBHOOKS_DELIVERY_DLQ_URL"] == resources.queue_url(
        "DeliveryDeadLetterQueue"
    )
    assert environment["JOBHOOKS_CLAIMS_TABLE"] == resources.table_name("ClaimsTable")
    assert environment["JOBHOOKS_KMS_KEY_ID"] == resources.refs["SubscriptionSecretsKey"]
    assert environment["JOBHOOKS_FETCHER_KEYS_SECRET_ARN"] == resources.refs["FetcherKeysSecret"]
    assert environment["JOBHOOKS_DEDUP_RETENTION_DAYS"] == "7"
    assert environment["JOBHOOKS_RETRY_SCHEDULE"] == "0,5,300,1800,7200,18000,36000,36000"
    assert all(name.startswith("JOBHOOKS_") for name in environment)
    # One function's view holds only what the template gives that function.
    assert "JOBHOOKS_DELIVERY_CONCURRENCY" not in resources.environment("IngestFunction")
    assert "JOBHOOKS_FETCHER_KEYS_SECRET_ARN" in resources.environment("IngestFunction")


def test_functions_carry_their_event_source_settings(resources: LocalResources) -> None:
    ingest = resources.functions["IngestFunction"]
    assert (ingest.queue, ingest.timeout_seconds, ingest.batch_size) == ("IngestQueue", 40, 10)
    assert ingest.code_uri == "functions/ingest/" and ingest.handler == "app.handler"
    deliver = resources.functions["DeliverFunction"]
    assert (deliver.queue, deliver.timeout_seconds) == ("DeliveryQueue", 60)
    # The template's batching windows (0 by default), which the local poller honours.
    assert ingest.batching_window_seconds == deliver.batching_window_seconds == 0
    assert resources.functions["ApiFunction"].queue is None
    assert ingest.variables["POWERTOOLS_SERVICE_NAME"] == "jobhooks"


def test_provisioning_twice_reuses_everything(aws: MotoServer) -> None:
    first = provision(endpoint_url=aws.endpoint_url)
    counts = (
        len(boto3.client("sqs").list_queues()["QueueUrls"]),
        len(boto3.client("dynamodb").list_tables()["TableNames"]),
        len(boto3.client("kms").list_keys()["Keys"]),
        len(boto3.client("secretsmanager").list_secrets()["SecretList"]),
    )
    second = provision(endpoint_url=aws.endpoint_url)
    assert second == first
    assert counts == (
        len(boto3.client("sqs").list_queues()["QueueUrls"]),
        len(boto3.client("dynamodb").list_tables()["TableNames"]),
        len(boto3.client("kms").list_keys()["Keys"]),
        len(boto3.client("secretsmanager").list_secrets()["SecretList"]),
    )


def test_fetcher_keys_are_set_and_replaced_but_never_reset(aws: MotoServer) -> None:
    secrets = boto3.client("secretsmanager")
    resources = provision(fetcher_keys=[KEY_HEX], endpoint_url=aws.endpoint_url)
    arn = resources.refs["FetcherKeysSecret"]
    assert secrets.get_secret_value(SecretId=arn)["SecretString"] == KEY_HEX
    rotated = ["ff" * 32, KEY_HEX]
    provision(fetcher_keys=rotated, endpoint_url=aws.endpoint_url)
    assert secrets.get_secret_value(SecretId=arn)["SecretString"] == ",".join(rotated)
    provision(endpoint_url=aws.endpoint_url)
    assert secrets.get_secret_value(SecretId=arn)["SecretString"] == ",".join(rotated)


def test_prefix_and_parameters_change_names_and_settings(aws: MotoServer) -> None:
    resources = provision(
        prefix="jh-test", parameters={"DedupRetentionDays": 3}, endpoint_url=aws.endpoint_url
    )
    assert resources.queue_url("IngestQueue").endswith("/jh-test-IngestQueue")
    assert resources.names["FetcherKeysSecret"] == "jh-test/fetcher-keys"
    assert resources.environment()["JOBHOOKS_DEDUP_RETENTION_DAYS"] == "3"
    with pytest.raises(LocalTemplateError, match="unknown template parameters"):
        provision(parameters={"NoSuchParameter": 1}, endpoint_url=aws.endpoint_url)


def test_the_local_stack_gives_ingest_and_replay_the_ce_source_allowlist(aws: MotoServer) -> None:
    unchecked = provision(endpoint_url=aws.endpoint_url)
    assert unchecked.environment()["JOBHOOKS_ALLOWED_SOURCES"] == ""  # not checked
    checked = provision(
        parameters={"AllowedSources": "//lerian.fetcher/worker,//b"}, endpoint_url=aws.endpoint_url
    )
    for function in ("IngestFunction", "ApiFunction"):
        environment = checked.environment(function)
        assert environment["JOBHOOKS_ALLOWED_SOURCES"] == "//lerian.fetcher/worker,//b"
    # What `jobhooks dev` puts into os.environ is what the ingest settings read.
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name, value in checked.environment().items():
            monkeypatch.setenv(name, value)
        policy = IngestSettings.from_env().verification_policy(keys=())
    assert policy.allowed_sources == frozenset({"//lerian.fetcher/worker", "//b"})


def test_the_local_api_reads_first_attempt_pages_from_the_local_table(
    resources: LocalResources,
) -> None:
    table = resources.table_name("FirstAttemptsTable")
    key = boto3.client("dynamodb").describe_table(TableName=table)["Table"]["KeySchema"]
    assert [(k["AttributeName"], k["KeyType"]) for k in key] == [
        ("subscription_id", "HASH"),
        ("batch_id", "RANGE"),
    ]
    for function in ("IngestFunction", "ApiFunction"):
        assert resources.environment(function)["JOBHOOKS_FIRST_ATTEMPTS_TABLE"] == table
    # What `jobhooks dev` (and the local API server it runs) puts into os.environ.
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name, value in resources.environment().items():
            monkeypatch.setenv(name, value)
        assert ManagementSettings.from_env().first_attempts_table == table


def test_refuses_to_run_without_a_local_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with pytest.raises(LocalTemplateError, match="no local endpoint"):
        provision()


def test_loader_reads_short_tags_as_long_form() -> None:
    template = load_template(ROOT / "template.yaml")
    redrive = template["Resources"]["IngestQueue"]["Properties"]["RedrivePolicy"]
    assert redrive["deadLetterTargetArn"] == {"Fn::GetAtt": ["IngestDeadLetterQueue", "Arn"]}
    assert template == json.loads(json.dumps(TEMPLATE))


# ---------------------------------------------------------------------------- analytics

ANALYTICS_TYPES = {
    "AWS::KinesisFirehose::DeliveryStream",
    "AWS::S3::Bucket",
    "AWS::Glue::Database",
    "AWS::Glue::Table",
    "AWS::Athena::WorkGroup",
    "AWS::Athena::NamedQuery",
}


def with_analytics_variables(pseudonymize_else: Any) -> dict[str, Any]:
    """The template with the analytics variables a function of the next phase will carry."""
    template = load_template(ROOT / "template.yaml")
    variables = template["Resources"]["IngestFunction"]["Properties"]["Environment"]["Variables"]
    variables["JOBHOOKS_ANALYTICS_STREAM"] = {"Ref": "AnalyticsDeliveryStream"}
    variables["JOBHOOKS_ANALYTICS_WORKGROUP"] = {"Ref": "AnalyticsWorkGroup"}
    variables["JOBHOOKS_ANALYTICS_BUCKET_ARN"] = {"Fn::GetAtt": ["AnalyticsBucket", "Arn"]}
    variables["JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_SECRET_ARN"] = {
        "Fn::If": [
            "PseudonymizeAnalytics",
            {"Ref": "AnalyticsPseudonymizationKey"},
            pseudonymize_else,
        ]
    }
    return template


def test_analytics_resources_are_left_to_the_embedded_sink_and_duckdb(
    resources: LocalResources,
) -> None:
    assert {r["Type"] for r in TEMPLATE["Resources"].values()} >= ANALYTICS_TYPES
    assert not set(resources.types.values()) & ANALYTICS_TYPES
    assert "AnalyticsPseudonymizationKey" not in resources.refs  # off by default
    assert not boto3.client("firehose").list_delivery_streams()["DeliveryStreamNames"]
    assert not boto3.client("s3").list_buckets()["Buckets"]


def test_a_variable_naming_an_analytics_resource_is_left_out_locally(aws: MotoServer) -> None:
    resources = provision(
        with_analytics_variables({"Ref": "AWS::NoValue"}), endpoint_url=aws.endpoint_url
    )
    ingest = resources.environment("IngestFunction")
    for name in (
        "JOBHOOKS_ANALYTICS_STREAM",
        "JOBHOOKS_ANALYTICS_WORKGROUP",
        "JOBHOOKS_ANALYTICS_BUCKET_ARN",
        "JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_SECRET_ARN",
    ):
        assert name not in ingest, name
    assert ingest["JOBHOOKS_CLAIMS_TABLE"] == resources.table_name("ClaimsTable")


def test_pseudonymization_on_creates_a_generated_key_locally(aws: MotoServer) -> None:
    resources = provision(
        with_analytics_variables(""),
        parameters={"AnalyticsPseudonymize": "true"},
        endpoint_url=aws.endpoint_url,
    )
    arn = resources.refs["AnalyticsPseudonymizationKey"]
    assert (
        resources.names["AnalyticsPseudonymizationKey"] == "jobhooks/analytics-pseudonymization-key"
    )
    assert (
        resources.environment("IngestFunction")["JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_SECRET_ARN"]
        == arn
    )
    key = boto3.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"]
    assert len(key) == 64 and key.isalnum()
    # Provisioning again keeps the key: the pseudonyms already written stay valid.
    again = provision(
        with_analytics_variables(""),
        parameters={"AnalyticsPseudonymize": "true"},
        endpoint_url=aws.endpoint_url,
    )
    assert (
        boto3.client("secretsmanager").get_secret_value(
            SecretId=again.refs["AnalyticsPseudonymizationKey"]
        )["SecretString"]
        == key
    )


def test_a_sub_naming_an_analytics_resource_says_it_has_no_local_counterpart(
    aws: MotoServer,
) -> None:
    template = load_template(ROOT / "template.yaml")
    variables = template["Resources"]["IngestFunction"]["Properties"]["Environment"]["Variables"]
    variables["JOBHOOKS_ANALYTICS_LOCATION"] = {"Fn::Sub": "s3://${AnalyticsBucket}/rows/"}
    with pytest.raises(LocalTemplateError, match="AnalyticsBucket, which has no local counterpart"):
        provision(template, endpoint_url=aws.endpoint_url)


def test_the_dev_stack_takes_fractional_batching_windows_per_function(
    resources: LocalResources,
) -> None:
    # bench/cost.py --time-scale divides the windows; Lambda itself takes whole seconds.
    stack = DevStack(DevStackSettings(batching_windows={"IngestFunction": 0.5}))
    assert stack.batching_window(resources.functions["IngestFunction"]) == 0.5
    # A function without an override keeps the template's window (0 by default).
    assert stack.batching_window(resources.functions["DeliverFunction"]) == 0.0


def test_the_checkouts_template_is_found_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A directory outside the checkout, with a decoy template.yaml above the working directory:
    # the checkout this package lives in wins over a search from the working directory.
    (tmp_path / "template.yaml").write_text("Resources: {}\n")
    elsewhere = tmp_path / "somewhere" / "else"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("JOBHOOKS_TEMPLATE", raising=False)
    assert find_template() == ROOT / "template.yaml"
