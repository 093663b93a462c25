"""template.yaml's analytics resources, checked against the jobhooks.analytics package.

The Glue columns and the Athena named queries are generated from the package
(scripts/generate-analytics-template.py); these tests compare the template with the package
directly, so neither the generator nor a hand edit can let them drift.
"""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import cfn_yaml
from jobhooks.analytics.columns import COLUMNS, PARTITION_KEY, TABLE_NAME, TABLE_PREFIX
from jobhooks.analytics.firehose import MAX_RECORD_BYTES
from jobhooks.analytics.pseudonymize import MIN_KEY_CHARS
from jobhooks.analytics.questions import Engine, questions, rows_query

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    loaded: dict[str, Any] = cfn_yaml.load(str(ROOT / "template.yaml"))
    return loaded


def props(template: dict[str, Any], logical_id: str) -> dict[str, Any]:
    properties: dict[str, Any] = template["Resources"][logical_id]["Properties"]
    return properties


def of_type(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == resource_type}


def arn(logical_id: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, "Arn"]}


# ---------------------------------------------------------------------------- the table


def test_glue_columns_are_the_core_column_list(template: dict[str, Any]) -> None:
    table = props(template, "AnalyticsTable")["TableInput"]
    assert table["Name"] == TABLE_NAME
    columns = table["StorageDescriptor"]["Columns"]
    assert [(c["Name"], c["Type"]) for c in columns] == [(c.name, c.glue_type) for c in COLUMNS]
    assert [(k["Name"], k["Type"]) for k in table["PartitionKeys"]] == [
        (PARTITION_KEY.name, PARTITION_KEY.glue_type)
    ]
    pseudonymous = {c["Name"] for c in columns if "pseudonymous" in c["Comment"]}
    assert pseudonymous == {"account_id", "job_id"}


def test_the_table_is_parquet_with_date_partitions_projected(template: dict[str, Any]) -> None:
    table = props(template, "AnalyticsTable")["TableInput"]
    storage = table["StorageDescriptor"]
    assert storage["SerdeInfo"]["SerializationLibrary"].endswith("ParquetHiveSerDe")
    assert storage["InputFormat"].endswith("MapredParquetInputFormat")
    assert storage["Location"] == {"Fn::Sub": f"s3://${{AnalyticsBucket}}/{TABLE_PREFIX}"}
    parameters = table["Parameters"]
    assert parameters["projection.enabled"] == "true"
    assert parameters["projection.dt.type"] == "date"
    assert parameters["projection.dt.format"] == "yyyy-MM-dd"
    assert parameters["projection.dt.range"] == {"Fn::Sub": "NOW-${AnalyticsRetentionDays}DAYS,NOW"}
    assert parameters["storage.location.template"] == {
        "Fn::Sub": f"s3://${{AnalyticsBucket}}/{TABLE_PREFIX}dt=${{!dt}}/"
    }
    assert props(template, "AnalyticsTable")["DatabaseName"] == {"Ref": "AnalyticsDatabase"}
    # No crawler: partition projection is the only partition source.
    assert not of_type(template, "AWS::Glue::Crawler")


def test_the_database_name_is_the_stack_name_fit_for_athena(template: dict[str, Any]) -> None:
    name = props(template, "AnalyticsDatabase")["DatabaseInput"]["Name"]
    assert name == {
        "Fn::Join": [
            "_",
            [{"Fn::Join": ["_", {"Fn::Split": ["-", {"Ref": "AWS::StackName"}]}]}, "analytics"],
        ]
    }


# ---------------------------------------------------------------------------- the questions


def test_every_reviewed_question_is_a_named_query_with_its_athena_text(
    template: dict[str, Any],
) -> None:
    named = {
        p["Properties"]["Name"]: p["Properties"]
        for p in of_type(template, "AWS::Athena::NamedQuery").values()
    }
    expected = {**questions(), "rows": rows_query()}
    assert set(named) == set(expected)
    for name, question in expected.items():
        query = named[name]
        assert query["QueryString"] == question.sql(Engine.ATHENA), name
        assert query["Database"] == {"Ref": "AnalyticsDatabase"}
        assert query["WorkGroup"] == {"Ref": "AnalyticsWorkGroup"}
        assert query["Description"] == question.question
        assert len(query["QueryString"]) <= 262_144  # NamedQuery's limit


def test_the_generated_blocks_are_current() -> None:
    spec = importlib.util.spec_from_file_location(
        "generate_analytics_template", ROOT / "scripts/generate-analytics-template.py"
    )
    assert spec and spec.loader
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    current = (ROOT / "template.yaml").read_text(encoding="utf-8")
    assert generator.render(current) == current, "run scripts/generate-analytics-template.py"


# ---------------------------------------------------------------------------- storage


