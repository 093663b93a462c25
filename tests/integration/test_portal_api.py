"""The tenant portal's API through the gateway as template.yaml defines it: one-time links,
session cookies, the portal authorizer, and one tenant's data only."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from jobhooks.access.callers import SESSION_COOKIE
from jobhooks.access.context import get_portal_context
from jobhooks.portal.pages import CONTENT_SECURITY_POLICY
from jobhooks_tools.local.template import LocalResources
from standardwebhooks.webhooks import Webhook

from tests.integration.api_support import ApiAnswer, InProcessApi, Receiver, api_log, use_context
from tests.integration.history_support import Deliveries
from tests.integration.portal_support import (
    PortalBrowser,
    exchange,
    gateway_api,
    genuine_link,
    issue_link,
    link_token,
    open_portal,
    session_token,
)

FORBIDDEN = {"message": "Forbidden"}  # what API Gateway answers when the authorizer denies


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.stop()


@pytest.fixture
def api(stack: LocalResources) -> Iterator[InProcessApi]:
    api = gateway_api()
    with use_context(api.module, allow_private_webhooks=True):
        yield api


# -- links and sessions ------------------------------------------------------------------------


def test_an_operator_link_opens_a_session_for_its_tenant(api: InProcessApi) -> None:
    before = datetime.now(UTC)
    link = issue_link(api, "acme")
    url = link.body["url"]
    assert url.startswith("http://") and "/portal#t=v1." in url
    assert "?" not in url  # the token is in the fragment only, never in the path or query
    expires = datetime.fromisoformat(link.body["expires_at"].replace("Z", "+00:00"))
    assert before + timedelta(minutes=14) < expires <= before + timedelta(minutes=15, seconds=2)

    opened = exchange(api, link_token(url))
    assert opened.status == 200, opened.text
    assert opened.body["tenant_id"] == "acme"
    cookie = opened.headers["set-cookie"]
    attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")[1:]}
    assert cookie.startswith(f"{SESSION_COOKIE}=v1.")
    assert {"secure", "httponly", "path", "max-age", "samesite"} <= attributes
    assert "SameSite=Strict" in cookie and "Path=/" in cookie and "Domain" not in cookie
    assert "Max-Age=3600" in cookie

    browser = PortalBrowser(api, session_token(opened))
    me = browser.get("/portal/api/session")
    assert me.status == 200 and me.body["tenant_id"] == "acme"
    assert me.body["session_id"] == opened.body["session_id"]


def test_a_link_opens_one_session_only(api: InProcessApi) -> None:
    token = link_token(issue_link(api, "acme").body["url"])
    assert exchange(api, token).status == 200
    again = exchange(api, token)
    assert again.status == 410 and again.error["code"] == "link_used"


@pytest.mark.parametrize("ttl", [59, 86_401])
def test_link_lifetimes_are_bounded(api: InProcessApi, ttl: int) -> None:
    refused = api.call("POST", "/v1/portal/links", body={"tenant_id": "acme", "ttl_seconds": ttl})
    assert refused.status == 422 and refused.error["field"] == "ttl_seconds"


def test_expired_tampered_and_forged_links_are_denied_before_the_function(
    api: InProcessApi,
) -> None:
    expired = genuine_link("acme", expires_in=-1)
    good = link_token(issue_link(api, "acme").body["url"])
    version, claims, mac = good.split(".")
    tampered = f"{version}.{claims[:-2]}{'A' if claims[-2] != 'A' else 'B'}{claims[-1]}.{mac}"
    forged = genuine_link("acme", expires_in=600).rsplit(".", 1)[0] + "." + "A" * 43
    for token in (expired, tampered, forged, "", "not-a-token", good + "x"):
        denied = exchange(api, token)
        assert (denied.status, denied.body) == (403, FORBIDDEN), token
    # The genuine link still works: the failed attempts did not use it up.
    assert exchange(api, good).status == 200


def test_a_session_is_not_a_link_and_a_link_is_not_a_session(api: InProcessApi) -> None:
    token = link_token(issue_link(api, "acme").body["url"])
    browser = PortalBrowser(api, token)  # the link where a session belongs
    assert browser.get("/portal/api/session").status == 403
    opened = exchange(api, token)
    assert exchange(api, session_token(opened)).status == 403  # the session where a link belongs


def test_revoking_a_tenant_ends_its_links_and_sessions_at_the_next_request(
    api: InProcessApi,
) -> None:
    acme = open_portal(api, "acme")
    globex = open_portal(api, "globex")
    unused = link_token(issue_link(api, "acme").body["url"])
    revoked = api.call("POST", "/v1/portal/revocations", body={"tenant_id": "acme"})
    assert revoked.status == 200 and revoked.body == {
        "tenant_id": "acme",
        "session_id": None,
        "epoch": 1,
        "revoked": True,
    }
    assert acme.get("/portal/api/session").status == 403
    assert exchange(api, unused).status == 403
    assert globex.get("/portal/api/session").status == 200
    # A link issued after the revocation works.
    assert open_portal(api, "acme").get("/portal/api/session").status == 200


def test_one_session_can_be_revoked_by_id_and_signing_out_ends_it(api: InProcessApi) -> None:
    first, second = open_portal(api, "acme"), open_portal(api, "acme")
    session_id = first.get("/portal/api/session").body["session_id"]
    revoked = api.call("POST", "/v1/portal/revocations", body={"session_id": session_id})
    assert revoked.status == 200, revoked.text
    assert first.get("/portal/api/session").status == 403
    assert second.get("/portal/api/session").status == 200

    signed_out = second.delete("/portal/api/session")
    assert signed_out.status == 204
    assert "Max-Age=0" in signed_out.headers["set-cookie"]
    assert second.get("/portal/api/session").status == 403


class OwnProcessAuthorizer:
    """The portal authorizer as Lambda runs it: a function of its own, whose process shares no
    cache with the API's or the portal's (in a test they share one `PortalContext`, keyed by
    their settings, and so the token key the first of them read)."""

    def __init__(self, authorizer: Any) -> None:
        self.authorizer = authorizer

    def __call__(self, event: Any, context: Any) -> Any:
        get_portal_context.cache_clear()
        try:
            return self.authorizer(event, context)
        finally:
            get_portal_context.cache_clear()


def test_the_api_the_authorizer_and_the_portal_each_read_the_token_key_with_their_own_role(
    api: InProcessApi,
) -> None:
    # The API reads the key to sign the link (ApiRole), the authorizer to check it
    # (AuthorizerRole), the portal to seal the session it opens (PortalRole): on AWS each in
    # its own process, so each role needs its grant on the secret.
    assert api.gateway is not None
    authorizers = api.gateway.authorizers
    as_loaded = dict(authorizers)
    authorizers.update({name: OwnProcessAuthorizer(a) for name, a in as_loaded.items()})
    try:
        get_portal_context.cache_clear()
        token = link_token(issue_link(api, "acme").body["url"])
        opened = exchange(api, token)
    finally:
        authorizers.update(as_loaded)
    assert opened.status == 200, opened.text
    browser = PortalBrowser(api, session_token(opened))
    assert browser.get("/portal/api/session").body["tenant_id"] == "acme"


def test_revocation_names_exactly_one_target(api: InProcessApi) -> None:
    for body in ({}, {"tenant_id": "acme", "session_id": "ses_" + "0" * 32}, {"session_id": "x"}):
        assert api.call("POST", "/v1/portal/revocations", body=body).status == 422, body


# -- the tenant's endpoints ---------------------------------------------------------------------


def test_a_tenant_manages_its_endpoints_through_the_portal(
    api: InProcessApi, receiver: Receiver
) -> None:
    browser = open_portal(api, "acme")
    created = browser.post(
        "/portal/api/subscriptions",
        {"url": receiver.url, "event_types": ["job.failed"], "description": "alerts"},
    )
    assert created.status == 201, created.text
    assert created.body["tenant_id"] == "acme" and created.body["secret"].startswith("whsec_")
    subscription_id, secret = created.body["subscription_id"], created.body["secret"]
    path = f"/portal/api/subscriptions/{subscription_id}"

    listed = browser.get("/portal/api/subscriptions")
    assert [s["subscription_id"] for s in listed.body["subscriptions"]] == [subscription_id]
    assert secret not in listed.text and '"secret"' not in listed.text
    shown = browser.get(path)
    assert shown.status == 200 and "secret" not in shown.body

    changed = browser.patch(path, {"event_types": ["job.completed", "job.failed"]})
    assert changed.status == 200 and changed.body["event_types"] == ["job.completed", "job.failed"]
    disabled = browser.patch(path, {"status": "disabled"})
    assert disabled.body["status"] == "disabled"
    assert browser.patch(path, {"status": "active"}).body["status"] == "active"

    tested = browser.post(f"{path}/test")
    assert tested.status == 200 and tested.body["delivered"] is True, tested.text
    (webhook,) = receiver.requests
    assert Webhook(secret).verify(webhook.body, webhook.headers)["type"] == "jobhooks.test"

    rotated = browser.post(f"{path}/rotate-secret", {"grace_seconds": 0})
    assert rotated.status == 200 and rotated.body["secret"] != secret
    assert browser.get(f"{path}/deliveries").body == {"deliveries": [], "next_cursor": None}

    assert browser.delete(path).status == 204
    assert browser.get(path).status == 404


def test_a_tenant_tests_an_endpoint_the_operator_created_the_portal_opening_its_key_with_kms(
    stack: LocalResources, receiver: Receiver
) -> None:
    # The operator created it through the API, in another instance: the portal's has never
    # seen the subscription's data key and asks KMS to decrypt it (PortalRole's kms:Decrypt)
    # to sign the test webhook. A context of its own is such an instance.
    api = gateway_api()
    with use_context(api.module, allow_private_webhooks=True):
        created = api.post("/v1/subscriptions", {"tenant_id": "acme", "url": receiver.url})
    assert created.status == 201, created.text
    with use_context(api.module, allow_private_webhooks=True):
        browser = open_portal(api, "acme")
        tested = browser.post(f"/portal/api/subscriptions/{created.body['subscription_id']}/test")
    assert tested.status == 200 and tested.body["delivered"] is True, tested.text
    (webhook,) = receiver.requests
    signed = Webhook(created.body["secret"]).verify(webhook.body, webhook.headers)
    assert signed["type"] == "jobhooks.test"


def test_a_tenant_sets_changes_and_clears_an_endpoints_job_filter_in_the_portal(
    api: InProcessApi, receiver: Receiver
) -> None:
    browser = open_portal(api, "acme")
    created = browser.post(
        "/portal/api/subscriptions", {"url": receiver.url, "job_names": ["billing-*"]}
    )
    assert created.status == 201, created.text
    assert created.body["job_names"] == ["billing-*"]
    path = f"/portal/api/subscriptions/{created.body['subscription_id']}"

    changed = browser.patch(path, {"job_names": ["billing-*", "nightly-report"]})
    assert changed.status == 200 and changed.body["job_names"] == ["billing-*", "nightly-report"]
    assert browser.get(path).body["job_names"] == ["billing-*", "nightly-report"]
    refused = browser.patch(path, {"job_names": ["x" * 129]})
    assert refused.status == 422, refused.text
    assert refused.error["code"] == "invalid_request"  # the schema bounds a pattern
    cleared = browser.patch(path, {"job_names": []})
    assert cleared.status == 200 and cleared.body["job_names"] == []


def test_the_network_policy_applies_to_portal_endpoints(stack: LocalResources) -> None:
    api = gateway_api()
    with use_context(api.module):  # a deployed stack: private addresses are refused
        browser = open_portal(api, "acme")
        refused = browser.post("/portal/api/subscriptions", {"url": "https://127.0.0.1/hook"})
        assert refused.status == 422 and refused.error["field"] == "url"
        assert refused.error["code"] == "address_not_public"
        plain = browser.post("/portal/api/subscriptions", {"url": "http://hooks.example.com/x"})
        assert plain.status == 422 and plain.error["field"] == "url"
        assert browser.get("/portal/api/subscriptions").body["subscriptions"] == []


def test_a_tenant_at_its_endpoint_cap_is_refused_with_409_and_the_reason(
    stack: LocalResources,
) -> None:
    api = gateway_api()
    with use_context(api.module, max_subscriptions_per_tenant=1):
        browser = open_portal(api, "acme")
        assert (
            browser.post("/portal/api/subscriptions", {"url": "https://a.example/x"}).status == 201
        )
        refused = browser.post("/portal/api/subscriptions", {"url": "https://b.example/x"})
        assert refused.status == 409
        assert refused.error["code"] == "subscription_limit_reached"
        assert "JOBHOOKS_MAX_SUBSCRIPTIONS_PER_TENANT" in refused.error["message"]
        assert len(browser.get("/portal/api/subscriptions").body["subscriptions"]) == 1
        # Another tenant has a cap of its own.
        other = open_portal(api, "globex")
        assert other.post("/portal/api/subscriptions", {"url": "https://c.example/x"}).status == 201


def test_the_tenant_comes_from_the_session_never_from_the_request(api: InProcessApi) -> None:
    browser = open_portal(api, "acme")
    smuggled = browser.post(
        "/portal/api/subscriptions", {"url": "https://hooks.example.com/x", "tenant_id": "globex"}
    )
    assert smuggled.status == 422 and smuggled.error["field"] == "tenant_id"
    listed = browser.get("/portal/api/subscriptions", tenant_id="globex")
    assert listed.status == 200 and listed.body["subscriptions"] == []
    operator = api.call("GET", "/v1/subscriptions", query={"tenant_id": "globex"})
    assert operator.body["subscriptions"] == []


def test_another_tenants_ids_typed_by_hand_are_not_found_and_left_unchanged(
    api: InProcessApi, receiver: Receiver
) -> None:
    theirs = api.call(
        "POST", "/v1/subscriptions", body={"tenant_id": "globex", "url": receiver.url}
    ).body
    their_id = theirs["subscription_id"]
    browser = open_portal(api, "acme")

    def attempts(subscription_id: str) -> list[ApiAnswer]:
        path = f"/portal/api/subscriptions/{subscription_id}"
        return [
            browser.get(path),
            browser.patch(path, {"url": "https://attacker.example.com/steal"}),
            browser.patch(path, {"status": "disabled"}),
            browser.post(f"{path}/rotate-secret", {"grace_seconds": 0}),
            browser.post(f"{path}/test"),
            browser.get(f"{path}/deliveries"),
            browser.delete(path),
        ]

    nobodys = "sub_doesNotExist0000000"
    for theirs_answer, nobodys_answer in zip(attempts(their_id), attempts(nobodys), strict=True):
        # Exactly what an id that exists nowhere gets: nothing says it exists elsewhere.
        assert theirs_answer.status == 404, theirs_answer.text
        assert theirs_answer.text.replace(their_id, nobodys) == nobodys_answer.text
        assert "globex" not in theirs_answer.text
    assert receiver.requests == []  # no test send reached their endpoint
    after = api.call("GET", f"/v1/subscriptions/{their_id}").body
    assert after["url"] == receiver.url and after["status"] == "active"
    assert after["secrets"] == theirs["secrets"]


def test_a_tenant_sees_its_first_attempt_successes_and_never_another_tenants(
    stack: LocalResources, api: InProcessApi, receiver: Receiver
) -> None:
    browser = open_portal(api, "acme")
    mine = browser.post("/portal/api/subscriptions", {"url": receiver.url}).body["subscription_id"]
    theirs = api.call(
        "POST", "/v1/subscriptions", body={"tenant_id": "globex", "url": receiver.url}
    ).body["subscription_id"]
    deliveries = Deliveries(stack)
    [event] = deliveries.claim_batch(1, [mine])
    deliveries.succeed([event], mine)
    [their_event] = deliveries.claim_batch(1, [theirs], tenant_id="globex")
    deliveries.succeed([their_event], theirs)
    [their_failure] = deliveries.claim_batch(1, [theirs], tenant_id="globex")
    deliveries.attempt(their_failure, theirs, 500)

    listed = browser.get(f"/portal/api/subscriptions/{mine}/deliveries")
    assert [d["delivery_id"] for d in listed.body["deliveries"]] == [event.delivery_id(mine)]
    shown = browser.get(f"/portal/api/deliveries/{event.delivery_id(mine)}")
    assert shown.status == 200, shown.text
    assert [a["status_code"] for a in shown.body["attempts"]] == [200]

    nobodys = "dlv_" + "0" * 32
    for their_id in (their_event.delivery_id(theirs), their_failure.delivery_id(theirs)):
        answers = [
            (
                browser.get(f"/portal/api/deliveries/{their_id}"),
                browser.get(f"/portal/api/deliveries/{nobodys}"),
            ),
            (
                browser.post(f"/portal/api/deliveries/{their_id}/replay"),
                browser.post(f"/portal/api/deliveries/{nobodys}/replay"),
            ),
        ]
        for answer, nowhere in answers:
            assert answer.status == 404, answer.text
            assert answer.text.replace(their_id, nobodys) == nowhere.text
    assert browser.get(f"/portal/api/subscriptions/{theirs}/deliveries").status == 404
    operator = api.call("GET", "/v1/deliveries", query={"subscription_id": theirs})
    assert len(operator.body["deliveries"]) == 2


def test_portal_writes_need_the_portal_header(api: InProcessApi) -> None:
    browser = open_portal(api, "acme")
    cookie = ("cookie", f"{SESSION_COOKIE}={browser.token}")
    for method, path in (
        ("POST", "/portal/api/subscriptions"),
        ("DELETE", "/portal/api/session"),
    ):
        answer = api.call(
            method, path, body={"url": "https://hooks.example.com/x"}, headers=[cookie]
        )
        assert answer.status == 403 and answer.error["code"] == "portal_header_required"
    assert browser.get("/portal/api/subscriptions").body["subscriptions"] == []


# -- the page, headers, logs ----------------------------------------------------------------------


def test_the_page_and_assets_are_public_and_carry_strict_headers(api: InProcessApi) -> None:
    anonymous = gateway_api(caller_arn=None)
    page = anonymous.call("GET", "/portal", content_type=None)
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/portal/assets/portal.js">' in page.text
    assert "<script>" not in page.text and "style=" not in page.text
    for answer in (page, open_portal(api, "acme").get("/portal/api/subscriptions")):
        assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert answer.headers["referrer-policy"] == "no-referrer"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["cache-control"] == "no-store"
    # A browser may add the trailing slash: the same page, not the IAM routes' 403.
    slash = anonymous.call("GET", "/portal/", content_type=None)
    assert (slash.status, slash.text) == (200, page.text)
    script = anonymous.call("GET", "/portal/assets/portal.js", content_type=None)
    assert script.status == 200 and script.headers["content-type"].startswith("text/javascript")
    assert script.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    for missing in ("/portal/assets/index.html", "/portal/assets/nothing.js"):
        assert anonymous.call("GET", missing, content_type=None).status == 404
    # The portal's API itself is not public.
    assert anonymous.call("GET", "/portal/api/subscriptions").status == 403


def test_no_token_or_cookie_reaches_a_log(
    api: InProcessApi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Even with Powertools told to log every event.
    monkeypatch.setenv("POWERTOOLS_LOGGER_LOG_EVENT", "true")
    with api_log(*api.function_loggers()) as lines:
        link = issue_link(api, "acme").body["url"]
        token = link_token(link)
        opened = exchange(api, token)
        session = session_token(opened)
        browser = PortalBrowser(api, session)
        browser.get("/portal/api/subscriptions")
        exchange(api, token)  # reused: refused, and logged as such
        exchange(api, genuine_link("acme", expires_in=-5))  # denied by the authorizer
    captured = capsys.readouterr()
    logged = "\n".join(line.text for line in lines) + captured.out + captured.err
    assert logged, "nothing was logged at all"
    for secret in (token, session, token.split(".")[2], session.split(".")[2]):
        assert secret not in logged


# -- grants ---------------------------------------------------------------------------------------


BOUND = "arn:aws:sts::123456789012:assumed-role/acme-webhooks/ci"


def test_grants_bind_callers_to_tenants_and_only_operators_manage_them(
    stack: LocalResources,
) -> None:
    operator = InProcessApi()
    with use_context(operator.module):
        added = operator.call(
            "POST",
            "/v1/grants",
            body={
                "principal_pattern": "arn:aws:sts::123456789012:assumed-role/acme-webhooks/*",
                "tenants": ["acme"],
                "description": "acme's CI",
            },
        )
        assert added.status == 201, added.text
        assert added.body["created_by"].startswith("arn:aws:iam::")
        grant_id = added.body["grant_id"]
        listed = operator.call("GET", "/v1/grants").body["grants"]
        assert [g["grant_id"] for g in listed] == [grant_id]

        bound = InProcessApi(operator.module, caller_arn=BOUND)
        for method, path, body in (
            ("GET", "/v1/grants", None),
            ("POST", "/v1/grants", {"principal_pattern": BOUND, "tenants": ["globex"]}),
            ("DELETE", f"/v1/grants/{grant_id}", None),
            ("POST", "/v1/portal/links", {"tenant_id": "acme"}),
            ("POST", "/v1/portal/revocations", {"tenant_id": "acme"}),
        ):
            answer = bound.call(method, path, body=body)
            assert answer.status == 403 and answer.error["code"] == "operator_only", path

        removed = operator.call("DELETE", f"/v1/grants/{grant_id}")
        assert removed.status == 204
        assert operator.call("DELETE", f"/v1/grants/{grant_id}").status == 404
        # Unbound again, and named by no operator pattern: refused, never promoted.
        for path in ("/v1/grants", "/v1/subscriptions?tenant_id=acme", "/v1/dlq"):
            path, _, query = path.partition("?")
            params = dict([query.split("=")]) if query else None
            answer = bound.call("GET", path, query=params)
            assert answer.status == 403 and answer.error["code"] == "not_authorized", path


def test_an_operator_cannot_bind_themselves(stack: LocalResources) -> None:
    operator = InProcessApi()
    with use_context(operator.module):
        answer = operator.call(
            "POST",
            "/v1/grants",
            body={"principal_pattern": "arn:aws:iam::*:user/*", "tenants": ["acme"]},
        )
        assert answer.status == 409 and answer.error["code"] == "grant_binds_caller"
        role = operator.call(
            "POST",
            "/v1/grants",
            body={"principal_pattern": "arn:aws:iam::123456789012:role/x", "tenants": ["a"]},
        )
        assert role.status == 422 and role.error["field"] == "principal_pattern"
        assert "assumed-role/x/*" in role.error["message"]


def test_requests_without_the_identity_their_route_needs_are_refused_by_the_function(
    stack: LocalResources,
) -> None:
    # As if API Gateway were misconfigured: the function refuses on its own.
    nobody = InProcessApi(caller_arn=None)
    with use_context(nobody.module):
        refused = nobody.call("GET", "/v1/subscriptions", query={"tenant_id": "acme"})
        assert refused.status == 403 and refused.error["code"] == "iam_identity_required"
        session_only = nobody.call(
            "GET",
            "/portal/api/subscriptions",
            authorizer={"iam": {"userArn": "arn:aws:iam::123456789012:user/ops"}},
        )
        assert session_only.status == 401 and session_only.error["code"] == "session_required"
        assert nobody.call("POST", "/portal/session", content_type=None).status == 401
        assert nobody.call("GET", "/portal", content_type=None).status == 200


# -- the job health chart -------------------------------------------------------------------------


def analytics_row(account: str, job: str, at: datetime, failed: bool, duration: int) -> Any:
    import uuid

    from jobhooks.analytics.row import AnalyticsRow

    return AnalyticsRow(
        timestamp_utc=at,
        event_id=f"fetcher.job.{'failed' if failed else 'completed'}.{uuid.uuid4()}",
        release="fetcher@2.0.2",
        account_id=account,
        job_id=str(uuid.uuid4()),
        job_name=job,
        queue_name="//lerian.fetcher/worker",
        attempt_count=1,
        queue_wait_ms=0,
        duration_ms=duration,
        status="failure" if failed else "success",
        unmeasured=("queue_wait_ms", "duration_ms") if failed else ("queue_wait_ms",),
        error_category="unknown" if failed else None,
    )


@pytest.mark.parametrize("pseudonymized", [False, True])
def test_job_health_reads_the_sessions_tenant_only_in_the_form_the_table_stores(
    api: InProcessApi, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, pseudonymized: bool
) -> None:
    from jobhooks.analytics.pseudonymize import StaticKeyPseudonymizer
    from jobhooks_tools.local.analytics.files import LocalFileSink

    key = "k" * 40
    stored = StaticKeyPseudonymizer(key).pseudonym if pseudonymized else (lambda _column, v: v)
    day = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    if day > datetime.now(UTC):
        day -= timedelta(days=1)
    rows = [
        analytics_row(stored("account_id", "acme"), "payments", day, False, 100),
        analytics_row(stored("account_id", "acme"), "payments", day, False, 300),
        analytics_row(stored("account_id", "acme"), "payments", day, True, 0),
        analytics_row(stored("account_id", "globex"), "globex-secret-job", day, True, 0),
    ]
    LocalFileSink(tmp_path).put_rows(rows)
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_DIR", str(tmp_path))
    if pseudonymized:
        monkeypatch.setenv("JOBHOOKS_ANALYTICS_PSEUDONYMIZATION_KEY", key)
    browser = open_portal(api, "acme")

    report = browser.get("/portal/api/analytics/jobs", days=3)
    assert report.status == 200, report.text
    assert report.body["configured"] is True
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

    monkeypatch.delenv("JOBHOOKS_ANALYTICS_DIR")
    unconfigured = browser.get("/portal/api/analytics/jobs")
    assert unconfigured.body["configured"] is False and unconfigured.body["points"] == []
