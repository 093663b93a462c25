"""template.yaml's tenant portal: its function and routes, the authorizer, the access table, the
token key, and least privilege for the three functions that use them (docs/portal.md,
docs/deploy.md)."""

from __future__ import annotations

from typing import Any

import pytest
from cfnlint.decode import cfn_yaml

from tests.infra.test_template import (
    TEMPLATE,
    actions_by_resource,
    arn_of,
    function_variables,
    properties,
)


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    loaded: dict[str, Any] = cfn_yaml.load(str(TEMPLATE))
    return loaded


def api_routes(template: dict[str, Any], function: str) -> dict[str, str]:
    """`METHOD /path` -> the authorizer of every route of `function`."""
    default = properties(template, "HttpApi")["Auth"]["DefaultAuthorizer"]
    routes = {}
    for event in properties(template, function)["Events"].values():
        assert event["Type"] == "HttpApi"
        spec = event["Properties"]
        assert spec["ApiId"] == {"Ref": "HttpApi"}
        routes[f"{spec['Method']} {spec['Path']}"] = spec.get("Auth", {}).get("Authorizer", default)
    return routes


def test_only_the_portal_page_and_assets_are_public_and_its_api_needs_the_authorizer(
    template: dict[str, Any],
) -> None:
    assert api_routes(template, "ApiFunction") == {"ANY /{proxy+}": "AWS_IAM"}
    assert api_routes(template, "PortalFunction") == {
        "GET /portal": "NONE",
        # A trailing slash would otherwise fall to /{proxy+}: 403 to a browser.
        "GET /portal/": "NONE",
        "GET /portal/assets/{proxy+}": "NONE",
        "POST /portal/session": "PortalAuthorizer",
        "ANY /portal/api/{proxy+}": "PortalAuthorizer",
    }


def test_the_portal_authorizer_never_caches_and_answers_simply(template: dict[str, Any]) -> None:
    auth = properties(template, "HttpApi")["Auth"]
    assert auth["DefaultAuthorizer"] == "AWS_IAM" and auth["EnableIamAuthorizer"] is True
    authorizer = auth["Authorizers"]["PortalAuthorizer"]
    assert authorizer == {
        "FunctionArn": {"Fn::GetAtt": ["AuthorizerFunction", "Arn"]},
        "AuthorizerPayloadFormatVersion": "2.0",
        "EnableSimpleResponses": True,
        # No cache: a revocation takes effect at the next request, not after a TTL.
        "Identity": {"ReauthorizeEvery": 0},
    }
    permission = properties(template, "AuthorizerInvokePermission")
    assert permission["Principal"] == "apigateway.amazonaws.com"
    assert permission["FunctionName"] == {"Fn::GetAtt": ["AuthorizerFunction", "Arn"]}
    assert permission["SourceArn"]["Fn::Sub"].endswith(":${HttpApi}/authorizers/*")


def test_the_access_log_names_sessions_never_tokens_paths_or_headers(
    template: dict[str, Any],
) -> None:
    log_format = properties(template, "HttpApi")["AccessLogSettings"]["Format"]
    assert '"portalSession":"$context.authorizer.token_id"' in log_format
    assert '"portalTenant":"$context.authorizer.tenant_id"' in log_format
    # No path (a query string could carry anything), no request header or cookie.
    for leak in ("$context.path", "$request.", "cookie"):
        assert leak not in log_format.lower(), leak


