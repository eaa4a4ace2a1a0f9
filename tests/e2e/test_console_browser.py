"""The interactive reference in a real headless chromium against the real demo process: key
handling, Try-it for users, lists and contacts, paging, recordings, the metrics chart, and the
401 problem. Screenshots land in artifacts/."""

import json
import urllib.request

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.long, pytest.mark.own_store]


def test_console_loads_with_the_live_notice_and_a_clean_csp(console):
    page = console.page
    notice = page.locator("#live-notice")
    assert notice.is_visible()
    assert "real data" in notice.inner_text() and "rate limit" in notice.inner_text()
    assert page.locator(".sidebar a[href='#op-listUsers']").is_visible()
    console.screenshot("console.png")
    console.assert_clean()


def test_every_documented_operation_has_a_try_it_form(console):
    with urllib.request.urlopen(console.demo.origin + "/v1/openapi.json", timeout=10) as response:
        document = json.loads(response.read())
    for item in document["paths"].values():
        for method, op in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                forms = console.op(op["operationId"]).locator("form.try").count()
                assert forms == (0 if op.get("x-try-it") is False else 1), op["operationId"]


def test_get_users_with_the_demo_key(console):
    console.enter_key(console.demo.key)
    assert console.send("listUsers") == "200 OK"
    users = console.json("listUsers")["users"]
    assert len(users) >= 2 and all(u["id"] and u["email"] for u in users)
    assert console.header("listUsers", "X-Request-Id")
    assert "ms" in console.op("listUsers").locator(".result-time").inner_text()
    console.op("listUsers").scroll_into_view_if_needed()
    console.screenshot("console-users.png")

    page = console.page
    # The key lives in this tab's sessionStorage only: no localStorage, no cookie.
    assert page.evaluate("Object.values(sessionStorage)") == [console.demo.key]
    assert page.evaluate("localStorage.length") == 0
    assert page.evaluate("document.cookie") == ""
    page.reload()
    assert page.input_value("#api-key") == console.demo.key
    page.click("#key-forget")
    assert page.evaluate("sessionStorage.length") == 0
    console.op("listUsers").locator(".send").click()
    assert (
        console.op("listUsers").locator(".result").inner_text().startswith("Enter your API key")
    )  # nothing is sent without a key
    console.assert_clean()


def test_create_a_list_and_upload_a_contact(console):
    console.enter_key(console.demo.key)
    assert console.send("listUsers") == "200 OK"
    owner = console.json("listUsers")["users"][0]["id"]
    body = console.op("createList").locator("textarea").input_value()
    assert json.loads(body)["ownerUserId"] == owner  # filled from the GET /users response
    console.op("createList").locator("textarea").fill(
        json.dumps({"name": "Browser test list", "ownerUserId": owner})
    )
    assert console.send("createList") == "201 Created"
    created = console.json("createList")["list"]
    assert created["prospectsCount"] == 0 and created["name"] == "Browser test list"
    assert console.header("createList", "Location") == f"/v1/lists/{created['id']}"

    list_field = console.op("uploadContacts").locator('[name="listId"]')
    assert list_field.input_value() == created["id"]  # filled from the POST /lists response
    console.op("uploadContacts").locator("textarea").fill(
        json.dumps(
            {
                "contacts": [
                    {
                        "firstName": "Grace",
                        "lastName": "Hopper",
                        "email": "grace.hopper@example.com",
                    }
                ]
            }
        )
    )
    assert console.send("uploadContacts") == "200 OK"
    uploaded = console.json("uploadContacts")
    assert [(r["index"], r["outcome"]) for r in uploaded.pop("results")] == [(0, "created")]
    assert uploaded == {
        "listId": created["id"],
        "acceptedContacts": 1,
        "suppressedContacts": 0,
        "totalProspects": 1,
    }
    assert console.send("getList") == "200 OK"
    assert console.json("getList")["list"]["prospectsCount"] == 1
    console.assert_clean()


def test_a_wrong_key_shows_the_401_problem(console):
    console.enter_key("not-a-real-key")
    assert console.send("listUsers") == "401 Unauthorized"
    problem = console.json("listUsers")
    assert problem["code"] == "unauthorized" and problem["status"] == 401
    assert problem["type"] == "/reference/problems#unauthorized"
    assert console.header("listUsers", "WWW-Authenticate").startswith("Bearer")
    console.op("listUsers").scroll_into_view_if_needed()
    console.screenshot("console-401.png")
    console.op("listUsers").locator(".problem-link a").click()
    console.page.wait_for_url("**/reference/problems#unauthorized")
    entry = console.page.locator("#unauthorized")
    assert entry.is_visible() and "Unauthorized" in entry.inner_text()
    console.screenshot("problems.png")
    console.assert_clean()


def test_validation_errors_point_at_the_field(console):
    console.enter_key(console.demo.key)
    assert console.send("listLists", page="0") == "400 Bad Request"
    problem = console.json("listLists")
    assert problem["errors"][0]["pointer"] == "#/query/page"
    console.assert_clean()


