"""template.yaml checked against the rules AWS would only enforce at deploy time, or never.

cfn-lint (with the serverless rules) catches schema errors; it does not catch a queue whose
visibility timeout is shorter than its consumer's timeout, a missing partial-batch response, a
wildcard in a policy or a table that drifted from docs/architecture.md. These tests do.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import cfn_yaml
from jobhooks.inbound.envelope import SQS_MAX_MESSAGE_BYTES

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

FUNCTION = "AWS::Serverless::Function"
QUEUE = "AWS::SQS::Queue"
TABLE = "AWS::DynamoDB::Table"

# Lambda's rule for SQS event sources (services-sqs-configure): visibility >= 6x the timeout.
VISIBILITY_FACTOR = 6
# SQS caps the total visibility of one receive at 12 h: no single retry delay may exceed it.
MAX_VISIBILITY_SECONDS = 43_200
FOUR_DAYS = 4 * 86_400
FOURTEEN_DAYS = 14 * 86_400

# Actions that IAM only accepts on Resource "*". None of ours needs one today; add an entry with
# its reason if that changes (e.g. "xray:PutTraceSegments": "X-Ray has no resource ARNs").
STAR_RESOURCE_ACTIONS: dict[str, str] = {}

# Tables whose items expire (docs/architecture.md: `expires_at` is the TTL attribute).
TABLES_WITH_TTL = {"ClaimsTable", "DeliveriesTable", "QuarantineTable"}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    loaded: dict[str, Any] = cfn_yaml.load(str(TEMPLATE))
    return loaded


def resources(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == resource_type}


def properties(template: dict[str, Any], logical_id: str) -> dict[str, Any]:
    props: dict[str, Any] = template["Resources"][logical_id].get("Properties", {})
    return props


def function_setting(template: dict[str, Any], function: str, key: str) -> Any:
    globals_ = template.get("Globals", {}).get("Function", {})
    return properties(template, function).get(key, globals_.get(key))


def function_variables(template: dict[str, Any], function: str) -> dict[str, Any]:
    merged = dict(
        template.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    )
    merged.update(properties(template, function).get("Environment", {}).get("Variables", {}))
    return merged


def getatt_target(value: Any) -> tuple[str, str]:
    assert isinstance(value, dict) and "Fn::GetAtt" in value, f"expected !GetAtt, got {value!r}"
    target = value["Fn::GetAtt"]
    resource, attribute = target.split(".", 1) if isinstance(target, str) else target
    return str(resource), str(attribute)


def sqs_event_sources(template: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(function, queue logical id, event properties) for every SQS event of every function."""
    for function, resource in resources(template, FUNCTION).items():
        for event in resource["Properties"].get("Events", {}).values():
            if event["Type"] == "SQS":
                queue, attribute = getatt_target(event["Properties"]["Queue"])
                assert attribute == "Arn"
                yield function, queue, event["Properties"]


def parameter_default(template: dict[str, Any], value: Any) -> Any:
    if isinstance(value, dict) and "Ref" in value:
        return template["Parameters"][value["Ref"]]["Default"]
    return value


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


# ---------------------------------------------------------------------------- SQS and Lambda


def test_every_function_has_the_expected_sqs_event_source(template: dict[str, Any]) -> None:
    consumers = {function: queue for function, queue, _ in sqs_event_sources(template)}
    assert consumers == {
        "IngestFunction": "IngestQueue",
        "DeliverFunction": "DeliveryQueue",
        "SpillFunction": "SpillQueue",
    }


def test_every_sqs_event_source_reports_batch_item_failures(template: dict[str, Any]) -> None:
    for function, _, event in sqs_event_sources(template):
        assert event.get("FunctionResponseTypes") == ["ReportBatchItemFailures"], function


def test_sqs_event_sources_take_batch_size_and_concurrency_from_parameters(
    template: dict[str, Any],
) -> None:
    for function, _, event in sqs_event_sources(template):
        if function == "SpillFunction":
            # Rare, small work: fixed, and as little concurrency as Lambda allows.
            assert (event["BatchSize"], event["ScalingConfig"]["MaximumConcurrency"]) == (10, 2)
            continue
        assert set(event["BatchSize"]) == {"Ref"}, function
        assert set(event["ScalingConfig"]["MaximumConcurrency"]) == {"Ref"}, function
        batch = template["Parameters"][event["BatchSize"]["Ref"]]
        concurrency = template["Parameters"][event["ScalingConfig"]["MaximumConcurrency"]["Ref"]]
        # Above 10 a standard queue needs a batching window; Lambda allows 2..1000 concurrency.
        assert 1 <= batch["MinValue"] <= batch["Default"] <= batch["MaxValue"] <= 10
        assert 2 <= concurrency["MinValue"] <= concurrency["Default"] <= concurrency["MaxValue"]
        assert concurrency["MaxValue"] <= 1000
        # Lambda's window is 0..300 s; 0 (no waiting) by default, so latency is unchanged.
        window = template["Parameters"][event["MaximumBatchingWindowInSeconds"]["Ref"]]
        assert 0 == window["MinValue"] == window["Default"] and window["MaxValue"] == 300


def test_queue_visibility_is_at_least_six_times_the_consumer_timeout(
    template: dict[str, Any],
) -> None:
    for function, queue, _ in sqs_event_sources(template):
        timeout = function_setting(template, function, "Timeout")
        visibility = properties(template, queue)["VisibilityTimeout"]
        assert visibility >= VISIBILITY_FACTOR * timeout, (queue, visibility, function, timeout)


