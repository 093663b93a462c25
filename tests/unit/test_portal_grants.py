"""Grants: IAM-style ARN patterns, and which callers they bind to which tenants."""

from __future__ import annotations

import pytest
from jobhooks.access.access_store import StoredGrant
from jobhooks.access.callers import Caller, CallerKind, gate_iam_request, iam_caller
from jobhooks.access.exceptions import (
    IamIdentityRequiredError,
    InvalidGrantTenantsError,
    InvalidPrincipalPatternError,
    NotAuthorizedError,
    OperatorOnlyError,
    SessionRequiredError,
    TenantNotFoundError,
    TenantRequiredError,
)
from jobhooks.access.grants import (
    grant_matches,
    operator_matches,
    parse_operator_principals,
    principal_matches,
    tenants_of,
    validate_principal_pattern,
    validate_tenants,
)
from jobhooks.portal.gate import gate_portal_request

ROLE_SESSION = "arn:aws:sts::123456789012:assumed-role/acme-webhooks/ci-run-42"


@pytest.mark.parametrize(
    ("pattern", "arn", "matches"),
    [
        ("arn:aws:sts::123456789012:assumed-role/acme-webhooks/*", ROLE_SESSION, True),
        ("arn:aws:sts::123456789012:assumed-role/acme-webhooks/*", ROLE_SESSION + "x", True),
        ("arn:aws:sts::123456789012:assumed-role/acme-*/*", ROLE_SESSION, True),
        ("arn:aws:sts::123456789012:assumed-role/acme-webhooks/ci-run-4?", ROLE_SESSION, True),
        ("arn:aws:sts::123456789012:assumed-role/acme-webhooks/ci-run-?", ROLE_SESSION, False),
        # IAM names are case-insensitive; the whole ARN must match.
        ("arn:aws:sts::123456789012:assumed-role/ACME-webhooks/*", ROLE_SESSION, True),
        ("arn:aws:sts::123456789012:assumed-role/acme-webhooks", ROLE_SESSION, False),
        ("arn:aws:sts::*:assumed-role/acme-webhooks/*", ROLE_SESSION, True),
        # Regex characters in a pattern are literal.
        ("arn:aws:sts::123456789012:assumed-role/acme.webhooks/*", ROLE_SESSION, False),
        ("arn:aws:iam::123456789012:user/acme-ci", "arn:aws:iam::123456789012:user/acme-ci", True),
        (
            "arn:aws:iam::123456789012:user/acme-ci",
            "arn:aws:iam::123456789012:user/acme-ci2",
            False,
        ),
    ],
)
def test_patterns_match_like_iam_string_like(pattern: str, arn: str, matches: bool) -> None:
    assert principal_matches(pattern, arn) is matches


def test_a_role_arn_pattern_is_refused_with_the_session_form_to_use() -> None:
    with pytest.raises(InvalidPrincipalPatternError) as refused:
        validate_principal_pattern("arn:aws:iam::123456789012:role/acme-webhooks")
    assert "arn:aws:sts::123456789012:assumed-role/acme-webhooks/*" in refused.value.message


@pytest.mark.parametrize(
    "pattern",
    ["", "*", "arn:*", "acme", "arn:aws:s3:::bucket", "arn:aws:iam::1 2:user/x", "a" * 2049],
)
def test_patterns_that_are_not_iam_principal_arns_are_refused(pattern: str) -> None:
    with pytest.raises(InvalidPrincipalPatternError):
        validate_principal_pattern(pattern)


def test_tenants_are_deduplicated_and_bounded() -> None:
    assert validate_tenants(["acme", "globex", "acme"]) == ("acme", "globex")
    for bad in ([], [""], ["a\x00b"], ["x" * 257], [str(n) for n in range(101)]):
        with pytest.raises(InvalidGrantTenantsError):
            validate_tenants(bad)


def grant(pattern: str, *tenants: str) -> StoredGrant:
    return StoredGrant("grt_0123456789abcdef", pattern, tenants, "", "", "")


def test_a_caller_is_bound_to_the_union_of_the_grants_it_matches() -> None:
    grants = [
        grant("arn:aws:sts::123456789012:assumed-role/acme-webhooks/*", "acme"),
        grant("arn:aws:sts::123456789012:assumed-role/*/ci-run-42", "acme-staging"),
        grant("arn:aws:iam::123456789012:user/globex", "globex"),
    ]
    assert tenants_of(ROLE_SESSION, grants) == {"acme", "acme-staging"}
    assert tenants_of("arn:aws:iam::123456789012:user/ops", grants) == frozenset()


