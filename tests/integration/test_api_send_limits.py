"""Replays and test sends are limited per tenant (docs/api.md, "Limits"): one tenant's own
callers cannot use up the API's shared throttle or flood the delivery queue.

The count lives in the access table (one conditional UpdateItem per send), so it holds across
every instance of the function: here, the API function and the portal function, each with its
own access store, share it.

The budget is per calendar minute, so both stores read one pinned clock (handed over through
the Event Handler's `dependency_overrides`, as the management context is): a burst cannot
straddle a minute's end, and the next minute's fresh budget is one `advance` away.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from jobhooks.access.context import build_portal_context
from jobhooks.access.settings import PortalSettings
from jobhooks.management.routes import dependencies as api_dependencies
from jobhooks.portal import dependencies as portal_dependencies
from jobhooks_tools.local.api_server import load_api_module, load_portal_module
from jobhooks_tools.local.template import LocalResources

from tests.integration.api_support import FakeClock, InProcessApi, Receiver, use_context
from tests.integration.portal_support import PortalBrowser, fresh_session_token, gateway_api

ACME_CI = "arn:aws:sts::123456789012:assumed-role/acme-ci/run-1"
GLOBEX_CI = "arn:aws:sts::123456789012:assumed-role/globex-ci/run-1"
PER_MINUTE = 3


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.stop()


@pytest.fixture
def clock() -> FakeClock:
    """Ten seconds into the current minute (near the real time: sessions and signatures check
    it), and still there however long the test runs."""
    now = datetime.now(UTC)
    return FakeClock(now.replace(second=10, microsecond=0))


@contextlib.contextmanager
def budget_clock(clock: FakeClock) -> Iterator[None]:
    """The API function and the portal function count sends on their own access stores (as two
    instances would), both reading `clock`."""
    settings = PortalSettings.from_env()
    api_overrides = load_api_module().app.dependency_overrides
    portal_overrides = load_portal_module().app.dependency_overrides
    api_context = build_portal_context(settings, clock=clock)
    portal_context = build_portal_context(settings, clock=clock)
    api_overrides[api_dependencies.portal_context] = lambda: api_context
    portal_overrides[portal_dependencies.portal_context] = lambda: portal_context
    try:
        yield
    finally:
        api_overrides.pop(api_dependencies.portal_context, None)
        portal_overrides.pop(portal_dependencies.portal_context, None)


def test_a_tenants_replays_and_test_sends_are_limited_per_minute(
    stack: LocalResources, receiver: Receiver, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBHOOKS_TENANT_SENDS_PER_MINUTE", str(PER_MINUTE))
    operator = InProcessApi()
    settings: dict[str, Any] = {"allow_private_webhooks": True, "tenant_sends_per_minute": 3}
    with budget_clock(clock), use_context(operator.module, clock=clock, **settings):
        for pattern, tenant in ((ACME_CI, "acme"), (GLOBEX_CI, "globex")):
            granted = operator.post(
                "/v1/grants", {"principal_pattern": pattern, "tenants": [tenant]}
            )
            assert granted.status == 201, granted.text
        ids = {}
        for tenant in ("acme", "globex"):
            created = operator.post("/v1/subscriptions", {"tenant_id": tenant, "url": receiver.url})
            assert created.status == 201, created.text
            ids[tenant] = created.body["subscription_id"]

        acme = InProcessApi(operator.module, caller_arn=ACME_CI)
        test_send = f"/v1/subscriptions/{ids['acme']}/test"
        answers = [acme.post(test_send) for _ in range(PER_MINUTE)]
        assert [a.status for a in answers] == [200] * PER_MINUTE, [a.text for a in answers]

        refused = acme.post(test_send)
        assert refused.status == 429, refused.text
        assert refused.error["code"] == "too_many_sends"
        # The clock stands 10 s into its minute: the budget is fresh in 50 s.
        assert int(refused.headers["retry-after"]) == 50

        # Another tenant's callers have their own share; operators are not counted.
        globex = InProcessApi(operator.module, caller_arn=GLOBEX_CI)
        assert globex.post(f"/v1/subscriptions/{ids['globex']}/test").status == 200
        assert operator.post(test_send).status == 200

    with budget_clock(clock):
        # The portal's sessions of acme draw on the same share, through another instance of
        # the API (its settings from the environment).
        browser = PortalBrowser(gateway_api(), fresh_session_token("acme"))
        answer = browser.post(f"/portal/api/subscriptions/{ids['acme']}/test")
        assert answer.status == 429, answer.text
        assert answer.error["code"] == "too_many_sends"
        # The same minute's share: the portal's store reads the same pinned clock.
        assert int(answer.headers["retry-after"]) == 50

        # The next minute has a fresh budget.
        clock.advance(seconds=60)
        with use_context(operator.module, clock=clock, **settings):
            fresh = acme.post(test_send)
            assert fresh.status == 200, fresh.text