def test_the_access_table_keeps_grants_across_the_stack_and_expires_the_rest(
    template: dict[str, Any],
) -> None:
    resource = template["Resources"]["AccessTable"]
    table = resource["Properties"]
    assert table["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert {d["AttributeName"] for d in table["AttributeDefinitions"]} == {"pk", "sk"}
    assert "GlobalSecondaryIndexes" not in table
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["SSESpecification"] == {"SSEEnabled": True}
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["DeletionProtectionEnabled"] is True
    # Losing the grants would turn every tenant-bound caller into an operator.
    assert resource["DeletionPolicy"] == "RetainExceptOnCreate"
    assert resource["UpdateReplacePolicy"] == "Retain"


def test_the_token_key_is_generated_by_the_stack(template: dict[str, Any]) -> None:
    secret = properties(template, "PortalTokenKey")
    assert secret["GenerateSecretString"] == {"PasswordLength": 64, "ExcludePunctuation": True}
    assert "SecretString" not in secret


def test_the_authorizer_may_only_read_revocations_and_the_key(template: dict[str, Any]) -> None:
    assert actions_by_resource(template, "AuthorizerRole") == {
        arn_of("AuthorizerLogGroup"): {"logs:CreateLogStream", "logs:PutLogEvents"},
        repr({"Ref": "PortalTokenKey"}): {"secretsmanager:GetSecretValue"},
        # AccessStore.session_state: one BatchGetItem (the epoch and the session's revocation).
        arn_of("AccessTable"): {"dynamodb:BatchGetItem"},
    }
    assert function_variables(template, "AuthorizerFunction")["JOBHOOKS_ACCESS_TABLE"] == {
        "Ref": "AccessTable"
    }


def test_the_api_may_use_the_access_table_and_key_as_its_code_does(
    template: dict[str, Any],
) -> None:
    grants = actions_by_resource(template, "ApiRole")
    # AccessStore: list_grants (Query), revocation_epoch (GetItem), add_grant, revoke_session
    # (PutItem), revoke_tenant, take_send (UpdateItem), remove_grant (DeleteItem). Never a Scan;
    # no BatchGetItem: sessions open in the portal function, checked by the authorizer.
    assert grants[arn_of("AccessTable")] == {
        "dynamodb:Query",
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
    }
    assert grants[repr({"Ref": "PortalTokenKey"})] == {"secretsmanager:GetSecretValue"}
    variables = function_variables(template, "ApiFunction")
    assert variables["JOBHOOKS_PORTAL_KEY_SECRET_ARN"] == {"Ref": "PortalTokenKey"}


def test_the_portal_function_may_do_only_what_the_portal_calls(
    template: dict[str, Any],
) -> None:
    grants = actions_by_resource(template, "PortalRole")
    # consume_link, end_session (PutItem), take_send (UpdateItem): nothing of the grants.
    assert grants[arn_of("AccessTable")] == {"dynamodb:PutItem", "dynamodb:UpdateItem"}
    assert grants[repr({"Ref": "PortalTokenKey"})] == {"secretsmanager:GetSecretValue"}
    # Nothing an operator route needs: no quarantine, no dead-letter queue, no ingest queue,
    # no analytics stream, no scan, no claim written.
    for other in (
        "QuarantineTable",
        "IngestQueue",
        "IngestDeadLetterQueue",
        "DeliveryDeadLetterQueue",
        "SpillQueue",
        "SpillDeadLetterQueue",
        "AnalyticsDeliveryStream",
    ):
        assert arn_of(other) not in grants, other
    # GetItem: a replay's event; BatchGetItem: Recover's events (and it marks what it sent).
    assert grants[arn_of("ClaimsTable")] == {"dynamodb:GetItem", "dynamodb:BatchGetItem"}
    assert "dynamodb:UpdateItem" in grants[arn_of("DeliveriesTable")]
    assert grants[arn_of("DeliveryQueue")] == {"sqs:SendMessage"}
    # A tenant disabling its endpoint tells the operators (endpoint.disabled, reason operator).
    assert grants[repr({"Ref": "OperationsTopic"})] == {"sns:Publish"}
    every_action = set().union(*grants.values())
    assert not {"dynamodb:Scan", "sqs:ReceiveMessage", "firehose:PutRecordBatch"} & every_action
    assert properties(template, "PortalFunction")["Role"] == {"Fn::GetAtt": ["PortalRole", "Arn"]}
    variables = function_variables(template, "PortalFunction")
    assert variables["JOBHOOKS_PORTAL_KEY_SECRET_ARN"] == {"Ref": "PortalTokenKey"}
    assert variables["JOBHOOKS_PORTAL_SESSION_MINUTES"] == {"Ref": "PortalSessionMinutes"}
    # The fetcher keys verify replayed quarantine messages: an operator's route only.
    assert "JOBHOOKS_FETCHER_KEYS_SECRET_ARN" not in variables


def test_the_other_functions_never_touch_portal_access(template: dict[str, Any]) -> None:
    for role in ("IngestRole", "DeliverRole"):
        resources = actions_by_resource(template, role)
        assert arn_of("AccessTable") not in resources, role
        assert repr({"Ref": "PortalTokenKey"}) not in resources, role


def test_outputs_name_the_portal(template: dict[str, Any]) -> None:
    outputs = template["Outputs"]
    assert outputs["PortalUrl"]["Value"]["Fn::Sub"].endswith("/portal")
    assert outputs["AccessTableName"]["Value"] == {"Ref": "AccessTable"}
