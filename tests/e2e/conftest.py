"""Browser tests: the real `workspace-api demo` in a subprocess, driven through Debian's chromium
with playwright. Without chromium (or playwright) the tests skip locally and fail when CI is set
(.ci/run sets it and installs chromium). A feature that breaks never turns into a skip."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import running_demo

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1440, "height": 900}  # a laptop screen

# Recorded into the page before any of its scripts: CSP violations must never happen.
WATCH_CSP = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) =>
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`));
"""


def unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"browser tests cannot run in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def sync_playwright():
    if not os.path.exists(CHROMIUM):
        unavailable(f"chromium not found at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed (pip install -e '.[test]')")
    return sync_playwright


@pytest.fixture(scope="module")
def browser(sync_playwright):
    # Module scope: while playwright's sync API is active its event loop counts as running,
    # which would break the Tornado io_loop of the tests that follow.
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@dataclasses.dataclass
class Demo:
    origin: str
    key: str
    workspaces: list[dict]


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    """`workspace-api demo --port 0` as a separate process, exactly as a user runs it."""
    with running_demo(tmp_path_factory.mktemp("demo")) as (_, keys, _log):
        origin = keys["baseUrl"].removesuffix("/v1")
        yield Demo(origin, keys["workspaces"][0]["apiKey"], keys["workspaces"])


class Console:
    """The reference page in a fresh browser context, with what the page did recorded."""

    def __init__(self, page, demo: Demo):
        self.page, self.demo = page, demo
        self.errors: list[str] = []
        self.requests: list[tuple[str, str, str | None]] = []
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("console", self._console)
        page.on(
            "request",
            lambda r: self.requests.append((r.method, r.url, r.headers.get("authorization"))),
        )
        page.add_init_script(WATCH_CSP)

    def _console(self, message) -> None:
        # Chromium logs every non-2xx response; those are expected here (401, 404 tests).
        if message.type == "error" and "Failed to load resource" not in message.text:
            self.errors.append(message.text)

    def open(self, path: str = "/reference") -> None:
        self.page.goto(self.demo.origin + path)
        self.page.wait_for_load_state("load")

    def enter_key(self, key: str) -> None:
        self.page.fill("#api-key", key)

    def op(self, operation_id: str):
        return self.page.locator(f"#op-{operation_id}")

    def has(self, operation_id: str) -> bool:
        return self.op(operation_id).count() == 1

    def send(self, operation_id: str, **fields) -> str:
        """Fill the Try-it form, press Send, wait for the response; returns the status line."""
        op = self.op(operation_id)
        for name, value in fields.items():
            field = op.locator(f'[name="{name}"]')
            if field.evaluate("e => e.tagName") == "SELECT":
                field.select_option(value)
            else:
                field.fill(value)
        op.locator(".result").evaluate("e => e.replaceChildren()")
        op.locator(".send").click()
        return self.status(operation_id)

    def follow(self, operation_id: str, rel: str) -> str:
        """Press a pager button (first/prev/next/last); waits for the new response."""
        before = self.header(operation_id, "X-Request-Id")
        self.op(operation_id).locator(f".pager [data-rel={rel}]").click()
        self.page.wait_for_function(
            """([selector, before]) => {
                const cell = document.querySelector(selector);
                return cell !== null && cell.textContent !== before;
            }""",
            arg=[f'#op-{operation_id} .result [data-header="X-Request-Id"]', before],
        )
        return self.status(operation_id)

    def status(self, operation_id: str) -> str:
        status = self.op(operation_id).locator(".result .result-status")
        status.wait_for(timeout=20_000)
        return status.inner_text()

    def json(self, operation_id: str):
        return json.loads(self.op(operation_id).locator(".result pre.json").inner_text())

    def header(self, operation_id: str, name: str) -> str:
        return self.op(operation_id).locator(f'.result [data-header="{name}"]').inner_text()

    def screenshot(self, name: str, full_page: bool = False) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / name
        self.page.screenshot(path=str(path), full_page=full_page)
        return path

    def assert_clean(self) -> None:
        assert self.errors == []
        assert self.page.evaluate("window.__cspViolations") == []
        for method, url, authorization in self.requests:
            assert url.startswith(self.demo.origin + "/") or url.startswith("blob:"), url
            if authorization is not None:
                assert url.startswith(self.demo.origin + "/v1/"), (method, url)


@pytest.fixture
def console(browser, demo):
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(20_000)
    driver = Console(page, demo)
    driver.open()
    yield driver
    context.close()
