"""The local IAM evaluator (jobhooks_tools.local.iam): IAM's own evaluation rules, and the
action, resource and condition keys IAM authorizes for each kind of call the functions make."""

from __future__ import annotations

from typing import Any

import pytest
from jobhooks_tools.local.iam.policy import (
    Policy,
    Request,
    action_matches,
    evaluate,
    resource_matches,
)
from jobhooks_tools.local.iam.refusals import AccessDenied, Refusal
from jobhooks_tools.local.iam.requests import CallSite, UnmappedRequestError, authorizations

TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/jobhooks-ClaimsTable"
QUEUE_URL = "http://127.0.0.1:5000/123456789012/jobhooks-IngestQueue"
QUEUE = "arn:aws:sqs:us-east-1:123456789012:jobhooks-IngestQueue"
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:jobhooks/fetcher-keys-AbCdEf"
SITE = CallSite(
    region="us-east-1",
    account="123456789012",
    secret_arns={"jobhooks/fetcher-keys": SECRET},
    key_aliases={"alias/jobhooks/SubscriptionSecretsKey": "0b5f8a5e-0000-4000-8000-000000000001"},
)


def policy(*statements: dict[str, Any]) -> Policy:
    return Policy.parse("TestRole", [{"Version": "2012-10-17", "Statement": list(statements)}])