def test_page_through_lists_with_next_and_previous(console):
    """The pager follows the Link header; the demo has few lists, so first == last here."""
    console.enter_key(console.demo.key)
    assert console.send("listLists", pageSize="100") == "200 OK"
    pager = console.op("listLists").locator(".pager")
    assert pager.locator("[data-rel=first]").is_enabled()
    assert pager.locator("[data-rel=next]").is_disabled()
    assert "page 1 of 1" in pager.inner_text()
    console.assert_clean()


def test_page_through_calls(console):
    assert console.has("listCalls"), "GET /v1/calls has no Try-it form"
    console.enter_key(console.demo.key)
    assert console.send("listCalls") == "200 OK"
    first = console.json("listCalls")
    assert first["total"] > 0, "the demo seeds calls"
    assert first["page"] == 1 and first["hasMore"], "the demo needs more than one page of calls"
    pager = console.op("listCalls").locator(".pager")
    assert pager.locator("[data-rel=prev]").is_disabled()
    assert console.follow("listCalls", "next") == "200 OK"
    second = console.json("listCalls")
    assert second["page"] == 2
    assert not {c["id"] for c in first["calls"]} & {c["id"] for c in second["calls"]}
    assert console.op("listCalls").locator('[name="page"]').input_value() == "2"
    assert 'rel="prev"' in console.header("listCalls", "Link")
    console.op("listCalls").locator(".result-line").scroll_into_view_if_needed()
    console.screenshot("console-calls.png")
    assert console.follow("listCalls", "prev") == "200 OK"
    assert console.json("listCalls")["calls"] == first["calls"]
    console.assert_clean()


def test_play_and_download_a_recording(console, tmp_path):
    assert console.has("listCalls") and console.has("getCallRecording"), (
        "GET /v1/calls or GET /v1/calls/{id}/recording has no Try-it form"
    )
    console.enter_key(console.demo.key)
    assert console.send("listCalls") == "200 OK"
    recorded = [c["id"] for c in console.json("listCalls")["calls"] if c.get("hasRecording")]
    assert recorded, "the demo seeds calls with recordings"
    op = console.op("getCallRecording")
    assert op.locator('[name="id"]').input_value() == recorded[0]  # filled from GET /calls
    # The demo keeps one recording missing at the provider (a 404 to try); play another.
    for call_id in recorded[:3]:
        if console.send("getCallRecording", id=call_id) == "200 OK":
            break
    assert console.status("getCallRecording") == "200 OK"
    assert console.header("getCallRecording", "Content-Type") == "audio/mpeg"
    length = int(console.header("getCallRecording", "Content-Length"))

    audio = op.locator("audio")
    console.page.wait_for_function(
        "a => a.readyState >= 1 && Number.isFinite(a.duration) && a.duration > 0",
        arg=audio.element_handle(),
    )
    duration = audio.evaluate("a => a.duration")
    assert duration > 1
    # Seeking works on the blob: URL.
    target = round(duration / 2, 1)
    reached = audio.evaluate(
        """(a, t) => new Promise((resolve) => {
        a.addEventListener("seeked", () => resolve(a.currentTime), {once: true});
        a.currentTime = t;
    })""",
        target,
    )
    assert abs(reached - target) < 0.5
    assert audio.get_attribute("src").startswith("blob:")
    op.scroll_into_view_if_needed()
    console.screenshot("console-recording.png")

    link = op.locator("a.download")
    assert link.get_attribute("download") == f"call-{call_id}.mp3"
    with console.page.expect_download() as download:
        link.click()
    assert download.value.suggested_filename == f"call-{call_id}.mp3"
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    data = saved.read_bytes()
    assert len(data) == length
    assert data[:3] == b"ID3" or (data[0] == 0xFF and data[1] & 0xE0 == 0xE0)

    # A byte range comes back as 206 with Content-Range.
    op.locator('[name="Range"]').fill("bytes=0-1023")
    assert console.send("getCallRecording") == "206 Partial Content"
    assert console.header("getCallRecording", "Content-Range") == f"bytes 0-1023/{length}"
    # HEAD: the headers only.
    op.locator('[name="Range"]').fill("")
    assert console.send("getCallRecording", __method="HEAD") == "200 OK"
    assert console.header("getCallRecording", "Content-Length") == str(length)
    assert op.locator(".result audio").count() == 0
    console.assert_clean()


def test_dialer_metrics_are_drawn_as_a_chart(console):
    assert console.has("getDialerMetrics"), "GET /v1/reporting/dialer-metrics has no form"
    console.enter_key(console.demo.key)
    op = console.op("getDialerMetrics")
    # Required parameters start with their documented examples, so Send works at once.
    assert op.locator('[name="from"]').input_value()
    assert console.send("getDialerMetrics") == "200 OK"
    by_day = console.json("getDialerMetrics")["byDay"]
    assert by_day
    bars = op.locator(".chart svg rect.bar")
    assert bars.count() == len(by_day)
    op.locator(".chart").scroll_into_view_if_needed()
    console.screenshot("console-metrics.png")
    console.assert_clean()
