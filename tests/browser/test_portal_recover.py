"""The portal's Recover button, in headless Chromium, against the whole local stack: an endpoint
disabled in the page keeps its events as skipped deliveries, and once enabled again, Recover
delivers each of them once (the receiver verifies every webhook with `standardwebhooks`)."""

from __future__ import annotations

from typing import Any

import pytest
from selenium.webdriver.common.by import By

from tests.browser.conftest import Portal
from tests.browser.test_portal_browser import (
    add_endpoint_in_the_page,
    button,
    open_link,
    publish_completed,
    unique,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.rabbitmq, pytest.mark.slow]


def test_a_team_recovers_what_its_disabled_endpoint_missed(browser: Any, portal: Portal) -> None:
    tenant, endpoint = unique("recover"), unique("orders")
    url = portal.receiver.add_endpoint(endpoint)
    assert open_link(browser, portal.link(tenant)) == "Webhook endpoints"
    portal.receiver.trust(endpoint, add_endpoint_in_the_page(browser, url))
    subscription_id = browser.current_url.rsplit("/", 1)[1]

    button(browser, "Disable").click()
    wait_until(browser, lambda d: button(d, "Enable"), "the endpoint disabled")
    assert button(browser, "Recover").get_attribute("disabled") is not None
    event_id = publish_completed(portal, tenant)

    def skipped(_: Any) -> bool:
        page = portal.api("GET", f"/v1/deliveries?subscription_id={subscription_id}")
        return [d["status"] for d in page["deliveries"]] == ["skipped"]

    wait_until(browser, skipped, "the event kept as a skipped delivery", timeout=60)
    assert portal.receiver.received(endpoint) == []

    button(browser, "Enable").click()
    wait_until(browser, lambda d: button(d, "Recover").get_attribute("disabled") is None, "Recover")
    button(browser, "Recover").click()
    result = wait_until(
        browser,
        lambda d: (
            "Recovery queued" in d.find_element(By.ID, "recover-result").text
            and d.find_element(By.ID, "recover-result").text
        ),
        "the recovery's result",
    )
    assert "1 sent again (1 skipped)" in result
    portal.receiver.wait_for(lambda r: len(r.received(endpoint)) >= 1, 60, what="the recovery")
    (webhook,) = portal.receiver.received(endpoint)
    assert webhook.verified and webhook.document["data"]["event_id"] == event_id

    def delivered(_: Any) -> bool:
        page = portal.api("GET", f"/v1/deliveries?subscription_id={subscription_id}")
        return [d["status"] for d in page["deliveries"]] == ["succeeded"]

    wait_until(browser, delivered, "the recovered delivery recorded", timeout=30)
    assert len(portal.receiver.received(endpoint)) == 1
