"""The reference as a reader uses it, in a real headless chromium against the real demo: the
search box, the code samples (curl, Python, JavaScript) and the 390 px layout with its menu.
Screenshots land in artifacts/."""

import ast
import os
import shutil
import subprocess
import sys

import pytest

from store.events import TYPES
from tests.e2e.conftest import Console

pytestmark = [pytest.mark.browser, pytest.mark.long, pytest.mark.own_store]

PHONE = {"width": 390, "height": 844}


def visible_ops(console) -> list[str]:
    return console.page.eval_on_selector_all(
        "article.op", "ops => ops.filter(o => !o.hidden).map(o => o.id)"
    )


def test_search_filters_operations_and_schemas_as_you_type(console):
    page = console.page
    everything = visible_ops(console)
    assert len(everything) >= 13
    search = page.locator("#search")
    search.press_sequentially("contac")
    assert visible_ops(console) == ["op-uploadContacts", "op-removeContacts"]
    sidebar = page.locator(".sidebar li[data-search]:visible")
    assert sidebar.count() >= 2 and "/v1/lists/{listId}/contacts" in sidebar.all_inner_texts()[0]
    schemas = page.locator("details.schema:visible")
    names = schemas.evaluate_all("s => s.map(e => e.id)")
    assert "schema-requests.contact" in names and "schema-requests.contacts-upload" in names
    assert page.locator("#schemas").evaluate("d => d.open")  # matching schemas are shown
    assert page.locator("#search-status").inner_text().startswith("2 operations")
    assert page.locator("section.tag:visible").count() == 1
    console.screenshot("console-search.png")

    search.press_sequentially("x-nothing")
    assert visible_ops(console) == [] and page.locator("details.schema:visible").count() == 0
    assert page.locator("#search-status").inner_text() == "Nothing matches."
    search.press("Escape")
    assert visible_ops(console) == everything
    search.fill("GET /v1/calls")
    assert visible_ops(console) == ["op-listCalls", "op-getCall", "op-getCallRecording"]
    console.assert_clean()


def test_code_samples_follow_the_form_and_never_hold_the_key(console):
    page = console.page
    console.enter_key(console.demo.key)
    assert console.send("listUsers") == "200 OK"
    owner = console.json("listUsers")["users"][0]["id"]

    op = console.op("createList")
    samples = op.locator(".samples")
    assert "-X POST" in samples.locator("pre.sample:visible").inner_text()
    samples.locator(".sample-tab[data-lang=python]").click()
    python = samples.locator("pre.sample:visible").inner_text()
    assert python.startswith("import os") and "httpx.post(" in python
    assert "os.environ['API_KEY']" in python and f'"ownerUserId": "{owner}"' in python
    assert f'"{console.demo.origin}/v1/lists"' in python
    samples.scroll_into_view_if_needed()
    console.screenshot("console-sample-python.png")

    # One language for the page: every operation now shows Python.
    upload = console.op("uploadContacts").locator(".samples")
    assert upload.locator(".sample-tab[data-lang=python]").get_attribute("aria-selected") == "true"
    upload.locator(".sample-tab[data-lang=javascript]").click()
    console.op("uploadContacts").locator('[name="listId"]').fill(
        "11111111-2222-4333-8444-555555555555"
    )
    javascript = upload.locator("pre.sample:visible").inner_text()
    assert "/v1/lists/11111111-2222-4333-8444-555555555555/contacts" in javascript
    assert "Bearer ${process.env.API_KEY}" in javascript and "JSON.stringify(" in javascript

    recording = console.op("getCallRecording").locator("pre.sample:visible").inner_text()
    assert "/v1/calls/{id}/recording" in recording and "arrayBuffer()" in recording

    texts = page.eval_on_selector_all("pre.sample", "p => p.map(e => e.textContent)")
    # Three samples per operation of the API but the provider's callbacks (only the provider,
    # which signs them, calls those); the webhooks' payloads (POSTed by the service to the
    # integrator, their path an event type) have none.
    callable_ops = page.eval_on_selector_all(
        "article.op", "ops => ops.filter(o => o.dataset.path.startsWith('/')).length"
    )
    unsampled = page.eval_on_selector_all(
        "article.op",
        "ops => ops.filter(o => o.dataset.path.startsWith('/') && !o.querySelector('pre.sample'))"
        ".map(o => o.dataset.path)",
    )
    assert sorted(unsampled) == [
        "/v1/provider/callbacks/{workspaceId}/recording",
        "/v1/provider/callbacks/{workspaceId}/status",
    ]
    payloads = page.eval_on_selector_all(
        "article.op",
        "ops => ops.filter(o => !o.dataset.path.startsWith('/'))"
        ".map(o => o.querySelectorAll('pre.sample').length)",
    )
    assert len(payloads) == len(TYPES) and set(payloads) == {0}  # one per event type
    assert len(texts) == 3 * (callable_ops - len(unsampled))
    assert callable_ops + len(TYPES) == len(visible_ops(console))
    assert all(console.demo.key not in text for text in texts)
    console.assert_clean()


