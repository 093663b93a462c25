"""The tenant portal in a real browser: Debian's Chromium, headless, driven by Selenium through
/usr/bin/chromedriver (scripts/ensure-chromium.sh installs both; nothing is downloaded).

One local stack for the package (`jobhooks_tools.local.dev_stack`: RabbitMQ -> shovel -> SQS
-> the ingest and deliver functions on their pollers, and the management API with the portal
and its authorizer, routed as template.yaml says), a receiver that verifies every webhook with
`standardwebhooks`, and one browser. Every test starts from a browser without cookies.

Content-Security-Policy violations fail the test that caused them: a listener is installed in
every document before the page's own scripts run (Chrome DevTools'
`Page.addScriptToEvaluateOnNewDocument`), and the browser's console is read as well.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jobhooks_tools.local.demo_receiver import DemoReceiver
from jobhooks_tools.local.dev_stack import DevStack, DevStackSettings
from jobhooks_tools.local.rabbitmq import RabbitMQBroker

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
VIOLATIONS_KEY = "__jobhooks_csp_violations"
# Runs in every new document before its scripts: keeps each violation in sessionStorage, which
# survives the navigations of one tab, so none is lost when the page changes.
CSP_LISTENER = f"""
document.addEventListener("securitypolicyviolation", (event) => {{
  const found = JSON.parse(sessionStorage.getItem("{VIOLATIONS_KEY}") || "[]");
  const where = `${{event.sourceFile}}:${{event.lineNumber}}`;
  const blocked = event.blockedURI || "inline";
  found.push(`${{event.effectiveDirective}} blocked ${{blocked}} at ${{where}}`);
  sessionStorage.setItem("{VIOLATIONS_KEY}", JSON.stringify(found));
}});
"""


@dataclass
class Portal:
    stack: DevStack
    receiver: DemoReceiver

    @property
    def api_url(self) -> str:
        assert self.stack.api_url
        return self.stack.api_url

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """The operator's API (the local server plays API Gateway with an operator's IAM)."""
        import urllib.error
        import urllib.request

        request = urllib.request.Request(
            self.api_url + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"content-type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raise AssertionError(f"{method} {path}: {error.code} {error.read()[:300]!r}") from None

    def link(self, tenant: str) -> str:
        return str(self.api("POST", "/v1/portal/links", {"tenant_id": tenant})["url"])


@pytest.fixture(scope="package")
def portal(rabbitmq: RabbitMQBroker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Portal]:
    stack = DevStack(
        DevStackSettings(
            broker=rabbitmq,
            shovel="thread",
            parameters={"RetrySchedule": "0,1,1,2"},
            log_path=tmp_path_factory.mktemp("browser") / "stack.log",
        )
    )
    receiver = DemoReceiver().start()
    try:
        stack.start()
        yield Portal(stack, receiver)
    finally:
        receiver.stop()
        stack.stop()


@pytest.fixture(scope="package")
def chromium() -> Iterator[Any]:
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} not found: run scripts/ensure-chromium.sh (Debian's chromium "
            "and chromium-driver)",
            pytrace=False,
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="jobhooks-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in HEADLESS_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument("--window-size=1280,900")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": CSP_LISTENER})
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def browser(chromium: Any, portal: Portal) -> Iterator[Any]:
    """The package's browser, without cookies; fails the test on any CSP violation or error in
    the page's console."""
    chromium.set_window_size(1280, 900)
    chromium.get(portal.api_url + "/portal/assets/portal.css")
    chromium.delete_all_cookies()
    chromium.execute_script("sessionStorage.clear()")
    chromium.get_log("browser")  # what earlier tests left
    yield chromium
    problems = csp_violations(chromium) + console_errors(chromium)
    assert problems == [], "the page broke its Content-Security-Policy or failed:\n" + "\n".join(
        problems
    )


def csp_violations(driver: Any) -> list[str]:
    found = driver.execute_script(f"return sessionStorage.getItem('{VIOLATIONS_KEY}')")
    return [f"CSP: {line}" for line in json.loads(found or "[]")]


def console_errors(driver: Any) -> list[str]:
    problems = []
    for entry in driver.get_log("browser"):
        message = str(entry.get("message", ""))
        # A 4xx/5xx answer the page expects (a refused link, a not-found id) is logged by
        # the browser as a failed resource load; every other error is a fault of the page.
        expected = "the server responded with a status of 4" in message
        if (
            entry.get("level") == "SEVERE" and not expected
        ) or "Content Security Policy" in message:
            problems.append(f"console: {message}")
    return problems