def test_function_timeouts(template: dict[str, Any]) -> None:
    timeouts = {f: function_setting(template, f, "Timeout") for f in resources(template, FUNCTION)}
    assert timeouts == {
        # FirstAttemptSeconds (at most 30) and 10 s for the writes after it.
        "IngestFunction": 40,
        "DeliverFunction": 60,
        # A message is one write; a target that failed is not retried within the batch.
        "SpillFunction": 60,
        "ApiFunction": 15,
        "PortalFunction": 15,
        # One job_health_window query per tenant and window, each waited for 40 s at most.
        "AlertsFunction": 60,
        # API Gateway waits at most 10 s for an authorizer.
        "AuthorizerFunction": 5,
    }


def test_every_work_queue_redrives_to_a_dead_letter_queue_that_accepts_only_it(
    template: dict[str, Any],
) -> None:
    for _, queue, _ in sqs_event_sources(template):
        redrive = properties(template, queue)["RedrivePolicy"]
        dlq, attribute = getatt_target(redrive["deadLetterTargetArn"])
        assert attribute == "Arn" and template["Resources"][dlq]["Type"] == QUEUE
        assert redrive["maxReceiveCount"] >= 5, queue
        allow = properties(template, dlq)["RedriveAllowPolicy"]
        assert allow["redrivePermission"] == "byQueue"
        (source,) = allow["sourceQueueArns"]
        # The source's ARN is spelled out from its name (a !GetAtt would be circular).
        queue_name = properties(template, queue)["QueueName"]["Fn::Sub"]
        assert source["Fn::Sub"].endswith(":" + queue_name), (dlq, source, queue_name)


def test_ingest_queue_allows_at_least_five_receives(template: dict[str, Any]) -> None:
    assert properties(template, "IngestQueue")["RedrivePolicy"]["maxReceiveCount"] >= 5


def test_dead_letter_queues_keep_messages_14_days(template: dict[str, Any]) -> None:
    for _, queue, _ in sqs_event_sources(template):
        dlq, _ = getatt_target(properties(template, queue)["RedrivePolicy"]["deadLetterTargetArn"])
        assert properties(template, dlq)["MessageRetentionPeriod"] == FOURTEEN_DAYS
        # A redriven message keeps its enqueue time: the DLQ must outlive the source queue.
        assert properties(template, queue)["MessageRetentionPeriod"] < FOURTEEN_DAYS


def test_delivery_queue_outlives_the_retry_schedule(template: dict[str, Any]) -> None:
    schedule = [int(s) for s in template["Parameters"]["RetrySchedule"]["Default"].split(",")]
    assert len(schedule) >= 8
    assert all(delay < MAX_VISIBILITY_SECONDS for delay in schedule)
    queue = properties(template, "DeliveryQueue")
    assert queue["MessageRetentionPeriod"] >= max(FOUR_DAYS, sum(schedule))
    # The redrive is a safety net behind the function's own parking after the last attempt.
    assert queue["RedrivePolicy"]["maxReceiveCount"] > len(schedule)


def test_every_queue_is_encrypted(template: dict[str, Any]) -> None:
    for queue in resources(template, QUEUE):
        assert properties(template, queue).get("SqsManagedSseEnabled") is True, queue


# ---------------------------------------------------------------------------- IAM