OPS = "arn:aws:iam::123456789012:user/ops"
ACME_GRANTS = [
    grant("arn:aws:sts::123456789012:assumed-role/acme-ci/*", "acme"),
    grant("arn:aws:iam::123456789012:user/acme-bot", "acme"),
    grant("arn:aws:iam::123456789012:user/globex-bot", "globex"),
]


@pytest.mark.parametrize(
    ("arn", "tenants"),
    [
        # What a principal bound to acme can obtain for itself: each is bound to acme still.
        ("arn:aws:sts::123456789012:federated-user/acme-bot", {"acme"}),
        ("arn:aws:iam::123456789012:user/ci/acme-bot", {"acme"}),
        ("arn:aws:iam::123456789012:user/Acme-Bot", {"acme"}),
        ("arn:aws:sts::123456789012:assumed-role/ACME-CI/run-1", {"acme"}),
        ("arn:aws:sts::123456789012:assumed-role/Acme-Ci/run-1", {"acme"}),
        ("arn:aws:iam::123456789012:user/a/b/ACME-BOT", {"acme"}),
        # Not another user's, nor another account's, nor a longer name's.
        ("arn:aws:iam::123456789012:user/acme-bot2", set()),
        ("arn:aws:iam::210987654321:user/acme-bot", set()),
        ("arn:aws:sts::123456789012:assumed-role/acme-ci2/run-1", set()),
        # Another partition is another account.
        ("arn:aws-cn:iam::123456789012:user/acme-bot", set()),
        ("arn:aws-us-gov:sts::123456789012:assumed-role/acme-ci/run-1", set()),
    ],
)
def test_grants_bind_every_form_of_the_principal_they_name(arn: str, tenants: set[str]) -> None:
    assert tenants_of(arn, ACME_GRANTS) == tenants


def test_a_grant_naming_a_user_with_its_path_binds_that_user_whatever_the_path() -> None:
    pattern = "arn:aws:iam::123456789012:user/ci/acme-bot"
    assert grant_matches(pattern, "arn:aws:iam::123456789012:user/acme-bot")
    assert grant_matches(pattern, "arn:aws:sts::123456789012:federated-user/acme-bot")
    # A wildcard path is the path it says.
    assert grant_matches("arn:aws:iam::123456789012:user/ci/*", pattern)
    assert not grant_matches(
        "arn:aws:iam::123456789012:user/ci/*", "arn:aws:iam::123456789012:user/ops/acme-bot"
    )


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:sts::123456789012:federated-user/acme-bot",
        "arn:aws:iam::123456789012:user/ci/acme-bot",
        "arn:aws:iam::123456789012:user/ACME-BOT",
        "arn:aws:sts::123456789012:assumed-role/Acme-CI/run-1",
        "arn:aws-cn:iam::123456789012:user/acme-bot",
        "arn:aws:sts::123456789012:federated-user/someone",
        "arn:aws:iam::123456789012:user/nobody",
    ],
)
def test_a_caller_matching_no_grant_and_no_operator_pattern_is_refused(arn: str) -> None:
    bound_elsewhere = [grant("arn:aws:iam::123456789012:user/globex-bot", "globex")]
    with pytest.raises(NotAuthorizedError) as refused:
        iam_caller(arn, bound_elsewhere, [OPS])
    assert refused.value.status == 403 and refused.value.code == "not_authorized"


def test_operator_patterns_name_operators_in_every_form_but_federation() -> None:
    assert operator_matches(OPS, "arn:aws:iam::123456789012:user/OPS")
    assert operator_matches(OPS, "arn:aws:iam::123456789012:user/admins/ops")
    # Anyone with sts:GetFederationToken picks the name of a federated user: a user's pattern
    # never admits them as an operator; a pattern names federated-user/... itself to do so.
    assert not operator_matches(OPS, "arn:aws:sts::123456789012:federated-user/ops")
    assert operator_matches(
        "arn:aws:sts::123456789012:federated-user/ops",
        "arn:aws:sts::123456789012:federated-user/ops",
    )
    assert not operator_matches(OPS, "arn:aws-cn:iam::123456789012:user/ops")


def test_a_grant_binds_even_a_caller_an_operator_pattern_names() -> None:
    bound = iam_caller(OPS, [grant("arn:aws:iam::123456789012:user/*", "acme")], [OPS])
    assert bound.kind is CallerKind.TENANT_BOUND and bound.tenants == {"acme"}


