"""A tenant's team in the portal, in headless Chromium, against the whole local stack.

Every scenario opens a one-time link as an operator hands it out. What the page shows is
checked against what really happened: the receiver verifies each webhook with
`standardwebhooks`, and the operator's API shows what changed (or did not).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from jobhooks.access.callers import SESSION_COOKIE
from jobhooks.analytics.row import AnalyticsRow
from jobhooks_tools.local.analytics.files import LocalFileSink
from jobhooks_tools.publisher import SamplePublisher, sample_traffic
from jobhooks_tools.sample_events import demo_key
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser.conftest import Portal, csp_violations
from tests.integration.portal_support import genuine_link

pytestmark = [pytest.mark.browser, pytest.mark.rabbitmq, pytest.mark.slow]

OPENING = "Opening your portal…"


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def wait_until(driver: Any, condition: Callable[[Any], Any], what: str, timeout: float = 20) -> Any:
    # The page replaces what it shows as answers arrive: an element found a moment ago may be
    # gone when it is read; the condition is simply asked again.
    waiting = WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,))
    return waiting.until(condition, f"timed out waiting for {what}")


def heading(driver: Any) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, "main h1").text)


def open_link(driver: Any, url: str) -> str:
    """Open `url` as a link from elsewhere (a new page load, not a fragment change)."""
    driver.get("about:blank")
    driver.get(url)
    return str(wait_until(driver, lambda d: heading(d) != OPENING and heading(d), "the page"))


def by_label(driver: Any, label: str) -> Any:
    element = driver.find_element(By.XPATH, f"//label[normalize-space()={json.dumps(label)}]")
    return driver.find_element(By.ID, element.get_attribute("for"))


def button(driver: Any, text: str) -> Any:
    return driver.find_element(By.XPATH, f"//button[normalize-space()={json.dumps(text)}]")


def fetch(driver: Any, method: str, path: str, body: Any = None) -> int:
    """A request typed by hand in the page (its cookie, its header), as an attacker would."""
    return int(
        driver.execute_async_script(
            """
            const [method, path, body, done] = arguments;
            const init = {method, credentials: "same-origin", headers: {"X-Jobhooks-Portal": "1"}};
            if (body !== null) {
              init.headers["Content-Type"] = "application/json";
              init.body = JSON.stringify(body);
            }
            fetch(path, init).then((answer) => done(answer.status), () => done(0));
            """,
            method,
            path,
            body,
        )
    )


def session_cookies(driver: Any) -> list[dict[str, Any]]:
    return [cookie for cookie in driver.get_cookies() if cookie["name"] == SESSION_COOKIE]


def publish_completed(portal: Portal, tenant: str) -> str:
    """A real Fetcher event through RabbitMQ, the shovel, SQS and ingest; its webhook-id."""
    (publication,) = sample_traffic(demo_key(), count=1, tenants=(tenant,), statuses=("completed",))
    with SamplePublisher(portal.stack.amqp_url) as publisher:
        publisher.publish_sample(publication, retry_for=30)
    return publication.event_id


def add_endpoint_in_the_page(driver: Any, url: str, description: str = "") -> str:
    """Fill the form with the keyboard and submit it with Enter; the secret shown once."""
    field = by_label(driver, "Endpoint URL")
    field.send_keys(url)
    if description:
        by_label(driver, "Description (optional)").send_keys(description)
    field.send_keys(Keys.ENTER)
    secret = wait_until(
        driver, lambda d: d.find_element(By.ID, "secret-value").text, "the signing secret"
    )
    return str(secret)


# -- the scenarios ---------------------------------------------------------------------------------


def test_a_team_adds_an_endpoint_tests_it_and_replays_a_real_delivery(
    browser: Any, portal: Portal
) -> None:
    tenant, endpoint = unique("acme"), unique("orders")
    url = portal.receiver.add_endpoint(endpoint)

    assert open_link(browser, portal.link(tenant)) == "Webhook endpoints"
    # The token left the address bar at once; the session is an HttpOnly cookie.
    assert browser.current_url.endswith("/portal#/") and "t=" not in browser.current_url
    (cookie,) = session_cookies(browser)
    assert cookie["httpOnly"] is True and cookie["secure"] is True
    assert cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    assert browser.execute_script("return document.cookie") == ""
    assert tenant in browser.find_element(By.ID, "tenant").text

    secret = add_endpoint_in_the_page(browser, url, "orders")
    assert secret.startswith("whsec_")
    portal.receiver.trust(endpoint, secret)
    assert browser.find_element(By.ID, "endpoint-url").text == url

    button(browser, "Send test webhook").click()
    result = wait_until(
        browser,
        lambda d: (
            d.find_element(By.ID, "test-result").text.startswith(("Test webhook",))
            and "HTTP" in d.find_element(By.ID, "test-result").text
            and d.find_element(By.ID, "test-result").text
        ),
        "the test result",
    )
    assert "Delivered: HTTP 200" in result
    (test_webhook,) = portal.receiver.received(endpoint)
    assert test_webhook.verified and test_webhook.document["type"] == "jobhooks.test"
    assert test_webhook.document["data"]["account_id"] == tenant

    event_id = publish_completed(portal, tenant)
    portal.receiver.wait_for(
        lambda r: any(w.document.get("type") == "job.completed" for w in r.received(endpoint)),
        60,
        what="the real event's delivery",
    )
    real = [w for w in portal.receiver.received(endpoint) if w.document["type"] == "job.completed"]
    assert real[0].verified and real[0].document["data"]["event_id"] == event_id

    subscription_id = browser.current_url.rsplit("/", 1)[1]

    def recorded(_: Any) -> bool:
        page = portal.api("GET", f"/v1/deliveries?subscription_id={subscription_id}")
        return any(d["status"] == "succeeded" for d in page["deliveries"])

    wait_until(browser, recorded, "the delivery's record", timeout=30)
    button(browser, "Refresh").click()
    item = wait_until(
        browser,
        lambda d: next(
            (
                i
                for i in d.find_elements(By.CSS_SELECTOR, "li[data-delivery-id]")
                if "succeeded" in i.text
            ),
            False,
        ),
        "the delivery in the page",
    )
    assert event_id in item.text and "1 attempt" in item.text and "HTTP 200" in item.text
    show = item.find_element(By.XPATH, ".//button[normalize-space()='Show attempts']")
    show.click()
    attempts = wait_until(
        browser,
        lambda d: d.find_element(By.CSS_SELECTOR, "li[data-delivery-id] table").text,
        "the attempts",
    )
    delivery_id = item.get_attribute("data-delivery-id")
    (attempt,) = portal.api("GET", f"/v1/deliveries/{delivery_id}")["attempts"]
    assert f"HTTP 200 {attempt['latency_ms']} ms" in attempts
    assert show.get_attribute("aria-expanded") == "true"

    item.find_element(By.XPATH, ".//button[normalize-space()='Replay']").click()
    wait_until(
        browser,
        lambda d: "Replay queued" in d.find_element(By.ID, "status").text,
        "the replay's announcement",
    )
    portal.receiver.wait_for(
        lambda r: (
            len([w for w in r.received(endpoint) if w.document["type"] == "job.completed"]) == 2
        ),
        60,
        what="the replayed delivery",
    )
    first, again = [
        w for w in portal.receiver.received(endpoint) if w.document["type"] != "jobhooks.test"
    ]
    assert again.verified and again.webhook_id == first.webhook_id

    # Readable on a phone: nothing wider than a 360 px screen.
    browser.set_window_size(360, 740)
    overflow = browser.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0


def test_the_link_cannot_see_or_touch_another_tenants_endpoint(
    browser: Any, portal: Portal
) -> None:
    mine, theirs = unique("acme"), unique("globex")
    their_endpoint = unique("globex-hooks")
    their_url = portal.receiver.add_endpoint(their_endpoint)
    created = portal.api("POST", "/v1/subscriptions", {"tenant_id": theirs, "url": their_url})
    their_id = created["subscription_id"]

    assert open_link(browser, portal.link(mine)) == "Webhook endpoints"
    assert their_url not in browser.page_source and their_id not in browser.page_source

    browser.get(f"{portal.api_url}/portal#/endpoints/{their_id}")
    browser.refresh()
    wait_until(
        browser,
        lambda d: (
            "no subscription" in d.find_element(By.ID, "status").text
            or "no subscription" in d.find_element(By.ID, "main").text
        ),
        "the not-found message",
    )
    assert their_url not in browser.page_source

    base = f"/portal/api/subscriptions/{their_id}"
    assert fetch(browser, "GET", base) == 404
    assert fetch(browser, "PATCH", base, {"url": "https://attacker.example.com/x"}) == 404
    assert fetch(browser, "PATCH", base, {"status": "disabled"}) == 404
    assert fetch(browser, "POST", f"{base}/rotate-secret", {"grace_seconds": 0}) == 404
    assert fetch(browser, "POST", f"{base}/test") == 404
    assert fetch(browser, "GET", f"{base}/deliveries") == 404
    assert fetch(browser, "DELETE", base) == 404
    # A tenant named in the request changes nothing: the session decides.
    assert (
        fetch(browser, "POST", "/portal/api/subscriptions", {"url": their_url, "tenant_id": theirs})
        == 422
    )

    after = portal.api("GET", f"/v1/subscriptions/{their_id}")
    assert after["url"] == their_url and after["status"] == "active"
    assert after["secrets"] == created["secrets"]
    assert portal.receiver.received(their_endpoint) == []
    listed = portal.api("GET", f"/v1/subscriptions?tenant_id={mine}")
    assert listed["subscriptions"] == []


@pytest.mark.parametrize("case", ["expired", "revoked", "tampered", "reused"])
def test_a_bad_link_gets_a_clear_page_and_no_data(browser: Any, portal: Portal, case: str) -> None:
    tenant = unique("acme")
    portal.api("POST", "/v1/subscriptions", {"tenant_id": tenant, "url": "http://127.0.0.1:9/x"})
    expected = {
        "expired": "This portal link has expired",
        "revoked": "This portal link cannot be opened",
        "tampered": "This portal link cannot be opened",
        "reused": "This portal link was already used",
    }[case]
    if case == "expired":
        url = f"{portal.api_url}/portal#t={genuine_link(tenant, expires_in=-60)}"
    elif case == "revoked":
        url = portal.link(tenant)
        portal.api("POST", "/v1/portal/revocations", {"tenant_id": tenant})
    elif case == "tampered":
        url = portal.link(tenant)
        url = url[:-5] + ("A" if url[-5] != "A" else "B") + url[-4:]
    else:
        url = portal.link(tenant)
        assert open_link(browser, url) == "Webhook endpoints"
        browser.delete_all_cookies()

    assert open_link(browser, url) == expected
    main = browser.find_element(By.ID, "main").text
    assert "Ask your operator for a new portal link." in main
    assert "127.0.0.1:9" not in browser.page_source
    assert not browser.find_element(By.ID, "nav").is_displayed()
    assert session_cookies(browser) == []
    # The token is gone from the address bar even though the page refused it.
    assert "t=" not in browser.current_url


def test_a_revoked_session_ends_at_its_next_request(browser: Any, portal: Portal) -> None:
    tenant = unique("acme")
    assert open_link(browser, portal.link(tenant)) == "Webhook endpoints"
    portal.api("POST", "/v1/portal/revocations", {"tenant_id": tenant})
    browser.refresh()
    wait_until(browser, lambda d: heading(d) != OPENING, "the page")
    assert heading(browser) == "Open the portal from your link"
    assert fetch(browser, "GET", "/portal/api/subscriptions") == 403


def test_keyboard_only_dialogs_and_labels(browser: Any, portal: Portal) -> None:
    tenant, endpoint = unique("acme"), unique("kbd")
    url = portal.receiver.add_endpoint(endpoint)
    open_link(browser, portal.link(tenant))
    unlabelled = browser.execute_script(
        """return [...document.querySelectorAll("input, select, textarea")]
             .filter((e) => e.labels.length === 0).map((e) => e.outerHTML)"""
    )
    assert unlabelled == []
    add_endpoint_in_the_page(browser, url)
    subscription_id = browser.current_url.rsplit("/", 1)[1]
    assert browser.execute_script(
        """return [...document.querySelectorAll("input, select, textarea")]
             .every((e) => e.labels.length > 0)"""
    )
    assert browser.find_element(By.ID, "status").get_attribute("aria-live") == "polite"

    delete = button(browser, "Delete endpoint")
    delete.send_keys(Keys.ENTER)
    dialog = wait_until(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, "dialog[open]"), "the dialog"
    )
    assert browser.switch_to.active_element.text == "Cancel"  # focus moved into the dialog
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    wait_until(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog[open]"), "closing")
    assert portal.api("GET", f"/v1/subscriptions/{subscription_id}")["subscription_id"]
    assert dialog is not None

    button(browser, "Delete endpoint").send_keys(Keys.ENTER)
    wait_until(browser, lambda d: d.find_element(By.CSS_SELECTOR, "dialog[open]"), "the dialog")
    browser.switch_to.active_element.send_keys(Keys.TAB)
    assert browser.switch_to.active_element.text == "Delete"
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait_until(browser, lambda d: heading(d) == "Webhook endpoints", "the list")
    wait_until(browser, lambda d: "No endpoint yet" in d.find_element(By.ID, "main").text, "empty")
    listed = portal.api("GET", f"/v1/subscriptions?tenant_id={tenant}")
    assert listed["subscriptions"] == []


def test_the_job_health_chart_shows_the_tenants_own_jobs_only(
    browser: Any, portal: Portal, tmp_path: Path
) -> None:
    tenant, other = unique("acme"), unique("globex")
    now = datetime.now(UTC)
    rows = [
        analytics_row(tenant, "payments", now - timedelta(days=2), "success", 1200),
        analytics_row(tenant, "payments", now - timedelta(days=1), "failure", 0),
        analytics_row(tenant, "payments", now - timedelta(days=1), "success", 800),
        analytics_row(tenant, "exports", now - timedelta(days=1), "success", 5000),
        analytics_row(other, "secret-project", now - timedelta(days=1), "failure", 0),
    ]
    LocalFileSink(tmp_path).put_rows(rows)
    previous = os.environ.get("JOBHOOKS_ANALYTICS_DIR")
    os.environ["JOBHOOKS_ANALYTICS_DIR"] = str(tmp_path)
    try:
        open_link(browser, portal.link(tenant))
        browser.find_element(By.LINK_TEXT, "Job health").click()
        wait_until(browser, lambda d: heading(d) == "Job health", "the chart page")
        charts = wait_until(
            browser, lambda d: d.find_elements(By.CSS_SELECTOR, "svg.chart"), "charts"
        )
        assert len(charts) == 2
        assert len(browser.find_elements(By.CSS_SELECTOR, "svg.chart circle")) == 2 * 3
        table = browser.find_element(By.TAG_NAME, "table").text
        assert "payments" in table and "exports" in table and "50.0%" in table
        assert "secret-project" not in browser.page_source
    finally:
        if previous is None:
            os.environ.pop("JOBHOOKS_ANALYTICS_DIR", None)
        else:
            os.environ["JOBHOOKS_ANALYTICS_DIR"] = previous

    browser.refresh()
    wait_until(browser, lambda d: heading(d) == "Job health", "the page again")
    # Back to the stack's own analytics (none of this tenant's events went through it), or,
    # on a stack without analytics, a plain "not configured".
    expected = "No outcome in this window" if previous else "not configured"
    wait_until(
        browser,
        lambda d: expected in d.find_element(By.ID, "main").text,
        f"the page to say {expected!r}",
    )


def analytics_row(account: str, job: str, at: datetime, status: str, duration: int) -> AnalyticsRow:
    failed = status == "failure"
    return AnalyticsRow(
        timestamp_utc=at.replace(microsecond=0),
        event_id=f"fetcher.job.{'failed' if failed else 'completed'}.{uuid.uuid4()}",
        release="fetcher@2.0.2",
        account_id=account,
        job_id=str(uuid.uuid4()),
        job_name=job,
        queue_name="//lerian.fetcher/worker",
        attempt_count=1,
        queue_wait_ms=0,
        duration_ms=duration,
        status=status,  # type: ignore[arg-type]
        unmeasured=("queue_wait_ms", "duration_ms") if failed else ("queue_wait_ms",),
        error_category="unknown" if failed else None,
    )


def test_the_harness_sees_a_csp_violation(browser: Any, portal: Portal) -> None:
    """The check every test above relies on: an inline style the policy forbids is caught."""
    open_link(browser, portal.link(unique("acme")))
    browser.execute_script("document.body.setAttribute('style', 'color: red')")
    found = wait_until(browser, csp_violations, "the violation report", timeout=5)
    assert any("style-src" in line for line in found), found
    browser.execute_script("sessionStorage.clear()")
    browser.get_log("browser")


def test_a_link_pasted_into_an_open_portal_opens_its_own_tenant(
    browser: Any, portal: Portal
) -> None:
    first, second = unique("acme"), unique("initech")
    open_link(browser, portal.link(first))
    assert first in browser.find_element(By.ID, "tenant").text
    # Only the fragment changes: no page load, the page notices the link all the same.
    token = portal.link(second).split("#t=", 1)[1]
    browser.execute_script("window.location.hash = arguments[0]", f"t={token}")
    # Another tenant's link while a session is open: asked first (login CSRF).
    wait_until(browser, lambda d: button(d, f"Switch to {second}"), "the switch question").click()
    wait_until(
        browser, lambda d: second in d.find_element(By.ID, "tenant").text, "the second tenant"
    )
    assert "t=" not in browser.current_url
    assert len(session_cookies(browser)) == 1


def test_a_link_of_another_tenant_does_not_switch_an_open_session_unasked(
    browser: Any, portal: Portal
) -> None:
    mine, theirs = unique("acme"), unique("mallory")
    open_link(browser, portal.link(mine))
    assert mine in browser.find_element(By.ID, "tenant").text
    # Someone sends a link of their own tenant; opened from elsewhere, it asks before switching.
    their_link = portal.link(theirs)
    browser.get("about:blank")
    browser.get(their_link)
    question = wait_until(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, "dialog[open]"), "the question"
    )
    assert mine in question.text and theirs in question.text
    assert "t=" not in browser.current_url
    button(browser, "Cancel").click()
    wait_until(browser, lambda d: mine in d.find_element(By.ID, "tenant").text, "the own tenant")
    assert theirs not in browser.find_element(By.ID, "tenant").text
    assert fetch(browser, "GET", "/portal/api/session") == 200
    tenant = browser.execute_script(
        "return fetch('/portal/api/session').then((r) => r.json()).then((b) => b.tenant_id)"
    )
    assert tenant == mine
    # Declined, the link was not used: it still opens its own tenant once asked for.
    browser.get("about:blank")
    browser.get(their_link)
    wait_until(browser, lambda d: button(d, f"Switch to {theirs}"), "the question").click()
    wait_until(browser, lambda d: theirs in d.find_element(By.ID, "tenant").text, "their tenant")


def test_a_team_adds_and_removes_a_job_health_alert_rule(browser: Any, portal: Portal) -> None:
    tenant = unique("acme")
    open_link(browser, portal.link(tenant))
    browser.find_element(By.LINK_TEXT, "Job health").click()
    wait_until(
        browser, lambda d: "No alert rule yet." in d.find_element(By.ID, "main").text, "rules"
    )

    by_label(browser, "Jobs").send_keys("billing-*")
    by_label(browser, "Failure rate at or above (%)").send_keys("20")
    button(browser, "Add rule").click()
    rule = wait_until(
        browser,
        lambda d: d.find_element(By.CSS_SELECTOR, "ul[aria-labelledby=rules-heading] li"),
        "the new rule",
    )
    assert "billing-*" in rule.text
    assert "failure rate at or above 20 %" in rule.text
    assert "over 15 min with at least 10 outcomes" in rule.text

    button(browser, "Remove").click()
    dialog = wait_until(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, "dialog[open]"), "dialog"
    )
    dialog.find_element(By.XPATH, ".//button[normalize-space()='Remove']").click()
    wait_until(
        browser, lambda d: "No alert rule yet." in d.find_element(By.ID, "main").text, "gone"
    )