def identity_statements(template: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for logical_id, resource in template["Resources"].items():
        props = resource.get("Properties", {})
        documents: list[Any] = []
        if resource["Type"] == "AWS::IAM::Role":
            documents += [policy["PolicyDocument"] for policy in props.get("Policies", [])]
        elif resource["Type"] in ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy"):
            documents.append(props["PolicyDocument"])
        elif resource["Type"] == FUNCTION:
            documents += [p for p in as_list(props.get("Policies", [])) if isinstance(p, dict)]
        for document in documents:
            for statement in as_list(document.get("Statement", [])):
                # A statement under a condition counts as granted (its condition's true case).
                if set(statement) == {"Fn::If"}:
                    statement = statement["Fn::If"][1]
                yield logical_id, statement


def policy_statements(template: dict[str, Any], role: str) -> list[Any]:
    """The role's statements as written (a conditional one still wrapped in its Fn::If)."""
    props = template["Resources"][role]["Properties"]
    return [
        statement
        for policy in props.get("Policies", [])
        for statement in as_list(policy["PolicyDocument"]["Statement"])
    ]


def test_functions_run_as_roles_written_in_the_template(template: dict[str, Any]) -> None:
    # Without `Role`, SAM attaches AWS managed policies whose statements use Resource "*".
    for function in resources(template, FUNCTION):
        role, attribute = getatt_target(properties(template, function)["Role"])
        assert attribute == "Arn" and template["Resources"][role]["Type"] == "AWS::IAM::Role"
        assert "Policies" not in properties(template, function), function


def test_no_identity_policy_allows_every_action(template: dict[str, Any]) -> None:
    statements = list(identity_statements(template))
    assert statements
    for logical_id, statement in statements:
        for action in as_list(statement.get("Action", [])):
            assert "*" not in action, (logical_id, statement.get("Sid"), action)
        assert "NotAction" not in statement, (logical_id, statement.get("Sid"))


def test_no_identity_policy_uses_a_star_resource(template: dict[str, Any]) -> None:
    for logical_id, statement in identity_statements(template):
        resources_ = as_list(statement.get("Resource", []))
        assert resources_, (logical_id, statement.get("Sid"))
        if "*" in resources_:
            unexplained = set(as_list(statement["Action"])) - set(STAR_RESOURCE_ACTIONS)
            assert not unexplained, (logical_id, statement.get("Sid"), unexplained)
        assert "NotResource" not in statement, (logical_id, statement.get("Sid"))


def test_key_policy_delegates_to_iam_and_grants_nothing_else(template: dict[str, Any]) -> None:
    # A key policy's Resource "*" means "this key". The account-root statement is AWS's default
    # key policy: it lets IAM policies (the function roles) grant use of the key.
    for key in resources(template, "AWS::KMS::Key"):
        props = properties(template, key)
        assert props["EnableKeyRotation"] is True
        (statement,) = props["KeyPolicy"]["Statement"]
        principal = statement["Principal"]["AWS"]["Fn::Sub"]
        assert principal == "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"
        assert statement["Effect"] == "Allow" and statement["Resource"] == "*"


def statements_of_role(template: dict[str, Any], role: str) -> list[dict[str, Any]]:
    return [s for logical_id, s in identity_statements(template) if logical_id == role]


def granted(template: dict[str, Any], role: str) -> set[tuple[str, str]]:
    """(action, resource as text) pairs the role's statements allow."""
    pairs = set()
    for statement in statements_of_role(template, role):
        for action in as_list(statement["Action"]):
            for resource in as_list(statement["Resource"]):
                pairs.add((action, repr(resource)))
    return pairs


def arn_of(logical_id: str) -> str:
    return repr({"Fn::GetAtt": [logical_id, "Arn"]})


def actions_by_resource(template: dict[str, Any], role: str) -> dict[str, set[str]]:
    """The actions the role's statements allow, per resource (as text)."""
    by_resource: dict[str, set[str]] = {}
    for action, resource in granted(template, role):
        by_resource.setdefault(resource, set()).add(action)
    return by_resource


def index_arn(table: str, index: str) -> str:
    return repr({"Fn::Sub": f"${{{table}.Arn}}/index/{index}"})


FETCHER_KEYS_SECRET = repr(
    {
        "Fn::If": [
            "CreateFetcherKeysSecret",
            {"Ref": "FetcherKeysSecret"},
            {"Ref": "FetcherKeysSecretArn"},
        ]
    }
)


PSEUDONYMIZATION_KEY = repr(
    {
        "Fn::If": [
            "PseudonymizeAnalytics",
            {"Ref": "AnalyticsPseudonymizationKey"},
            {"Ref": "AWS::NoValue"},
        ]
    }
)


# Exactly what each function's code calls (least privilege: an action nothing calls is not granted).
# Ingest: ClaimStore.claim_event (PutItem), complete_batch (the completion record: PutItem), release
# (DeleteItem; never UpdateItem: only the API's re-fan-out updates a claim), and when a
# claim's condition fails it reads the batch's completion record (`_completed_at`, GetItem): without
# it every duplicate ce-id is AccessDenied on AWS. QuarantineStore.quarantine_message (PutItem).
# SubscriptionStore.matching (Query on by_tenant). Deliver: AttemptLog.find (GetItem),
# record_attempt and append_attempt (UpdateItem); it never puts a delivery. SubscriptionStore.get
# (GetItem) and disable, which writes the whole item conditioned on its revision (PutItem). Both
# settle attempts, so both keep the endpoints' health: one conditional UpdateItem of the item's
# `health_*` attributes (jobhooks.endpoint_health.store), and notify its state changes (the
# tenant's subscriptions by by_tenant, the delivery queue, the operators' topic). Ingest's
# analytics row: FirehoseSink (PutRecordBatch), and the pseudonymization key when the stack has
# one.
INGEST_GRANTS = {
    arn_of("IngestLogGroup"): {"logs:CreateLogStream", "logs:PutLogEvents"},
    arn_of("IngestQueue"): {
        "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
        "sqs:ChangeMessageVisibility",
    },
    FETCHER_KEYS_SECRET: {"secretsmanager:GetSecretValue"},
    PSEUDONYMIZATION_KEY: {"secretsmanager:GetSecretValue"},
    arn_of("ClaimsTable"): {"dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:GetItem"},
    arn_of("QuarantineTable"): {"dynamodb:PutItem"},
    index_arn("SubscriptionsTable", "by_tenant"): {"dynamodb:Query"},
    arn_of("DeliveryQueue"): {"sqs:SendMessage"},
    arn_of("AnalyticsDeliveryStream"): {"firehose:PutRecordBatch"},
    arn_of("FirstAttemptsTable"): {"dynamodb:BatchWriteItem"},
    arn_of("DeliveriesTable"): {"dynamodb:UpdateItem"},
    arn_of("SubscriptionsTable"): {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
    arn_of("SubscriptionSecretsKey"): {"kms:Decrypt"},
    arn_of("DeliveryDeadLetterQueue"): {"sqs:SendMessage"},
    repr({"Ref": "OperationsTopic"}): {"sns:Publish"},
    # What it could not write after the webhooks (jobhooks.spill.queue.SpillQueue).
    arn_of("SpillQueue"): {"sqs:SendMessage"},
}  # fmt: skip
# What only the ingest function's first attempts need: the API's quarantine replay runs ingest
# in-process but enqueues its deliveries, so it makes no first attempt.
FIRST_ATTEMPT_RESOURCES = {
    arn_of("FirstAttemptsTable"),
    arn_of("DeliveriesTable"),
    arn_of("SubscriptionsTable"),
    arn_of("SubscriptionSecretsKey"),
    arn_of("DeliveryDeadLetterQueue"),
}
DELIVER_GRANTS = {
    arn_of("DeliverLogGroup"): {"logs:CreateLogStream", "logs:PutLogEvents"},
    arn_of("DeliveryDeadLetterQueue"): {"sqs:SendMessage"},
    arn_of("DeliveriesTable"): {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:UpdateItem"},
    # The duplicate check of a task with no record: the claim, then its batch's page.
    arn_of("ClaimsTable"): {"dynamodb:GetItem", "dynamodb:BatchGetItem"},
    arn_of("FirstAttemptsTable"): {"dynamodb:GetItem", "dynamodb:BatchGetItem"},
    arn_of("SubscriptionsTable"): {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
    arn_of("SubscriptionSecretsKey"): {"kms:Decrypt"},
    # Notifications of endpoint health: the tenant's subscriptions, enqueued, and the operators.
    index_arn("SubscriptionsTable", "by_tenant"): {"dynamodb:Query"},
    arn_of("DeliveryQueue"): {
        "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
        "sqs:ChangeMessageVisibility", "sqs:SendMessage",
    },
    repr({"Ref": "OperationsTopic"}): {"sns:Publish"},
}  # fmt: skip


def test_ingest_role_grants_exactly_what_ingest_calls(template: dict[str, Any]) -> None:
    assert actions_by_resource(template, "IngestRole") == INGEST_GRANTS


# The spill function: its queue (consumed, and each retry's delay set), the DLQ it parks an
# unreadable message in, Firehose (rows), the first-attempt pages (BatchWriteItem), and the
# pseudonymization key when the stack has one (rows ingest could not pseudonymize).
SPILL_GRANTS = {
    arn_of("SpillLogGroup"): {"logs:CreateLogStream", "logs:PutLogEvents"},
    arn_of("SpillQueue"): {
        "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
        "sqs:ChangeMessageVisibility",
    },
    arn_of("SpillDeadLetterQueue"): {"sqs:SendMessage"},
    arn_of("AnalyticsDeliveryStream"): {"firehose:PutRecordBatch"},
    arn_of("FirstAttemptsTable"): {"dynamodb:BatchWriteItem"},
    repr({"Ref": "AnalyticsPseudonymizationKey"}): {"secretsmanager:GetSecretValue"},
}  # fmt: skip


def test_spill_role_grants_exactly_what_the_spill_function_calls(
    template: dict[str, Any],
) -> None:
    assert actions_by_resource(template, "SpillRole") == SPILL_GRANTS
    # The key's statement exists only with pseudonymization on.
    (conditional,) = [
        s for s in policy_statements(template, "SpillRole") if isinstance(s, dict) and "Fn::If" in s
    ]
    condition, statement, otherwise = conditional["Fn::If"]
    assert condition == "PseudonymizeAnalytics" and otherwise == {"Ref": "AWS::NoValue"}
    assert statement["Action"] == "secretsmanager:GetSecretValue"


def test_deliver_role_grants_exactly_what_deliver_calls(template: dict[str, Any]) -> None:
    assert actions_by_resource(template, "DeliverRole") == DELIVER_GRANTS


def test_api_role_grants_on_tables_are_what_the_management_code_calls(
    template: dict[str, Any],
) -> None:
    grants = actions_by_resource(template, "ApiRole")
    tables = {
        # The subscription store writes whole items (PutItem on revision), never UpdateItem.
        arn_of("SubscriptionsTable"): {
            "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem",
        },
        # UpdateItem: recover marks each delivery it sent again `pending`.
        arn_of("DeliveriesTable"): {
            "dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:UpdateItem",
        },
        # Keyed by subscription: its pages are a Query on the table, no index needed.
        arn_of("FirstAttemptsTable"): {"dynamodb:GetItem", "dynamodb:Query"},
        # BatchGetItem: recover reads 100 events' webhook bodies a call.
        arn_of("ClaimsTable"): {
            "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
            "dynamodb:BatchGetItem",
        },
        # Scan: the quarantine listing across reasons.
        arn_of("QuarantineTable"): {
            "dynamodb:GetItem", "dynamodb:Scan", "dynamodb:PutItem", "dynamodb:UpdateItem",
        },
        # Every other listing queries an index; items are read and written by key.
        index_arn("SubscriptionsTable", "by_tenant"): {"dynamodb:Query"},
        index_arn("DeliveriesTable", "by_subscription"): {"dynamodb:Query"},
        index_arn("ClaimsTable", "unmatched"): {"dynamodb:Query"},
        index_arn("QuarantineTable", "by_reason"): {"dynamodb:Query"},
    }  # fmt: skip
    for resource, actions in tables.items():
        assert grants[resource] == actions, resource


def test_api_role_can_redrive_both_dead_letter_queues(template: dict[str, Any]) -> None:
    pairs = granted(template, "ApiRole")
    for dlq in ("IngestDeadLetterQueue", "DeliveryDeadLetterQueue"):
        for action in ("StartMessageMoveTask", "ListMessageMoveTasks", "ReceiveMessage"):
            assert (f"sqs:{action}", arn_of(dlq)) in pairs
    for queue in ("IngestQueue", "DeliveryQueue"):
        # A redrive sends back to the source queue, named by ARN in StartMessageMoveTask.
        assert ("sqs:SendMessage", arn_of(queue)) in pairs
        assert ("sqs:GetQueueAttributes", arn_of(queue)) in pairs
        assert ("sqs:ReceiveMessage", arn_of(queue)) not in pairs
    assert ("kms:GenerateDataKey", arn_of("SubscriptionSecretsKey")) in pairs
    # A quarantine replay runs ingest in-process: everything ingest may do, the API may do.
    ingest = {
        pair
        for pair in granted(template, "IngestRole")
        # (consuming the ingest queue is the function's alone: a replay holds no receipt handle)
        if not pair[0].startswith(
            ("logs:", "sqs:Receive", "sqs:Delete", "sqs:GetQueue", "sqs:ChangeMessageVisibility")
        )
        and pair[1] not in FIRST_ATTEMPT_RESOURCES
    }
    assert ingest <= pairs, ingest - pairs


def test_shovel_policy_only_sends_to_the_ingest_queue(template: dict[str, Any]) -> None:
    (statement,) = properties(template, "ShovelPolicy")["PolicyDocument"]["Statement"]
    assert as_list(statement["Action"]) == ["sqs:SendMessage"]
    assert as_list(statement["Resource"]) == [{"Fn::GetAtt": ["IngestQueue", "Arn"]}]
    # SQS-managed SSE: no KMS permission needed, and none given.
    assert properties(template, "IngestQueue").get("KmsMasterKeyId") is None


# ---------------------------------------------------------------------------- functions


def test_every_function_logs_to_its_own_log_group_with_retention(
    template: dict[str, Any],
) -> None:
    seen = set()
    for function in resources(template, FUNCTION):
        log_group = properties(template, function)["LoggingConfig"]["LogGroup"]["Ref"]
        assert template["Resources"][log_group]["Type"] == "AWS::Logs::LogGroup"
        assert properties(template, log_group)["RetentionInDays"] == {"Ref": "LogRetentionDays"}
        assert log_group not in seen
        seen.add(log_group)
        # The role may write to that log group, and to no other.
        role, _ = getatt_target(properties(template, function)["Role"])
        log_writes = [
            s for s in statements_of_role(template, role) if "logs:PutLogEvents" in s["Action"]
        ]
        assert [s["Resource"] for s in log_writes] == [{"Fn::GetAtt": [log_group, "Arn"]}]
    assert template["Parameters"]["LogRetentionDays"]["Default"] == 30


def test_functions_share_runtime_architecture_layer_and_powertools_settings(
    template: dict[str, Any],
) -> None:
    for function in resources(template, FUNCTION):
        assert function_setting(template, function, "Runtime") == "python3.12"
        assert function_setting(template, function, "Architectures") == ["arm64"]
        assert function_setting(template, function, "MemorySize") == 256
        assert function_setting(template, function, "Layers") == [{"Ref": "CoreLayer"}]
        assert function_setting(template, function, "Handler") == "app.handler"
        variables = function_variables(template, function)
        assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "jobhooks"
        assert variables["POWERTOOLS_LOG_LEVEL"] == {"Ref": "LogLevel"}
        assert "POWERTOOLS_SERVICE_NAME" in variables


FIRST_ATTEMPT_VARIABLES = {
    "JOBHOOKS_FIRST_ATTEMPT_SECONDS",
    "JOBHOOKS_RETRY_SCHEDULE",
    "JOBHOOKS_ATTEMPT_LOG_DAYS",
    "JOBHOOKS_ALLOW_PRIVATE_WEBHOOKS",
    # The endpoint-health rules judge attempts; a replay in the API makes none.
    "JOBHOOKS_ENDPOINT_FAILING_AFTER",
    "JOBHOOKS_AUTO_DISABLE_AFTER",
}


def test_functions_get_the_settings_of_the_architecture(template: dict[str, Any]) -> None:
    text = ARCHITECTURE.read_text()
    documented = set(re.findall(r"`(JOBHOOKS_[A-Z_]+)`", text))
    # Rows whose default is "required ...": a function would not start without them.
    required = {
        name
        for line in text.splitlines()
        if re.search(r"\|\s*required[^|]*\|\s*$", line)
        for name in re.findall(r"`(JOBHOOKS_[A-Z_]+)`", line)
    }
    # The template's parameters and the secret (the rest keep their documented defaults).
    from_parameters = {
        "JOBHOOKS_FETCHER_KEYS_SECRET_ARN",
        "JOBHOOKS_PRODUCER_RELEASE",
        "JOBHOOKS_DEDUP_RETENTION_DAYS",
        "JOBHOOKS_FUTURE_SKEW_SECONDS",
        "JOBHOOKS_ALLOW_LEGACY_SIGNATURES",
        "JOBHOOKS_ALLOWED_SOURCES",
        "JOBHOOKS_RETRY_SCHEDULE",
    }
    given = set()
    for function in resources(template, FUNCTION):
        given |= {v for v in function_variables(template, function) if v.startswith("JOBHOOKS_")}
    assert len(required) >= 9, "docs/architecture.md's environment table changed shape"
    assert given <= documented, f"undocumented: {given - documented}"
    assert required | from_parameters <= given, f"missing: {(required | from_parameters) - given}"
    ingest = function_variables(template, "IngestFunction")
    assert ingest["JOBHOOKS_DEDUP_RETENTION_DAYS"] == {"Ref": "DedupRetentionDays"}
    assert ingest["JOBHOOKS_ALLOWED_SOURCES"] == {"Ref": "AllowedSources"}
    assert ingest["JOBHOOKS_FETCHER_KEYS_SECRET_ARN"]["Fn::If"][0] == "CreateFetcherKeysSecret"
    # Quarantine replay re-runs ingest inside the API: same keys and verification rules (it makes
    # no first attempt: those settings are the ingest function's alone).
    api = function_variables(template, "ApiFunction")
    for name, value in ingest.items():
        if name.startswith("JOBHOOKS_") and name not in FIRST_ATTEMPT_VARIABLES:
            assert api[name] == value, name
    deliver = function_variables(template, "DeliverFunction")
    assert deliver["JOBHOOKS_RETRY_SCHEDULE"] == {"Ref": "RetrySchedule"}
    assert deliver["JOBHOOKS_ALLOW_PRIVATE_WEBHOOKS"] == "false"
    # Ingest's first attempts POST and retry as the deliver function does.
    assert ingest["JOBHOOKS_FIRST_ATTEMPT_SECONDS"] == {"Ref": "FirstAttemptSeconds"}
    for name in FIRST_ATTEMPT_VARIABLES - {"JOBHOOKS_FIRST_ATTEMPT_SECONDS"}:
        assert ingest[name] == deliver[name], name
    parameter = template["Parameters"]["FirstAttemptSeconds"]
    assert (parameter["Default"], parameter["MinValue"], parameter["MaxValue"]) == (5, 1, 30)


def test_claims_outlive_every_copy_the_freshness_rule_accepts(template: dict[str, Any]) -> None:
    # docs/ingest.md, "The claim": claims are kept the freshness window (DedupRetentionDays)
    # plus the ingest queue's retention, so the functions that claim events (ingest, and the
    # API's quarantine replay) must be told the queue's real retention.
    retention = properties(template, "IngestQueue")["MessageRetentionPeriod"]
    for function in ("IngestFunction", "ApiFunction"):
        variables = function_variables(template, function)
        assert int(variables["JOBHOOKS_INGEST_QUEUE_RETENTION_SECONDS"]) == retention, function
        assert variables["JOBHOOKS_DEDUP_RETENTION_DAYS"] == {"Ref": "DedupRetentionDays"}
    # A message redriven from the DLQ is enqueued anew (new SentTimestamp, judged again), so
    # the DLQ's retention adds nothing; it must only outlast the source queue's.
    assert properties(template, "IngestDeadLetterQueue")["MessageRetentionPeriod"] > retention


def test_core_layer_builds_for_arm64_python312(template: dict[str, Any]) -> None:
    layer = template["Resources"]["CoreLayer"]
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    assert layer["Properties"]["ContentUri"] == "layers/jobhooks/"
    assert layer["Metadata"] == {"BuildMethod": "python3.12", "BuildArchitecture": "arm64"}
    requirements = (ROOT / "layers/jobhooks/requirements.txt").read_text().lower()
    lines = [line.split("#")[0].strip() for line in requirements.splitlines()]
    names = {re.split(r"[\[<>=!~ ]", line)[0] for line in lines if line}
    assert {"aws-lambda-powertools", "pydantic", "cryptography", "urllib3"} <= names
    assert not names & {"pika", "pyyaml", "moto"}, "shovel/local-only packages stay out of Lambda"


# ---------------------------------------------------------------------------- tables


def documented_tables() -> dict[str, dict[str, Any]]:
    """Key and GSIs of every table row in docs/architecture.md."""
    tables: dict[str, dict[str, Any]] = {}
    for line in ARCHITECTURE.read_text().splitlines():
        match = re.match(r"\| `(\w+Table)` \| `(\w+)` \(S\) \|(.*)\|\s*$", line)
        if match:
            logical_id, key, description = match.groups()
            indexes = {
                name: (hash_key, range_key)
                for name, hash_key, range_key in re.findall(
                    # `by_tenant` (`tenant_id`, `subscription_id`[, projection ALL])
                    r"`(\w+)` \(`(\w+)`, `(\w+)`(?:, [^)`]*)?\)",
                    description,
                )
            }
            tables[logical_id] = {"key": key, "indexes": indexes}
    return tables


def test_architecture_page_still_parses() -> None:
    tables = documented_tables()
    assert set(tables) == {
        "ClaimsTable",
        "SubscriptionsTable",
        "DeliveriesTable",
        "QuarantineTable",
        "AlertRulesTable",
    }
    assert all(table["indexes"] for table in tables.values())


@pytest.mark.parametrize("logical_id", sorted(documented_tables()))
def test_table_has_the_key_and_indexes_of_the_architecture(
    template: dict[str, Any], logical_id: str
) -> None:
    expected = documented_tables()[logical_id]
    table = properties(template, logical_id)
    assert table["KeySchema"] == [{"AttributeName": expected["key"], "KeyType": "HASH"}]
    indexes = {
        index["IndexName"]: tuple(k["AttributeName"] for k in index["KeySchema"])
        for index in table.get("GlobalSecondaryIndexes", [])
    }
    assert indexes == expected["indexes"]
    for index in table["GlobalSecondaryIndexes"]:
        assert [k["KeyType"] for k in index["KeySchema"]] == ["HASH", "RANGE"]
    defined = {d["AttributeName"] for d in table["AttributeDefinitions"]}
    keys = {expected["key"], *(a for pair in expected["indexes"].values() for a in pair)}
    assert defined == keys
    # The event tables are on demand unless TableCapacityMode says provisioned.
    assert table["BillingMode"] in (
        "PAY_PER_REQUEST",
        {"Fn::If": ["ProvisionedTables", "PROVISIONED", "PAY_PER_REQUEST"]},
    )
    assert table["SSESpecification"] == {"SSEEnabled": True}
    ttl = table.get("TimeToLiveSpecification")
    if logical_id in TABLES_WITH_TTL:
        assert ttl == {"AttributeName": "expires_at", "Enabled": True}
    else:
        assert ttl is None


def test_subscriptions_survive_the_stack(template: dict[str, Any]) -> None:
    resource = template["Resources"]["SubscriptionsTable"]
    props = resource["Properties"]
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["DeletionProtectionEnabled"] is True
    # Their secrets are useless without the key: it is kept exactly as long as the table.
    for kept in ("SubscriptionsTable", "SubscriptionSecretsKey"):
        policies = {
            name: template["Resources"][kept].get(name)
            for name in ("DeletionPolicy", "UpdateReplacePolicy")
        }
        # Kept when the stack is deleted or the resource replaced, but not when the stack's
        # first creation rolls back: nothing can be in them yet, and a retained table and key
        # would be orphans that block the next attempt (the table's name is free, the key
        # bills monthly).
        assert policies == {
            "DeletionPolicy": "RetainExceptOnCreate",
            "UpdateReplacePolicy": "Retain",
        }, kept


def test_every_table_survives_a_replacement_and_a_stack_deletion(
    template: dict[str, Any],
) -> None:
    # Each holds what nothing can rebuild: the claims (a new table would let every copy and
    # redrive through again), the attempt log and first-attempt pages (deliver's duplicate
    # check), the quarantine (the only copy of a rejected message), the subscriptions, the
    # grants. docs/deploy.md says so table by table.
    deploy = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    for table, resource in resources(template, TABLE).items():
        full = template["Resources"][table]
        assert full.get("UpdateReplacePolicy") == "Retain", table
        assert full.get("DeletionPolicy") == "RetainExceptOnCreate", table
        assert resource["Properties"]["DeletionProtectionEnabled"] is True, table
        assert f"`{table}`" in deploy, table


def test_every_queue_takes_one_mebibyte_messages(template: dict[str, Any]) -> None:
    # The code sizes messages and batches for 1 MiB (SQS_MAX_MESSAGE_BYTES); a queue left at
    # an older 256 KiB limit would refuse what the code thinks fits.
    assert resources(template, QUEUE)
    for queue in resources(template, QUEUE):
        assert properties(template, queue)["MaximumMessageSize"] == SQS_MAX_MESSAGE_BYTES, queue


# ---------------------------------------------------------------------------- alarms, outputs


def alarms_on(template: dict[str, Any], namespace: str, metric: str) -> list[dict[str, Any]]:
    return [
        p
        for p in (r["Properties"] for r in resources(template, "AWS::CloudWatch::Alarm").values())
        if p.get("Namespace") == namespace and p.get("MetricName") == metric
    ]


def test_alarms_cover_dead_letters_quarantine_queue_age_and_function_health(
    template: dict[str, Any],
) -> None:
    def dimension_targets(alarms: list[dict[str, Any]]) -> set[str]:
        targets = set()
        for alarm in alarms:
            (dimension,) = alarm["Dimensions"]
            value = dimension["Value"]
            targets.add(value["Ref"] if "Ref" in value else getatt_target(value)[0])
        return targets

    dlq_alarms = alarms_on(template, "AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert dimension_targets(dlq_alarms) == {
        "IngestDeadLetterQueue",
        "DeliveryDeadLetterQueue",
        "SpillDeadLetterQueue",
    }
    for alarm in dlq_alarms:
        assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    age_alarms = alarms_on(template, "AWS/SQS", "ApproximateAgeOfOldestMessage")
    assert dimension_targets(age_alarms) == {"IngestQueue", "DeliveryQueue", "SpillQueue"}
    functions = set(resources(template, FUNCTION))
    # The API function answers every failure itself (a handled 500), so Lambda's Errors never
    # counts it: the API's own 5xx alarm below watches it instead.
    sqs_consumers = {function for function, _, _ in sqs_event_sources(template)}
    assert dimension_targets(alarms_on(template, "AWS/Lambda", "Errors")) == sqs_consumers
    assert dimension_targets(alarms_on(template, "AWS/Lambda", "Throttles")) == functions

    (rejected,) = alarms_on(template, "jobhooks", "Rejected")
    assert (rejected["Statistic"], rejected["Period"], rejected["Threshold"]) == ("Sum", 300, 0)
    # Powertools puts service=<POWERTOOLS_SERVICE_NAME> on every EMF metric: same value here.
    (dimension,) = rejected["Dimensions"]
    assert dimension["Name"] == "service"
    assert (
        dimension["Value"]
        == function_variables(template, "IngestFunction")["POWERTOOLS_SERVICE_NAME"]
    )

    for alarm in resources(template, "AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": "AlarmTopic"}]


def test_management_api_5xx_answers_raise_an_alarm(template: dict[str, Any]) -> None:
    # HTTP APIs publish `5xx` under AWS/ApiGateway with the dimension ApiId. It counts the
    # function's handled 500s (API Gateway passes the status through) and the 500/503/504
    # API Gateway answers itself when the function crashes, times out or cannot be invoked.
    (alarm,) = alarms_on(template, "AWS/ApiGateway", "5xx")
    assert alarm["Dimensions"] == [{"Name": "ApiId", "Value": {"Ref": "HttpApi"}}]
    assert (alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"]) == ("Sum", 300, 1)
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    assert alarm["TreatMissingData"] == "notBreaching"
    assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]
    assert alarm["OKActions"] == [{"Ref": "AlarmTopic"}]
    assert "docs/operations.md" in alarm["AlarmDescription"]


def test_alarm_email_is_subscribed_only_when_given(template: dict[str, Any]) -> None:
    subscription = template["Resources"]["AlarmEmailSubscription"]
    assert subscription["Condition"] == "HasAlarmEmail"
    assert template["Conditions"]["HasAlarmEmail"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmEmail"}, ""]}]
    }
    assert template["Parameters"]["AlarmEmail"]["Default"] == ""


def test_dashboard_shows_every_jobhooks_metric(template: dict[str, Any]) -> None:
    body = properties(template, "Dashboard")["DashboardBody"]["Fn::Sub"]
    for metric in (
        "Received", "Accepted", "Rejected", "Duplicates", "DeliveriesEnqueued",
        "DeliveryAttempts", "DeliverySucceeded", "DeliveryFailed", "DeliveriesParked",
    ):  # fmt: skip
        assert f'"{metric}"' in body, metric
    for queue in resources(template, QUEUE):
        assert "${" + queue + ".QueueName}" in body, queue
    # CloudFormation only substitutes: the body must already be valid JSON around ${...}.
    json.loads(re.sub(r"\$\{[^}]+\}", "x", body))


def test_the_dashboard_can_be_left_out_and_is_there_by_default(template: dict[str, Any]) -> None:
    assert template["Resources"]["Dashboard"]["Condition"] == "HasDashboard"
    assert template["Outputs"]["DashboardName"]["Condition"] == "HasDashboard"
    assert template["Conditions"]["HasDashboard"] == {
        "Fn::Equals": [{"Ref": "CreateDashboard"}, "true"]
    }
    assert template["Parameters"]["CreateDashboard"]["Default"] == "true"


def test_the_event_tables_can_be_provisioned_with_auto_scaling_and_are_on_demand_by_default(
    template: dict[str, Any],
) -> None:
    assert template["Parameters"]["TableCapacityMode"]["Default"] == "on-demand"
    assert template["Conditions"]["ProvisionedTables"] == {
        "Fn::Equals": [{"Ref": "TableCapacityMode"}, "provisioned"]
    }
    targets = {
        (target["Properties"]["ResourceId"]["Fn::Sub"], target["Properties"]["ScalableDimension"])
        for target in resources(template, "AWS::ApplicationAutoScaling::ScalableTarget").values()
    }
    for table, index in (("ClaimsTable", "unmatched"), ("DeliveriesTable", "by_subscription")):
        mode = properties(template, table)["BillingMode"]
        assert mode == {"Fn::If": ["ProvisionedTables", "PROVISIONED", "PAY_PER_REQUEST"]}
        (gsi,) = properties(template, table)["GlobalSecondaryIndexes"]
        assert gsi["ProvisionedThroughput"]["Fn::If"][0] == "ProvisionedTables"
        for kind in ("Read", "Write"):
            assert (f"table/${{{table}}}", f"dynamodb:table:{kind}CapacityUnits") in targets
            assert (
                f"table/${{{table}}}/index/{index}",
                f"dynamodb:index:{kind}CapacityUnits",
            ) in targets
    # The first attempts table has no index: its pages are queried by their own key.
    assert properties(template, "FirstAttemptsTable")["BillingMode"] == {
        "Fn::If": ["ProvisionedTables", "PROVISIONED", "PAY_PER_REQUEST"]
    }
    for kind in ("Read", "Write"):
        assert ("table/${FirstAttemptsTable}", f"dynamodb:table:{kind}CapacityUnits") in targets
    policies = resources(template, "AWS::ApplicationAutoScaling::ScalingPolicy")
    assert len(policies) == len(targets) == 10
    for logical_id, policy in policies.items():
        assert template["Resources"][logical_id]["Condition"] == "ProvisionedTables"
        configuration = policy["Properties"]["TargetTrackingScalingPolicyConfiguration"]
        assert configuration["TargetValue"] == 70


def test_fetcher_keys_secret_is_created_only_without_an_arn(template: dict[str, Any]) -> None:
    assert template["Resources"]["FetcherKeysSecret"]["Condition"] == "CreateFetcherKeysSecret"
    assert template["Conditions"]["CreateFetcherKeysSecret"] == {
        "Fn::Equals": [{"Ref": "FetcherKeysSecretArn"}, ""]
    }
    assert "jobhooks keys derive" in properties(template, "FetcherKeysSecret")["Description"]


def test_management_api_requires_iam(template: dict[str, Any]) -> None:
    api = properties(template, "HttpApi")
    assert api["Auth"]["DefaultAuthorizer"] == "AWS_IAM"
    log_group = getatt_target(api["AccessLogSettings"]["DestinationArn"])[0]
    assert "RetentionInDays" in properties(template, log_group)


def test_parameters_have_defaults_and_descriptions(template: dict[str, Any]) -> None:
    expected = {
        "ProducerRelease": "",  # empty: outcomes list `release` as unmeasured
        "DedupRetentionDays": 7,
        "FutureSkewSeconds": 30,
        "AllowLegacySignatures": "false",
        "AllowedSources": "",  # empty: ce-source is not checked
        "RetrySchedule": "0,5,300,1800,7200,18000,36000,36000",
        "IngestBatchSize": None,
        "DeliverBatchSize": None,
        "IngestMaxConcurrency": None,
        "DeliverMaxConcurrency": None,
        "LogLevel": "INFO",
        "LogRetentionDays": 30,
        "AlarmEmail": "",
        "FetcherKeysSecretArn": "",
    }
    parameters = template["Parameters"]
    for name, default in expected.items():
        assert "Default" in parameters[name], name
        if default is not None:
            assert parameters[name]["Default"] == default, name
    for name, spec in parameters.items():
        assert spec.get("Description"), name


def test_outputs_name_everything_an_operator_needs(template: dict[str, Any]) -> None:
    outputs = template["Outputs"]
    assert {
        "IngestQueueUrl",
        "IngestQueueArn",
        "ApiUrl",
        "ShovelPolicyArn",
        "IngestDeadLetterQueueUrl",
        "DeliveryQueueUrl",
        "DeliveryDeadLetterQueueUrl",
    } <= set(outputs)
    for table in resources(template, TABLE):
        assert outputs[f"{table}Name"]["Value"] == {"Ref": table}
    assert outputs["ShovelPolicyArn"]["Value"] == {"Ref": "ShovelPolicy"}


# ---------------------------------------------------------------------------- linters


def test_cfn_lint_with_serverless_rules_passes() -> None:
    # The cfn-lint next to this interpreter (the project venv), else whichever is on PATH.
    beside = Path(sys.executable).with_name("cfn-lint")
    executable = str(beside) if beside.exists() else shutil.which("cfn-lint")
    assert executable, "cfn-lint is not installed (pip install 'jobhooks[dev]')"
    result = subprocess.run(
        [executable, str(TEMPLATE), "--append-rules", "cfn_lint_serverless.rules"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