def test_the_samples_run_as_shown(console, tmp_path):
    """The Python and JavaScript samples of GET /v1/users, copied from the page, run as they
    are with the key in $API_KEY."""
    env = {**os.environ, "API_KEY": console.demo.key}
    samples = console.op("listUsers").locator(".samples")
    python = samples.locator("pre.sample[data-lang=python]").text_content()
    run = subprocess.run(
        [sys.executable, "-c", python], capture_output=True, text=True, timeout=60, env=env
    )
    assert run.returncode == 0, run.stderr
    users = ast.literal_eval(run.stdout.strip())["users"]
    assert users and all(user["email"] for user in users)
    if shutil.which("node"):
        script = tmp_path / "sample.mjs"
        script.write_text(samples.locator("pre.sample[data-lang=javascript]").text_content())
        run = subprocess.run(
            ["node", str(script)], capture_output=True, text=True, timeout=60, env=env
        )
        assert run.returncode == 0, run.stderr
        assert users[0]["email"] in run.stdout
    console.assert_clean()


def test_schema_links_open_the_folded_schema(console):
    page = console.page
    assert not page.locator("#schemas").evaluate("d => d.open")  # folded by default
    console.op("listUsers").locator("a.schema-link", has_text="responses.users").first.click()
    target = page.locator("#schema-responses\\.users")
    assert target.evaluate("d => d.open") and target.is_visible()
    assert "users" in target.locator(".tree").first.inner_text()
    console.assert_clean()


def test_full_paths_in_the_sidebar_and_full_width_ids(console):
    page = console.page
    cut = page.eval_on_selector_all(
        ".sidebar .nav-path", "ps => ps.filter(p => p.scrollWidth > p.clientWidth).length"
    )
    assert cut == 0
    assert page.locator(".sidebar", has_text="/v1/lists/{listId}/contacts").is_visible()
    field = console.op("getCallRecording").locator('[name="id"]')
    form = console.op("getCallRecording").locator(".try-params")
    assert field.bounding_box()["width"] >= form.bounding_box()["width"] - 4
    console.assert_clean()


def test_the_390_px_layout_scrolls_only_down_and_has_a_menu(browser, demo):
    context = browser.new_context(viewport=PHONE, accept_downloads=True)
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        console = Console(page, demo)
        console.open()

        def page_width() -> int:
            return page.evaluate("document.documentElement.scrollWidth")

        assert page_width() <= PHONE["width"]
        assert not page.locator("#sidebar").is_visible()
        console.screenshot("console-390.png")

        # Everything unfolded and a response shown: still no sideways scroll.
        console.enter_key(demo.key)
        assert console.send("listCalls") == "200 OK"
        page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
        assert page_width() <= PHONE["width"]
        console.op("listCalls").locator(".result-line").scroll_into_view_if_needed()
        console.screenshot("console-390-result.png")

        page.click("#menu-toggle")
        assert page.locator("#sidebar").is_visible()
        assert page.locator("#menu-toggle").get_attribute("aria-expanded") == "true"
        page.locator("#search").fill("recording")
        console.screenshot("console-390-menu.png")
        page.locator("#sidebar a[href='#op-getCallRecording']").click()
        assert not page.locator("#sidebar").is_visible()
        op = console.op("getCallRecording")
        assert op.is_visible()
        field = op.locator('[name="id"]').bounding_box()["width"]
        assert field >= op.locator(".try-params").bounding_box()["width"] - 4 and field >= 300
        assert page_width() <= PHONE["width"]
        console.assert_clean()
    finally:
        context.close()
