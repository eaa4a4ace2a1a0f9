"""The reference and the pasted key's scopes, in headless chromium against the real demo: it says
which scopes the key has next to the live-data notice (from GET /v1/api-key), disables the
Try-it of every operation the key cannot use and says why, and sends nothing such a form
holds."""

import json
import urllib.request

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.long, pytest.mark.own_store]


def scoped_operations(console) -> dict[str, str]:
    """operationId -> the scope it needs, from the served OpenAPI document."""
    with urllib.request.urlopen(console.demo.origin + "/v1/openapi.json", timeout=10) as response:
        document = json.loads(response.read())
    return {
        op["operationId"]: op["x-required-scope"]
        for item in document["paths"].values()
        for method, op in item.items()
        if method != "head" and "x-required-scope" in op and op.get("x-try-it", True)
    }


def wait_for_scopes(console, text: str) -> str:
    console.page.wait_for_function(
        "text => document.getElementById('key-scopes').textContent.includes(text)", arg=text
    )
    return console.page.locator("#key-scopes").inner_text()


def test_a_read_only_key_cannot_try_the_writes_and_is_told_why(console):
    page = console.page
    read_only = console.demo.workspaces[0]["readOnlyApiKey"]
    operations = scoped_operations(console)
    assert {"read", "write"} <= set(operations.values())

    console.enter_key(read_only)
    shown = wait_for_scopes(console, "This key's scopes: read")
    assert page.locator("#live-notice #key-scopes").is_visible()  # beside the live-data notice
    assert "write" not in shown
    for operation_id, needed in operations.items():
        op = console.op(operation_id)
        send, why = op.locator(".send"), op.locator(".try-blocked")
        if needed == "read":
            assert send.is_enabled(), operation_id
            assert why.is_hidden(), operation_id
        else:
            assert send.is_disabled(), operation_id
            assert why.is_visible(), operation_id
            assert f"needs the {needed} scope" in why.inner_text()
            assert "the key has read" in why.inner_text()
    console.screenshot("console-read-only-key.png")  # the notice with the key's scopes
    console.op("createList").locator(".try-actions").scroll_into_view_if_needed()
    console.screenshot("console-read-only-try-it.png")

    # Enter in a blocked form sends nothing; a read goes through.
    console.op("createList").locator("textarea").press("Control+Enter")
    console.op("uploadContacts").locator('[name="listId"]').press("Enter")
    assert not [r for r in console.requests if r[0] == "POST"]
    assert console.send("listUsers") == "200 OK"
    console.assert_clean()


def test_each_demo_key_can_try_what_its_scopes_allow_and_a_bad_key_disables_nothing(console):
    page = console.page
    operations = scoped_operations(console)
    dialer = {op for op, needed in operations.items() if needed == "ingest"}
    assert dialer == {
        "recordCall",
        "recordCalls",
        "changeCall",
        "logActivity",
        "listPendingCalls",
        "resolvePendingCall",
    }
    admin = {op for op, needed in operations.items() if needed == "admin"}
    assert admin == {
        "createUser",
        "updateUser",
        "deleteUser",
        "createErasure",
        "getErasure",
        "listErasures",
    }
    console.enter_key(console.demo.workspaces[0]["readOnlyApiKey"])
    wait_for_scopes(console, "scopes: read.")
    assert console.op("createList").locator(".send").is_disabled()

    # read, write: everything but the dialer's and the users' writes, which say what they need.
    console.enter_key(console.demo.key)
    wait_for_scopes(console, "This key's scopes: read, write")
    assert console.op("createList").locator(".send").is_enabled()
    assert page.locator(".try-blocked:visible").count() == len(dialer) + len(admin)
    for operation_id in dialer | admin:
        why = console.op(operation_id).locator(".try-blocked")
        needed = "ingest" if operation_id in dialer else "admin"
        assert why.is_visible() and f"needs the {needed} scope" in why.inner_text(), operation_id

    # read, write, admin: the users' writes too, not the dialer's.
    console.enter_key(console.demo.workspaces[0]["adminApiKey"])
    wait_for_scopes(console, "This key's scopes: read, write, admin")
    for operation_id, needed in operations.items():
        send = console.op(operation_id).locator(".send")
        assert send.is_enabled() == (needed != "ingest"), operation_id

    # ingest: the dialer's writes, and nothing else.
    console.enter_key(console.demo.workspaces[0]["ingestApiKey"])
    wait_for_scopes(console, "This key's scopes: ingest")
    for operation_id, needed in operations.items():
        send = console.op(operation_id).locator(".send")
        assert send.is_enabled() == (needed == "ingest"), operation_id

    console.enter_key(console.demo.key + "x")
    shown = wait_for_scopes(console, "This key is not accepted")
    assert "unknown or revoked" in shown
    assert page.locator(".send:disabled").count() == 0  # not known: the API will say

    page.click("#key-forget")
    page.wait_for_function("() => document.getElementById('key-scopes').hidden")
    # Each check is one GET /v1/api-key with the key pasted, and nothing else.
    checks = [r for r in console.requests if r[1].endswith("/v1/api-key")]
    assert len(checks) == 5 and all(r[0] == "GET" for r in checks)
    console.assert_clean()


def test_a_stored_key_is_checked_when_the_page_opens(console):
    console.enter_key(console.demo.workspaces[0]["readOnlyApiKey"])
    wait_for_scopes(console, "scopes: read.")
    console.page.reload()
    wait_for_scopes(console, "scopes: read.")
    assert console.op("createList").locator(".send").is_disabled()
    console.assert_clean()
