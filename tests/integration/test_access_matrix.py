"""Every route of the API for every kind of caller (docs/api.md, "Who may call").

/v1 routes x {operator, tenant-bound for the data's tenant, tenant-bound for another tenant, no
credentials}: built as API Gateway hands them over (`requestContext.authorizer.iam`, or none),
so the function's own checks are what is tested. Portal routes x {a session of the data's
tenant, a session of another tenant, an operator's IAM identity, no credentials}: through the
gateway as template.yaml defines it, with the portal authorizer function.

The data belongs to tenant acme: a subscription with a delivery of a real event (ingested and
delivered by the functions), an unmatched event, a quarantined message. A route that changes or
removes something gets a fresh object for each caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jobhooks_tools.local.api_server import openapi_document
from jobhooks_tools.local.template import LocalResources
from jobhooks_tools.sample_events import demo_key, make_job_event

from tests.integration.api_support import ApiAnswer, Bridge, InProcessApi, Receiver, use_context
from tests.integration.portal_support import (
    PORTAL_WRITE,
    exchange,
    fresh_link_token,
    fresh_session_token,
    gateway_api,
)

ALERT_RULE = {"tenant_id": "acme", "job_name": "billing-*", "failure_rate": 0.5}
BOUND_ACME = "arn:aws:sts::123456789012:assumed-role/acme-ci/run-1"
BOUND_GLOBEX = "arn:aws:sts::123456789012:assumed-role/globex-ci/run-1"
CALLERS = ("operator", "bound", "other", "nobody")


@dataclass
class World:
    api: InProcessApi
    bridge: Bridge
    receiver: Receiver
    subscription_id: str
    delivery_id: str
    event_id: str
    unmatched_event_id: str
    quarantine_id: str
    alert_rule_id: str

    def alert_rule(self) -> str:
        created = self.api.post("/v1/alerts", ALERT_RULE)
        assert created.status == 201, created.text
        return str(created.body["rule_id"])

    def subscription(self) -> str:
        created = self.api.post(
            "/v1/subscriptions", {"tenant_id": "acme", "url": self.receiver.url}
        )
        assert created.status == 201, created.text
        return str(created.body["subscription_id"])

    def grant(self) -> str:
        created = self.api.post(
            "/v1/grants",
            {"principal_pattern": "arn:aws:iam::123456789012:user/someone", "tenants": ["x"]},
        )
        assert created.status == 201, created.text
        return str(created.body["grant_id"])


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.stop()


@pytest.fixture
def world(
    stack: LocalResources,
    monkeypatch: pytest.MonkeyPatch,
    receiver: Receiver,
    tmp_path: Path,
) -> Iterator[World]:
    monkeypatch.setenv("JOBHOOKS_ALLOW_PRIVATE_WEBHOOKS", "true")
    monkeypatch.setenv("JOBHOOKS_RETRY_SCHEDULE", "0")
    # The analytics table on local files (the ingest function writes the events' rows there).
    monkeypatch.setenv("JOBHOOKS_ANALYTICS_DIR", str(tmp_path / "analytics"))
    bridge = Bridge.start(stack)
    api = InProcessApi()
    with use_context(api.module, allow_private_webhooks=True):
        for pattern, tenant in ((BOUND_ACME, "acme"), (BOUND_GLOBEX, "globex")):
            granted = api.post("/v1/grants", {"principal_pattern": pattern, "tenants": [tenant]})
            assert granted.status == 201, granted.text
        subscription_id = api.post(
            "/v1/subscriptions", {"tenant_id": "acme", "url": receiver.url}
        ).body["subscription_id"]
        event = make_job_event(demo_key(), tenant_id="acme")
        unmatched = make_job_event(demo_key(), tenant_id="acme-unmatched", status="failed")
        forged = make_job_event(demo_key(), tenant_id="acme").with_headers(
            **{"x-message-signature": "0" * 64}
        )
        for message in (event, unmatched, forged):
            bridge.publish(message.forwarded().to_json())
        bridge.ingest()
        bridge.deliver()
        (delivery,) = api.get("/v1/deliveries", subscription_id=subscription_id).body["deliveries"]
        (quarantined,) = api.get("/v1/quarantine").body["messages"]
        rule = api.post("/v1/alerts", ALERT_RULE)
        assert rule.status == 201, rule.text
        yield World(
            api=api,
            bridge=bridge,
            receiver=receiver,
            subscription_id=subscription_id,
            delivery_id=delivery["delivery_id"],
            event_id=delivery["event_id"],
            unmatched_event_id=bytes(unmatched.headers["ce-id"]).decode(),
            quarantine_id=quarantined["quarantine_id"],
            alert_rule_id=rule.body["rule_id"],
        )


@dataclass(frozen=True)
class Route:
    method: str
    path: Callable[[World], str]
    body: Callable[[World], Any] | None
    # The status per caller kind, in the order of CALLERS.
    statuses: tuple[int, int, int, int]

    def call(self, world: World, caller_arn: str | None) -> ApiAnswer:
        api = InProcessApi(world.api.module, caller_arn=caller_arn)
        body = self.body(world) if self.body is not None else None
        path, _, query = self.path(world).partition("?")
        params = dict(part.split("=", 1) for part in query.split("&")) if query else None
        return api.call(self.method, path, body=body, query=params)


SCOPED = (200, 200, 404, 403)
OPERATORS_ONLY = (200, 403, 403, 403)
V1_ROUTES = {
    "create_subscription": Route(
        "POST", lambda w: "/v1/subscriptions",
        lambda w: {"tenant_id": "acme", "url": w.receiver.url}, (201, 201, 404, 403),
    ),
    "list_subscriptions": Route("GET", lambda w: "/v1/subscriptions?tenant_id=acme", None, SCOPED),
    "get_subscription": Route(
        "GET", lambda w: f"/v1/subscriptions/{w.subscription_id}", None, SCOPED
    ),
    "update_subscription": Route(
        "PATCH", lambda w: f"/v1/subscriptions/{w.subscription_id}",
        lambda w: {"description": "changed"}, SCOPED,
    ),
    "delete_subscription": Route(
        "DELETE", lambda w: f"/v1/subscriptions/{w.subscription()}", None, (204, 204, 404, 403)
    ),
    "rotate_secret": Route(
        "POST", lambda w: f"/v1/subscriptions/{w.subscription()}/rotate-secret",
        lambda w: {"grace_seconds": 0}, SCOPED,
    ),
    "send_test_webhook": Route(
        "POST", lambda w: f"/v1/subscriptions/{w.subscription_id}/test", None, SCOPED
    ),
    "recover_subscription": Route(
        "POST", lambda w: f"/v1/subscriptions/{w.subscription_id}/recover",
        lambda w: {"since": "2026-01-01T00:00:00Z"}, (202, 202, 404, 403),
    ),
    "list_deliveries_of_subscription": Route(
        "GET", lambda w: f"/v1/deliveries?subscription_id={w.subscription_id}", None, SCOPED
    ),
    "list_deliveries_of_event": Route(
        "GET", lambda w: f"/v1/deliveries?event_id={w.event_id}", None, SCOPED
    ),
    "get_delivery": Route("GET", lambda w: f"/v1/deliveries/{w.delivery_id}", None, SCOPED),
    "replay_delivery": Route(
        "POST", lambda w: f"/v1/deliveries/{w.delivery_id}/replay", None, (202, 202, 404, 403)
    ),
    "replay_event": Route(
        "POST", lambda w: f"/v1/events/{w.event_id}/replay", None, (202, 202, 404, 403)
    ),
    "list_unmatched_events": Route(
        "GET", lambda w: "/v1/events/unmatched?tenant_id=acme", None, SCOPED
    ),
    "list_quarantine": Route("GET", lambda w: "/v1/quarantine", None, OPERATORS_ONLY),
    "get_quarantined_message": Route(
        "GET", lambda w: f"/v1/quarantine/{w.quarantine_id}", None, OPERATORS_ONLY
    ),
    "replay_quarantined_message": Route(
        "POST", lambda w: f"/v1/quarantine/{w.quarantine_id}/replay", None, OPERATORS_ONLY
    ),
    "list_dlq": Route("GET", lambda w: "/v1/dlq", None, OPERATORS_ONLY),
    "redrive_dlq": Route(
        "POST", lambda w: "/v1/dlq/redrive", lambda w: {"queue": "delivery"}, (202, 403, 403, 403)
    ),
    "list_grants": Route("GET", lambda w: "/v1/grants", None, OPERATORS_ONLY),
    "add_grant": Route(
        "POST", lambda w: "/v1/grants",
        lambda w: {"principal_pattern": "arn:aws:iam::123456789012:user/x", "tenants": ["x"]},
        (201, 403, 403, 403),
    ),
    "remove_grant": Route(
        "DELETE", lambda w: f"/v1/grants/{w.grant()}", None, (204, 403, 403, 403)
    ),
    "create_portal_link": Route(
        "POST", lambda w: "/v1/portal/links", lambda w: {"tenant_id": "acme"},
        (201, 403, 403, 403),
    ),
    "list_analytics_questions": Route(
        "GET", lambda w: "/v1/analytics/questions", None, OPERATORS_ONLY
    ),
    "answer_analytics_question": Route(
        "GET", lambda w: "/v1/analytics/questions/failure_rate_by_job", None, OPERATORS_ONLY
    ),
    "get_analytics_query": Route(
        # DuckDB answers at once and keeps no query: an operator gets not found, the others 403.
        "GET", lambda w: "/v1/analytics/queries/00000000-0000-4000-8000-000000000000", None,
        (404, 403, 403, 403),
    ),
    "list_analytics_rows": Route("GET", lambda w: "/v1/analytics/rows", None, OPERATORS_ONLY),
    "create_alert_rule": Route(
        "POST", lambda w: "/v1/alerts", lambda w: ALERT_RULE, (201, 201, 404, 403)
    ),
    "list_alert_rules": Route("GET", lambda w: "/v1/alerts?tenant_id=acme", None, SCOPED),
    "get_alert_rule": Route("GET", lambda w: f"/v1/alerts/{w.alert_rule_id}", None, SCOPED),
    "delete_alert_rule": Route(
        "DELETE", lambda w: f"/v1/alerts/{w.alert_rule()}", None, (204, 204, 404, 403)
    ),
    "revoke_portal_access": Route(
        "POST", lambda w: "/v1/portal/revocations",
        lambda w: {"session_id": "ses_" + "0" * 32}, OPERATORS_ONLY,
    ),
}  # fmt: skip


def documented_operations(prefix: str) -> set[str]:
    document = openapi_document()
    return {
        operation["operationId"]
        for path, operations in document["paths"].items()
        if path.startswith(prefix)
        for operation in operations.values()
    }


def test_the_matrix_names_every_v1_operation() -> None:
    listed = {name.removesuffix("_of_subscription").removesuffix("_of_event") for name in V1_ROUTES}
    assert listed == documented_operations("/v1/")


@pytest.mark.parametrize("caller", CALLERS)
def test_every_v1_route_answers_each_kind_of_caller_as_documented(
    world: World, caller: str
) -> None:
    arn = {"operator": None, "bound": BOUND_ACME, "other": BOUND_GLOBEX, "nobody": None}[caller]
    if caller == "operator":
        from tests.integration.api_support import OPERATOR_ARN

        arn = OPERATOR_ARN
    wrong = []
    for name, route in V1_ROUTES.items():
        answer = route.call(world, arn)
        expected = route.statuses[CALLERS.index(caller)]
        if answer.status != expected:
            wrong.append(f"{name}: {answer.status} instead of {expected}: {answer.text[:200]}")
        elif expected == 403:
            code = answer.error["code"]
            wanted = "iam_identity_required" if caller == "nobody" else "operator_only"
            if code != wanted:
                wrong.append(f"{name}: 403 {code} instead of {wanted}")
        elif expected == 404 and "acme" in answer.text.replace(world.subscription_id, ""):
            wrong.append(f"{name}: the not-found answer names the other tenant: {answer.text}")
    assert wrong == [], "\n".join(wrong)
    # Whatever the others tried, acme's subscription is as the operator left it.
    shown = world.api.get(f"/v1/subscriptions/{world.subscription_id}").body
    assert shown["url"] == world.receiver.url and shown["status"] == "active"


PORTAL_CALLERS = ("session", "other_session", "operator", "nobody")


@dataclass(frozen=True)
class PortalRoute:
    method: str
    path: Callable[[World], str]
    body: Callable[[World], Any] | None
    statuses: tuple[int, int, int, int]  # in the order of PORTAL_CALLERS


PORTAL_SCOPED = (200, 404, 403, 403)
PORTAL_ROUTES = {
    "show_portal_session": PortalRoute(
        "GET", lambda w: "/portal/api/session", None, (200, 200, 403, 403)
    ),
    "close_portal_session": PortalRoute(
        "DELETE", lambda w: "/portal/api/session", None, (204, 204, 403, 403)
    ),
    "portal_list_subscriptions": PortalRoute(
        "GET", lambda w: "/portal/api/subscriptions", None, (200, 200, 403, 403)
    ),
    "portal_create_subscription": PortalRoute(
        "POST", lambda w: "/portal/api/subscriptions", lambda w: {"url": w.receiver.url},
        (201, 201, 403, 403),
    ),
    "portal_get_subscription": PortalRoute(
        "GET", lambda w: f"/portal/api/subscriptions/{w.subscription_id}", None, PORTAL_SCOPED
    ),
    "portal_update_subscription": PortalRoute(
        "PATCH", lambda w: f"/portal/api/subscriptions/{w.subscription_id}",
        lambda w: {"description": "from the portal"}, PORTAL_SCOPED,
    ),
    "portal_delete_subscription": PortalRoute(
        "DELETE", lambda w: f"/portal/api/subscriptions/{w.subscription()}", None,
        (204, 404, 403, 403),
    ),
    "portal_rotate_secret": PortalRoute(
        "POST", lambda w: f"/portal/api/subscriptions/{w.subscription()}/rotate-secret",
        lambda w: {"grace_seconds": 0}, PORTAL_SCOPED,
    ),
    "portal_send_test_webhook": PortalRoute(
        "POST", lambda w: f"/portal/api/subscriptions/{w.subscription_id}/test", None,
        PORTAL_SCOPED,
    ),
    "portal_recover_subscription": PortalRoute(
        "POST", lambda w: f"/portal/api/subscriptions/{w.subscription_id}/recover",
        lambda w: {"since": "2026-01-01T00:00:00Z"}, (202, 404, 403, 403),
    ),
    "portal_list_deliveries": PortalRoute(
        "GET", lambda w: f"/portal/api/subscriptions/{w.subscription_id}/deliveries", None,
        PORTAL_SCOPED,
    ),
    "portal_get_delivery": PortalRoute(
        "GET", lambda w: f"/portal/api/deliveries/{w.delivery_id}", None, PORTAL_SCOPED
    ),
    "portal_replay_delivery": PortalRoute(
        "POST", lambda w: f"/portal/api/deliveries/{w.delivery_id}/replay", None,
        (202, 404, 403, 403),
    ),
    "portal_job_health": PortalRoute(
        "GET", lambda w: "/portal/api/analytics/jobs", None, (200, 200, 403, 403)
    ),
    "portal_list_alert_rules": PortalRoute(
        "GET", lambda w: "/portal/api/alerts", None, (200, 200, 403, 403)
    ),
    "portal_create_alert_rule": PortalRoute(
        "POST", lambda w: "/portal/api/alerts",
        lambda w: {"job_name": "reports", "p95_ms": 60000}, (201, 201, 403, 403),
    ),
    "portal_delete_alert_rule": PortalRoute(
        "DELETE", lambda w: f"/portal/api/alerts/{w.alert_rule()}", None, (204, 404, 403, 403)
    ),
}  # fmt: skip


def test_the_matrix_names_every_portal_operation() -> None:
    assert set(PORTAL_ROUTES) == documented_operations("/portal/api/")


@pytest.mark.parametrize("caller", PORTAL_CALLERS)
def test_every_portal_route_answers_each_kind_of_caller_as_documented(
    world: World, caller: str
) -> None:
    api = gateway_api()
    wrong = []
    for name, route in PORTAL_ROUTES.items():
        # A fresh session per request: one route signs its session out.
        headers: list[tuple[str, str]] = []
        if caller in ("session", "other_session"):
            tenant = "acme" if caller == "session" else "globex"
            headers = [("cookie", f"__Host-jobhooks-portal={fresh_session_token(tenant)}")]
        if route.method != "GET":
            headers.append(PORTAL_WRITE)
        api.caller_arn = None if caller == "nobody" else api.caller_arn
        body = route.body(world) if route.body is not None else None
        answer = api.call(route.method, route.path(world), body=body, headers=headers)
        expected = route.statuses[PORTAL_CALLERS.index(caller)]
        if answer.status != expected:
            wrong.append(f"{name}: {answer.status} instead of {expected}: {answer.text[:200]}")
        elif expected == 403 and answer.body != {"message": "Forbidden"}:
            wrong.append(f"{name}: refused by the function, not by the authorizer: {answer.text}")
    assert wrong == [], "\n".join(wrong)

    link = fresh_link_token("acme")
    exchange_statuses = {
        "session": exchange(api, link).status,
        "other_session": exchange(api, fresh_session_token("globex")).status,
        "operator": exchange(api, "").status,
        "nobody": api.call("POST", "/portal/session", content_type=None).status,
    }
    assert exchange_statuses[caller] == (200 if caller == "session" else 403)


STRANGER = "arn:aws:iam::123456789012:user/stranger"


def test_every_v1_route_refuses_an_iam_caller_matching_no_grant_and_no_operator_pattern(
    world: World,
) -> None:
    wrong = []
    for name, route in V1_ROUTES.items():
        answer = route.call(world, STRANGER)
        if answer.status != 403 or answer.error.get("code") != "not_authorized":
            wrong.append(f"{name}: {answer.status} {answer.text[:200]}")
    assert wrong == [], "\n".join(wrong)


# What a principal bound to acme can obtain for itself (docs/api.md, "Who may call"): none of
# them reaches another tenant's data, or an operator route.
ACME_BOT = "arn:aws:iam::123456789012:user/acme-bot"
ACME_FORMS = {
    "federated": "arn:aws:sts::123456789012:federated-user/acme-bot",
    "path": "arn:aws:iam::123456789012:user/ci/acme-bot",
    "user_case": "arn:aws:iam::123456789012:user/ACME-Bot",
    "role_case": "arn:aws:sts::123456789012:assumed-role/ACME-CI/run-1",
    "path_and_case": "arn:aws:iam::123456789012:user/deploy/ci/Acme-BOT",
    "partition": "arn:aws-cn:iam::123456789012:user/acme-bot",
}


@pytest.mark.parametrize("form", sorted(ACME_FORMS))
def test_no_form_of_a_bound_principal_reads_another_tenant_or_operates(
    world: World, form: str
) -> None:
    assert world.api.post("/v1/grants", {"principal_pattern": ACME_BOT, "tenants": ["acme"]})
    globex = world.api.post("/v1/subscriptions", {"tenant_id": "globex", "url": world.receiver.url})
    assert globex.status == 201, globex.text
    caller = InProcessApi(world.api.module, caller_arn=ACME_FORMS[form])
    refused = "not_authorized" if form == "partition" else None

    listed = caller.get("/v1/subscriptions", tenant_id="globex")
    shown = caller.get(f"/v1/subscriptions/{globex.body['subscription_id']}")
    operated = caller.get("/v1/dlq")
    own = caller.get("/v1/subscriptions", tenant_id="acme")
    if refused:
        for answer in (listed, shown, operated, own):
            assert answer.status == 403 and answer.error["code"] == refused, answer.text
        return
    assert listed.status == 404 and shown.status == 404, (listed.text, shown.text)
    assert operated.status == 403 and operated.error["code"] == "operator_only"
    # Still the acme principal it is: its own tenant's data is there.
    assert own.status == 200
    assert [s["subscription_id"] for s in own.body["subscriptions"]] == [world.subscription_id]


def test_a_notifications_delivery_is_shown_to_its_own_tenant_only(world: World) -> None:
    """A notification's delivery (`endpoint.disabled`, sent by the API when acme's endpoint is
    disabled) is read like any other: by the operator, acme's bound principal and acme's portal
    session, with its attempts; not found for globex's."""
    from tests.integration.api_support import OPERATOR_ARN

    notified = world.api.post(
        "/v1/subscriptions",
        {"tenant_id": "acme", "url": world.receiver.url, "event_types": ["endpoint.disabled"]},
    ).body["subscription_id"]
    disabled = world.api.patch(f"/v1/subscriptions/{world.subscription()}", {"status": "disabled"})
    assert disabled.status == 200, disabled.text
    world.bridge.deliver()
    (listed,) = world.api.get("/v1/deliveries", subscription_id=notified).body["deliveries"]
    assert (listed["event_type"], listed["status"]) == ("endpoint.disabled", "succeeded")
    path = f"/v1/deliveries/{listed['delivery_id']}"

    answers = {
        caller: InProcessApi(world.api.module, caller_arn=arn).get(path)
        for caller, arn in (
            ("operator", OPERATOR_ARN),
            ("bound", BOUND_ACME),
            ("other", BOUND_GLOBEX),
        )
    }
    assert {caller: answer.status for caller, answer in answers.items()} == {
        "operator": 200,
        "bound": 200,
        "other": 404,
    }
    shown = answers["bound"].body
    assert (shown["tenant_id"], shown["subscription_id"]) == ("acme", notified)
    assert [attempt["status_code"] for attempt in shown["attempts"]] == [200]
    assert "acme" not in answers["other"].text

    portal = gateway_api()
    for tenant, status in (("acme", 200), ("globex", 404)):
        cookie = ("cookie", f"__Host-jobhooks-portal={fresh_session_token(tenant)}")
        answer = portal.call(
            "GET", f"/portal/api/deliveries/{listed['delivery_id']}", headers=[cookie]
        )
        assert answer.status == status, answer.text