@pytest.mark.parametrize("bucket", ["AnalyticsBucket", "AnalyticsResultsBucket"])
def test_buckets_are_encrypted_private_and_tls_only(template: dict[str, Any], bucket: str) -> None:
    properties = props(template, bucket)
    (rule,) = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
    assert properties["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert properties["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    (policy,) = [
        p["Properties"]
        for p in of_type(template, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": bucket}
    ]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Effect"] == "Deny" and statement["Principal"] == "*"
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert statement["Resource"] == [arn(bucket), {"Fn::Sub": f"${{{bucket}.Arn}}/*"}]


def test_rows_expire_after_the_retention_parameter(template: dict[str, Any]) -> None:
    (rule,) = props(template, "AnalyticsBucket")["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled" and "Prefix" not in rule and "Filter" not in rule
    assert rule["ExpirationInDays"] == {"Ref": "AnalyticsRetentionDays"}
    parameter = template["Parameters"]["AnalyticsRetentionDays"]
    assert (parameter["Default"], parameter["MinValue"]) == (400, 1)
    (results,) = props(template, "AnalyticsResultsBucket")["LifecycleConfiguration"]["Rules"]
    assert results["ExpirationInDays"] <= 30


# ---------------------------------------------------------------------------- Firehose


def test_the_delivery_stream_converts_rows_to_parquet_against_the_table(
    template: dict[str, Any],
) -> None:
    stream = props(template, "AnalyticsDeliveryStream")
    assert stream["DeliveryStreamType"] == "DirectPut"
    assert stream["DeliveryStreamEncryptionConfigurationInput"]["KeyType"] in (
        "AWS_OWNED_CMK",
        "CUSTOMER_MANAGED_CMK",
    )
    s3 = stream["ExtendedS3DestinationConfiguration"]
    assert s3["BucketARN"] == arn("AnalyticsBucket")
    assert s3["RoleARN"] == arn("AnalyticsDeliveryRole")
    assert s3["Prefix"] == f"{TABLE_PREFIX}dt=!{{timestamp:yyyy-MM-dd}}/"
    error_prefix = s3["ErrorOutputPrefix"]
    assert "!{firehose:error-output-type}" in error_prefix
    assert not error_prefix.startswith(TABLE_PREFIX)  # never read as rows
    # Format conversion requires a buffer of 64 MiB or more (128 at most).
    hints = s3["BufferingHints"]
    assert 64 <= hints["SizeInMBs"] <= 128 and 60 <= hints["IntervalInSeconds"] <= 900
    assert s3["CompressionFormat"] == "UNCOMPRESSED"
    conversion = s3["DataFormatConversionConfiguration"]
    assert conversion["Enabled"] is True
    # OpenX reads 2026-07-13T18:04:11.204Z (what AnalyticsRow.to_record writes) as a timestamp.
    assert "OpenXJsonSerDe" in conversion["InputFormatConfiguration"]["Deserializer"]
    assert "ParquetSerDe" in conversion["OutputFormatConfiguration"]["Serializer"]
    schema = conversion["SchemaConfiguration"]
    assert schema["DatabaseName"] == {"Ref": "AnalyticsDatabase"}
    assert schema["TableName"] == {"Ref": "AnalyticsTable"}
    assert schema["RoleARN"] == arn("AnalyticsDeliveryRole")
    assert schema["VersionId"] == "LATEST"
    logging = s3["CloudWatchLoggingOptions"]
    assert logging["Enabled"] is True
    group = logging["LogGroupName"]["Ref"]
    assert props(template, group)["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert MAX_RECORD_BYTES == 1000 * 1024


def test_the_delivery_role_may_do_only_what_firehose_needs(template: dict[str, Any]) -> None:
    role = props(template, "AnalyticsDeliveryRole")
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "firehose.amazonaws.com"}
    assert trust["Condition"] == {"StringEquals": {"sts:ExternalId": {"Ref": "AWS::AccountId"}}}
    (policy,) = role["Policies"]
    granted = {}
    for statement in policy["PolicyDocument"]["Statement"]:
        assert statement["Effect"] == "Allow"
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        resources = (
            statement["Resource"]
            if isinstance(statement["Resource"], list)
            else [statement["Resource"]]
        )
        assert "*" not in resources
        for action in actions:
            assert "*" not in action
            granted[action] = resources
    assert granted["s3:ListBucket"] == [arn("AnalyticsBucket")]
    assert granted["s3:PutObject"] == [{"Fn::Sub": "${AnalyticsBucket.Arn}/*"}]
    assert set(granted) == {
        "s3:GetBucketLocation",
        "s3:ListBucket",
        "s3:ListBucketMultipartUploads",
        "s3:PutObject",
        "s3:GetObject",
        "s3:AbortMultipartUpload",
        "glue:GetTable",
        "glue:GetTableVersion",
        "glue:GetTableVersions",
        "logs:PutLogEvents",
    }
    glue = {r["Fn::Sub"].rsplit(":", 1)[-1] for r in granted["glue:GetTable"]}
    assert glue == {
        "catalog",
        "database/${AnalyticsDatabase}",
        "table/${AnalyticsDatabase}/${AnalyticsTable}",
    }


def test_delivery_failures_alarm(template: dict[str, Any]) -> None:
    metrics = {
        a["Properties"]["MetricName"]
        for a in of_type(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"]["Namespace"] == "AWS/Firehose"
    }
    assert metrics == {"FailedConversion.Records", "DeliveryToS3.DataFreshness"}


def test_rows_ingest_could_not_write_alarm(template: dict[str, Any]) -> None:
    # IngestTelemetry counts AnalyticsWriteFailed; the dashboard shows it beside the events.
    (alarm,) = [
        a["Properties"]
        for a in of_type(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"]["MetricName"] == "AnalyticsWriteFailed"
    ]
    assert alarm["Namespace"] == "jobhooks"
    assert alarm["Dimensions"] == [{"Name": "service", "Value": {"Ref": "AWS::StackName"}}]
    assert (alarm["Statistic"], alarm["Threshold"]) == ("Sum", 0)
    assert '"AnalyticsWriteFailed"' in props(template, "Dashboard")["DashboardBody"]["Fn::Sub"]


# ---------------------------------------------------------------------------- the functions

PSEUDONYMIZATION_SECRET = {
    "Fn::If": [
        "PseudonymizeAnalytics",
        {"Ref": "AnalyticsPseudonymizationKey"},
        {"Ref": "AWS::NoValue"},
    ]
}


def variables(template: dict[str, Any], function: str) -> dict[str, Any]:
    found: dict[str, Any] = props(template, function)["Environment"]["Variables"]
    return found


def test_ingest_and_the_api_write_rows_to_the_stream_pseudonymized_when_asked(
    template: dict[str, Any],
) -> None:
    # The API writes rows too: a quarantine replay that is accepted runs the ingest use case.
    for function in ("IngestFunction", "ApiFunction"):
        given = variables(template, function)
        assert given["JOBHOOKS_ANALYTICS_STREAM"] == {"Ref": "AnalyticsDeliveryStream"}
        assert given["JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_SECRET_ARN"] == PSEUDONYMIZATION_SECRET
        assert "JOBHOOKS_ANALYTICS_DIR" not in given  # the local stack's only
    api = variables(template, "ApiFunction")
    assert api["JOBHOOKS_ANALYTICS_WORKGROUP"] == {"Ref": "AnalyticsWorkGroup"}
    assert api["JOBHOOKS_ANALYTICS_DATABASE"] == {"Ref": "AnalyticsDatabase"}
    assert "JOBHOOKS_ANALYTICS_WORKGROUP" not in variables(template, "IngestFunction")
    # One API call waits at most JOBHOOKS_ANALYTICS_QUERY_WAIT_SECONDS (10 s by default, the
    # settings allow 25): well under the function's timeout and API Gateway's 30 s.
    assert props(template, "ApiFunction")["Timeout"] == 15


def statements(template: dict[str, Any], role: str) -> list[dict[str, Any]]:
    (policy,) = props(template, role)["Policies"]
    found: list[dict[str, Any]] = policy["PolicyDocument"]["Statement"]
    return found


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def grants(
    template: dict[str, Any], role: str, prefixes: tuple[str, ...]
) -> set[tuple[str, str, str]]:
    """(action, resource, condition) of each grant of the role whose action starts so."""
    found = set()
    for statement in statements(template, role):
        for action in as_list(statement["Action"]):
            if action.startswith(prefixes):
                for resource in as_list(statement["Resource"]):
                    found.add((action, repr(resource), repr(statement.get("Condition"))))
    return found


def glue_arn(path: str) -> dict[str, str]:
    return {"Fn::Sub": f"arn:${{AWS::Partition}}:glue:${{AWS::Region}}:${{AWS::AccountId}}:{path}"}


def test_the_api_role_may_run_the_questions_and_nothing_more(template: dict[str, Any]) -> None:
    workgroup = {
        "Fn::Sub": "arn:${AWS::Partition}:athena:${AWS::Region}:${AWS::AccountId}"
        ":workgroup/${AnalyticsWorkGroup}"
    }
    glue = [
        glue_arn("catalog"),
        glue_arn("database/${AnalyticsDatabase}"),
        glue_arn("table/${AnalyticsDatabase}/${AnalyticsTable}"),
    ]
    rows_bucket = repr(arn("AnalyticsBucket"))
    rows_prefix = repr({"StringLike": {"s3:prefix": [TABLE_PREFIX + "*"]}})
    rows_objects = repr({"Fn::Sub": "${AnalyticsBucket.Arn}/" + TABLE_PREFIX + "*"})
    results_bucket = repr(arn("AnalyticsResultsBucket"))
    results_objects = repr({"Fn::Sub": "${AnalyticsResultsBucket.Arn}/*"})
    none = repr(None)
    assert grants(template, "ApiRole", ("athena:", "glue:", "s3:", "firehose:")) == {
        # AthenaEngine: start, poll, read the results; in the stack's workgroup only.
        ("athena:StartQueryExecution", repr(workgroup), none),
        ("athena:GetQueryExecution", repr(workgroup), none),
        ("athena:GetQueryResults", repr(workgroup), none),
        # Athena reads the schema as the caller: the one table (projection: no partitions) ...
        *{
            (action, repr(r), none)
            for action in ("glue:GetDatabase", "glue:GetTable")
            for r in glue
        },
        # ... and the table's objects, never Firehose's errors/ beside them. GetBucketLocation
        # carries no s3:prefix: under the listing's condition it would never be allowed ...
        ("s3:GetBucketLocation", rows_bucket, none),
        ("s3:ListBucket", rows_bucket, rows_prefix),
        ("s3:GetObject", rows_objects, none),
        # ... and writes the results where the workgroup puts them, for GetQueryResults.
        ("s3:GetBucketLocation", results_bucket, none),
        ("s3:ListBucket", results_bucket, none),
        ("s3:ListBucketMultipartUploads", results_bucket, none),
        ("s3:GetObject", results_objects, none),
        ("s3:PutObject", results_objects, none),
        ("s3:AbortMultipartUpload", results_objects, none),
        ("s3:ListMultipartUploadParts", results_objects, none),
        # A quarantine replay writes the row of the event it accepts.
        ("firehose:PutRecordBatch", repr(arn("AnalyticsDeliveryStream")), none),
    }
    # The ingest function writes rows and runs no query.
    assert grants(template, "IngestRole", ("athena:", "glue:", "s3:", "firehose:")) == {
        ("firehose:PutRecordBatch", repr(arn("AnalyticsDeliveryStream")), none)
    }


# ---------------------------------------------------------------------------- Athena


def test_the_workgroup_enforces_its_results_encryption_and_scan_limit(
    template: dict[str, Any],
) -> None:
    configuration = props(template, "AnalyticsWorkGroup")["WorkGroupConfiguration"]
    assert configuration["EnforceWorkGroupConfiguration"] is True
    assert configuration["BytesScannedCutoffPerQuery"] == {"Ref": "AnalyticsScanLimitBytes"}
    results = configuration["ResultConfiguration"]
    assert results["OutputLocation"] == {"Fn::Sub": "s3://${AnalyticsResultsBucket}/results/"}
    assert results["EncryptionConfiguration"]["EncryptionOption"] in ("SSE_S3", "SSE_KMS")
    assert configuration["EngineVersion"]["SelectedEngineVersion"] == "Athena engine version 3"
    limit = template["Parameters"]["AnalyticsScanLimitBytes"]
    assert limit["MinValue"] == 10_000_000 and limit["Default"] >= limit["MinValue"]


# ---------------------------------------------------------------------------- privacy


def test_the_pseudonymization_key_exists_only_when_asked_for(template: dict[str, Any]) -> None:
    secret = template["Resources"]["AnalyticsPseudonymizationKey"]
    assert secret["Condition"] == "PseudonymizeAnalytics"
    assert template["Conditions"]["PseudonymizeAnalytics"] == {
        "Fn::Equals": [{"Ref": "AnalyticsPseudonymize"}, "true"]
    }
    assert template["Parameters"]["AnalyticsPseudonymize"]["Default"] == "false"
    generated = secret["Properties"]["GenerateSecretString"]
    assert generated["PasswordLength"] >= MIN_KEY_CHARS and generated["ExcludePunctuation"] is True
    assert (
        template["Outputs"]["AnalyticsPseudonymizationKeyArn"]["Condition"]
        == "PseudonymizeAnalytics"
    )


def test_duckdb_stays_out_of_the_lambda_layer() -> None:
    requirements = (ROOT / "layers/jobhooks/requirements.txt").read_text().lower()
    names = {
        re.split(r"[\[<>=!~ ]", line.split("#")[0].strip())[0] for line in requirements.splitlines()
    }
    assert not names & {"duckdb", "sqlglot"}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    main = {re.split(r"[\[<>=!~ ]", d)[0] for d in project["dependencies"]}
    dev = {re.split(r"[\[<>=!~ ]", d)[0] for d in project["optional-dependencies"]["dev"]}
    assert "duckdb" in main and {"duckdb", "sqlglot"} <= dev