def test_operator_principals_are_comma_separated_patterns_checked_like_grants() -> None:
    assert parse_operator_principals(f" {OPS} ,, arn:aws:sts::*:assumed-role/admin/*") == (
        OPS,
        "arn:aws:sts::*:assumed-role/admin/*",
    )
    assert parse_operator_principals("") == ()
    with pytest.raises(InvalidPrincipalPatternError) as refused:
        parse_operator_principals(f"{OPS},arn:aws:iam::123456789012:role/admin")
    assert "arn:aws:iam::123456789012:role/admin" in refused.value.message
    assert "assumed-role/admin/*" in refused.value.message


def test_operators_act_on_any_tenant_bound_callers_on_their_own_only() -> None:
    operator = iam_caller(OPS, [], [OPS])
    assert operator.kind is CallerKind.OPERATOR
    assert operator.scope(None) is None and operator.scope("globex") == "globex"
    operator.require_operator("GET /v1/dlq")
    with pytest.raises(TenantRequiredError):
        operator.tenant_for(None)

    bound = iam_caller(
        ROLE_SESSION, [grant("arn:aws:sts::*:assumed-role/acme-webhooks/*", "acme")], []
    )
    assert bound.kind is CallerKind.TENANT_BOUND
    assert bound.scope(None) == "acme" and bound.tenant_for(None) == "acme"
    assert bound.scope("acme") == "acme"
    with pytest.raises(TenantNotFoundError):
        bound.scope("globex")
    with pytest.raises(OperatorOnlyError):
        bound.require_operator("GET /v1/dlq")
    assert bound.may_act_for("acme") and not bound.may_act_for("globex")

    several = Caller(CallerKind.TENANT_BOUND, ROLE_SESSION, frozenset({"acme", "initech"}))
    assert several.scope(None) is None
    with pytest.raises(TenantRequiredError):
        several.tenant_for(None)


def event(path: str, authorizer: dict[str, object] | None) -> dict[str, object]:
    context: dict[str, object] = {"http": {"method": "GET", "path": path}}
    if authorizer is not None:
        context["authorizer"] = authorizer
    return {"rawPath": path, "requestContext": context}


IAM = {"iam": {"userArn": "arn:aws:iam::123456789012:user/ops"}}
SESSION = {
    "lambda": {
        "kind": "session",
        "tenant_id": "acme",
        "token_id": "ses_" + "0" * 32,
        "expires_at": 1,
        "epoch": 0,
    }
}


@pytest.mark.parametrize(
    ("path", "authorizer", "refusal"),
    [
        ("/v1/subscriptions", IAM, None),
        ("/v1/subscriptions", None, IamIdentityRequiredError),
        ("/v1/subscriptions", {"iam": {"userArn": ""}}, IamIdentityRequiredError),
        # A portal session is no IAM caller.
        ("/v1/subscriptions", SESSION, IamIdentityRequiredError),
        ("/unknown", None, IamIdentityRequiredError),
        ("//v1/subscriptions", None, IamIdentityRequiredError),
        # The management API serves no public path: the portal is a function of its own.
        ("/portal", None, IamIdentityRequiredError),
    ],
)
def test_the_api_gate_refuses_requests_without_an_iam_caller(
    path: str, authorizer: dict[str, object] | None, refusal: type[Exception] | None
) -> None:
    refused = gate_iam_request(event(path, authorizer))
    assert (type(refused) if refused else None) is refusal


@pytest.mark.parametrize(
    ("path", "authorizer", "refusal"),
    [
        ("/portal", None, None),
        ("/portal/", None, None),
        ("/portal/assets/portal.js", None, None),
        ("/portal/api/subscriptions", SESSION, None),
        ("/portal/api/subscriptions", None, SessionRequiredError),
        ("/portal/api/subscriptions", IAM, SessionRequiredError),
        (
            "/portal/api/subscriptions",
            {"lambda": {**SESSION["lambda"], "kind": "link"}},
            SessionRequiredError,
        ),
        ("/portal/session", {"lambda": {**SESSION["lambda"], "kind": "link"}}, None),
        ("/portal/session", SESSION, SessionRequiredError),
        # Any other path of the portal function needs a session: it fails closed.
        ("/portal/sessions", None, SessionRequiredError),
        ("/portal/sessions", IAM, SessionRequiredError),
    ],
)
def test_the_portal_gate_refuses_requests_without_the_verdict_their_path_needs(
    path: str, authorizer: dict[str, object] | None, refusal: type[Exception] | None
) -> None:
    refused = gate_portal_request(event(path, authorizer))
    assert (type(refused) if refused else None) is refusal
