"""Replays and test sends are limited per tenant (docs/api.md, "Limits"): one tenant's own
callers cannot use up the API's shared throttle or flood the delivery queue.

The count lives in the access table (one conditional UpdateItem per send), so it holds across
every instance of the function: here, two separately loaded API modules share it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from jobhooks_tools.local.template import LocalResources

from tests.integration.api_support import InProcessApi, Receiver, use_context
from tests.integration.portal_support import PortalBrowser, fresh_session_token, gateway_api

ACME_CI = "arn:aws:sts::123456789012:assumed-role/acme-ci/run-1"
GLOBEX_CI = "arn:aws:sts::123456789012:assumed-role/globex-ci/run-1"
PER_MINUTE = 3


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.stop()


def _wait_for_the_early_part_of_a_minute(latest_second: int = 20) -> None:
    """Returns once the wall clock is at most `latest_second` into its minute, so what follows
    (a few seconds, even on a loaded machine) stays within one minute's budget."""
    while datetime.now(UTC).second > latest_second:
        time.sleep(0.1)


def test_a_tenants_replays_and_test_sends_are_limited_per_minute(
    stack: LocalResources, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBHOOKS_TENANT_SENDS_PER_MINUTE", str(PER_MINUTE))
    operator = InProcessApi()
    with use_context(operator.module, allow_private_webhooks=True, tenant_sends_per_minute=3):
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
        # The budget is per calendar minute: a burst straddling a minute's end starts a fresh
        # budget halfway and its refused send is granted (a loaded run failed so at :59).
        _wait_for_the_early_part_of_a_minute()
        answers = [acme.post(test_send) for _ in range(PER_MINUTE)]
        assert [a.status for a in answers] == [200] * PER_MINUTE, [a.text for a in answers]

        refused = acme.post(test_send)
        assert refused.status == 429, refused.text
        assert refused.error["code"] == "too_many_sends"
        assert 1 <= int(refused.headers["retry-after"]) <= 60

        # Another tenant's callers have their own share; operators are not counted.
        globex = InProcessApi(operator.module, caller_arn=GLOBEX_CI)
        assert globex.post(f"/v1/subscriptions/{ids['globex']}/test").status == 200
        assert operator.post(test_send).status == 200

    # The portal's sessions of acme draw on the same share, through another instance of the
    # API (its settings from the environment).
    browser = PortalBrowser(gateway_api(), fresh_session_token("acme"))
    answer = browser.post(f"/portal/api/subscriptions/{ids['acme']}/test")
    assert answer.status == 429, answer.text
    assert answer.error["code"] == "too_many_sends" and "retry-after" in answer.headers