def allow(action: Any, resource: Any, **extra: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


# ------------------------------------------------------------------------------ evaluation


def test_a_request_no_statement_allows_is_denied_implicitly() -> None:
    decision = evaluate(
        policy(allow("dynamodb:PutItem", TABLE)), Request("dynamodb:GetItem", TABLE)
    )
    assert not decision.allowed
    assert decision.reason == "no identity-based policy allows it"


def test_an_explicit_deny_wins_over_any_allow() -> None:
    denied = policy(
        allow("dynamodb:*", "*"),
        {"Sid": "NoDeletes", "Effect": "Deny", "Action": "dynamodb:DeleteItem", "Resource": "*"},
    )
    assert evaluate(denied, Request("dynamodb:GetItem", TABLE)).allowed
    decision = evaluate(denied, Request("dynamodb:DeleteItem", TABLE))
    assert not decision.allowed and "NoDeletes" in decision.reason


def test_action_names_are_case_insensitive_and_take_both_wildcards() -> None:
    assert action_matches("dynamodb:GetItem", "DynamoDB:getitem")
    assert action_matches("dynamodb:Get*", "dynamodb:GetItem")
    assert action_matches("sqs:?endMessage", "sqs:SendMessage")
    assert not action_matches("sqs:?endMessage", "sqs:SendMessageBatch")
    assert not action_matches("dynamodb:Get*", "dynamodb:BatchGetItem")


def test_resources_are_case_sensitive_and_wildcards_stay_in_their_segment() -> None:
    assert resource_matches(TABLE, TABLE)
    assert not resource_matches(TABLE.lower(), TABLE)
    assert resource_matches("arn:aws:dynamodb:*:123456789012:table/jobhooks-*", TABLE)
    assert resource_matches("arn:aws:dynamodb:us-east-?:123456789012:table/*", TABLE)
    # A star inside a segment does not run across a colon...
    assert not resource_matches("arn:aws:*:123456789012:table/jobhooks-ClaimsTable", TABLE)
    # ...but one that ends the pattern's last segment does.
    assert resource_matches("arn:aws:dynamodb:*", TABLE)
    # Not a regular expression: a dot is a dot.
    assert not resource_matches("arn:aws:s3:::a.b", "arn:aws:s3:::axb")
    assert resource_matches("*", TABLE)


def test_not_action_and_not_resource_apply_to_everything_else() -> None:
    everything_but = policy(
        {"Effect": "Allow", "NotAction": "dynamodb:DeleteItem", "Resource": TABLE},
        {"Effect": "Allow", "Action": "sqs:SendMessage", "NotResource": QUEUE},
    )
    assert evaluate(everything_but, Request("dynamodb:GetItem", TABLE)).allowed
    assert not evaluate(everything_but, Request("dynamodb:deleteitem", TABLE)).allowed
    other_queue = QUEUE.replace("IngestQueue", "DeliveryQueue")
    assert evaluate(everything_but, Request("sqs:SendMessage", other_queue)).allowed
    assert not evaluate(everything_but, Request("sqs:SendMessage", QUEUE)).allowed


def test_a_condition_is_judged_with_the_requests_own_keys() -> None:
    bucket = "arn:aws:s3:::rows"
    listed = policy(
        allow(
            "s3:ListBucket",
            bucket,
            Condition={"StringLike": {"s3:prefix": ["background_job_completed/*"]}},
        )
    )
    inside = Request("s3:ListBucket", bucket, {"s3:prefix": ("background_job_completed/dt=1/",)})
    outside = Request("s3:ListBucket", bucket, {"s3:prefix": ("errors/",)})
    assert evaluate(listed, inside).allowed
    assert not evaluate(listed, outside).allowed
    # A request without the key (GetBucketLocation never carries s3:prefix) does not match.
    assert not evaluate(listed, Request("s3:ListBucket", bucket)).allowed


def test_if_exists_null_and_negated_operators_follow_iams_rules_for_absent_keys() -> None:
    bucket = "arn:aws:s3:::rows"
    assert evaluate(
        policy(
            allow("s3:ListBucket", bucket, Condition={"StringLikeIfExists": {"s3:prefix": "a/*"}})
        ),
        Request("s3:ListBucket", bucket),
    ).allowed
    assert evaluate(
        policy(allow("s3:ListBucket", bucket, Condition={"Null": {"s3:prefix": "true"}})),
        Request("s3:ListBucket", bucket),
    ).allowed
    assert evaluate(
        policy(allow("s3:ListBucket", bucket, Condition={"StringNotEquals": {"s3:prefix": "x"}})),
        Request("s3:ListBucket", bucket),
    ).allowed


def test_a_condition_key_the_evaluator_cannot_judge_fails_closed_and_says_so() -> None:
    guarded = policy(
        allow("dynamodb:GetItem", TABLE, Condition={"StringEquals": {"aws:SourceVpce": "vpce-1"}})
    )
    decision = evaluate(guarded, Request("dynamodb:GetItem", TABLE))
    assert not decision.allowed
    assert "aws:SourceVpce is not judged locally" in decision.reason
    assert "fails closed" in decision.reason


def test_an_operator_the_evaluator_does_not_implement_fails_closed() -> None:
    guarded = policy(
        allow(
            "dynamodb:GetItem",
            TABLE,
            Condition={"DateGreaterThan": {"aws:CurrentTime": "2020-01-01T00:00:00Z"}},
        )
    )
    decision = evaluate(guarded, Request("dynamodb:GetItem", TABLE))
    assert not decision.allowed and "DateGreaterThan is not implemented" in decision.reason


def test_a_deny_that_cannot_be_judged_refuses_even_when_an_allow_matches() -> None:
    guarded = policy(
        allow("dynamodb:*", "*"),
        {
            "Effect": "Deny",
            "Action": "*",
            "Resource": "*",
            "Condition": {"Bool": {"aws:ViaAWSService": "false"}},
        },
    )
    decision = evaluate(guarded, Request("dynamodb:GetItem", TABLE))
    assert not decision.allowed and "cannot be judged" in decision.reason


def test_an_allowed_request_names_the_grants_it_exercised() -> None:
    granted = policy(
        {"Sid": "ReadClaims", **allow(["dynamodb:GetItem", "dynamodb:PutItem"], [TABLE, QUEUE])}
    )
    decision = evaluate(granted, Request("dynamodb:GetItem", TABLE))
    assert [(g.sid, g.action, g.resource) for g in decision.exercised] == [
        ("ReadClaims", "dynamodb:GetItem", TABLE)
    ]
    assert len(granted.grants()) == 4


# ------------------------------------------------------------------------------ requests


def test_sqs_batches_are_authorized_as_their_single_action_on_the_queues_arn() -> None:
    (request,) = authorizations(
        "sqs", "sqs", "SendMessageBatch", {"QueueUrl": QUEUE_URL, "Entries": []}, SITE
    )
    assert (request.action, request.resource) == ("sqs:SendMessage", QUEUE)
    (request,) = authorizations("sqs", "sqs", "DeleteMessageBatch", {"QueueUrl": QUEUE_URL}, SITE)
    assert request.action == "sqs:DeleteMessage"


def test_a_dynamodb_query_on_an_index_is_authorized_on_the_indexs_arn() -> None:
    (request,) = authorizations(
        "dynamodb",
        "dynamodb",
        "Query",
        {"TableName": "jobhooks-ClaimsTable", "IndexName": "unmatched"},
        SITE,
    )
    assert request.resource == TABLE + "/index/unmatched"


def test_dynamodb_batches_and_transactions_are_authorized_per_table_and_kind() -> None:
    batch = authorizations(
        "dynamodb", "dynamodb", "BatchGetItem", {"RequestItems": {"a": {}, "b": {}}}, SITE
    )
    assert [(r.action, r.resource.rsplit("/", 1)[1]) for r in batch] == [
        ("dynamodb:BatchGetItem", "a"),
        ("dynamodb:BatchGetItem", "b"),
    ]
    transaction = authorizations(
        "dynamodb",
        "dynamodb",
        "TransactWriteItems",
        {"TransactItems": [{"Put": {"TableName": "a"}}, {"ConditionCheck": {"TableName": "b"}}]},
        SITE,
    )
    assert [r.action for r in transaction] == ["dynamodb:PutItem", "dynamodb:ConditionCheckItem"]


def test_kms_authorizes_the_key_an_alias_or_a_ciphertext_stands_for() -> None:
    key_id = "0b5f8a5e-0000-4000-8000-000000000001"
    key = f"arn:aws:kms:us-east-1:123456789012:key/{key_id}"
    (by_alias,) = authorizations(
        "kms", "kms", "GenerateDataKey", {"KeyId": "alias/jobhooks/SubscriptionSecretsKey"}, SITE
    )
    (by_blob,) = authorizations(
        "kms", "kms", "Decrypt", {"CiphertextBlob": key_id.encode() + b"\0" * 40}, SITE
    )
    assert by_alias.resource == key and by_blob.resource == key


def test_a_secret_named_by_its_name_is_authorized_on_its_full_arn() -> None:
    (request,) = authorizations(
        "secretsmanager",
        "secretsmanager",
        "GetSecretValue",
        {"SecretId": "jobhooks/fetcher-keys"},
        SITE,
    )
    assert request.resource.endswith(":secret:jobhooks/fetcher-keys-AbCdEf")


def test_an_s3_listing_carries_its_prefix_as_a_condition_key() -> None:
    (request,) = authorizations(
        "s3", "s3", "ListObjectsV2", {"Bucket": "rows", "Prefix": "p/"}, SITE
    )
    assert (request.action, request.resource, request.context) == (
        "s3:ListBucket",
        "arn:aws:s3:::rows",
        {"s3:prefix": ("p/",)},
    )
    (location,) = authorizations("s3", "s3", "GetBucketLocation", {"Bucket": "rows"}, SITE)
    assert location.context == {}


def test_a_call_whose_resource_is_unknown_is_refused_not_guessed() -> None:
    with pytest.raises(UnmappedRequestError, match="does not know lambda's resources"):
        authorizations("lambda", "lambda", "Invoke", {"FunctionName": "f"}, SITE)


def test_a_refusal_is_the_services_own_access_denied_error() -> None:
    refusal = Refusal(
        "IngestFunction", "dynamodb:GetItem", TABLE, "no identity-based policy allows it"
    )
    assert str(refusal).startswith(f"IngestFunction may not dynamodb:GetItem on {TABLE}")
    dynamodb = AccessDenied("dynamodb", "GetItem", [refusal])
    assert dynamodb.response["Error"]["Code"] == "AccessDeniedException"
    assert AccessDenied("sqs", "SendMessage", [refusal]).response["Error"]["Code"] == "AccessDenied"
    assert "dynamodb:GetItem" in str(dynamodb) and TABLE in str(dynamodb)
