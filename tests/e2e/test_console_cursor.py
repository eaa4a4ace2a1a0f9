"""The console's pager and cursors, in a real headless chromium against the real demo: a
page-number response offers "Next by cursor", a cursor response's "Next" requests
?cursor=<nextCursor>, and in the sync order a caught-up walk polls from where it stopped."""

import json
import urllib.parse
import urllib.request

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.own_store]


def api(console, path):
    request = urllib.request.Request(
        console.demo.origin + "/v1" + path, headers={"Authorization": f"Bearer {console.demo.key}"}
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        return json.loads(response.read())


def sent_urls(console, path):
    return [
        urllib.parse.urlsplit(url)
        for method, url, _ in console.requests
        if method == "GET" and urllib.parse.urlsplit(url).path == path
    ]


def test_the_paginated_forms_have_cursor_and_sort(console):
    for operation in ("listLists", "listCalls", "listProspects"):
        op = console.op(operation)
        assert op.locator('input[name="cursor"][data-in="query"]').count() == 1, operation
        options = op.locator('select[name="sort"] option').all_inner_texts()
        assert {"-createdAt", "updatedAt"} <= set(options), operation
    console.assert_clean()


def test_the_pager_follows_next_cursor(console):
    console.enter_key(console.demo.key)
    assert console.send("listCalls", pageSize="50") == "200 OK"
    first = console.json("listCalls")
    assert first["page"] == 1 and first["hasMore"] and first["nextCursor"]
    pager = console.op("listCalls").locator(".pager")
    assert pager.locator("[data-rel=next]").is_enabled()  # by page number, as before
    assert pager.locator("[data-rel=cursor]").is_enabled()

    assert console.follow("listCalls", "cursor") == "200 OK"
    second = console.json("listCalls")
    assert "page" not in second and "total" not in second  # a cursor response
    assert second["calls"] == api(console, "/calls?page=2&pageSize=50")["calls"]
    asked = sent_urls(console, "/v1/calls")[-1]
    query = urllib.parse.parse_qs(asked.query)
    assert query["cursor"] == [first["nextCursor"]] and "page" not in query
    assert console.op("listCalls").locator('[name="cursor"]').input_value() == first["nextCursor"]
    assert console.op("listCalls").locator('[name="page"]').input_value() == ""
    assert "by cursor" in pager.inner_text()
    assert pager.locator("[data-rel=prev]").is_disabled()

    assert console.follow("listCalls", "next") == "200 OK"  # Next now follows nextCursor
    third = console.json("listCalls")
    query = urllib.parse.parse_qs(sent_urls(console, "/v1/calls")[-1].query)
    assert query["cursor"] == [second["nextCursor"]]
    assert third["calls"] == api(console, "/calls?page=3&pageSize=50")["calls"]

    assert console.follow("listCalls", "first") == "200 OK"  # starts over, by page number
    assert console.json("listCalls")["calls"] == first["calls"]
    console.op("listCalls").locator(".pager").scroll_into_view_if_needed()
    console.screenshot("console-cursor.png")
    console.assert_clean()


def test_a_caught_up_sync_walk_polls_from_its_cursor(console):
    console.enter_key(console.demo.key)
    assert console.send("listLists", pageSize="100", sort="updatedAt") == "200 OK"
    walked = console.json("listLists")
    assert not walked["hasMore"] and walked["nextCursor"]  # the sync order never ends
    pager = console.op("listLists").locator(".pager")
    assert pager.locator("[data-rel=next]").is_disabled()
    assert console.follow("listLists", "cursor") == "200 OK"
    caught_up = console.json("listLists")
    assert caught_up["hasMore"] is False and caught_up["nextCursor"]
    seen = {x["id"] for x in walked["lists"]}
    assert not seen & {x["id"] for x in caught_up["lists"]}  # nothing seen twice
    poll = pager.locator("[data-rel=next]")
    assert poll.is_enabled() and "Poll" in poll.inner_text()
    assert console.follow("listLists", "next") == "200 OK"
    query = urllib.parse.parse_qs(sent_urls(console, "/v1/lists")[-1].query)
    assert query["cursor"] == [caught_up["nextCursor"]]
    assert query["sort"] == ["updatedAt"]  # the form's filters and sort are repeated unchanged
    console.assert_clean()


def test_an_export_shows_its_first_records_and_continues_in_the_sync_order(console):
    console.enter_key(console.demo.key)
    assert console.send("exportCalls") == "200 OK"
    result = console.op("exportCalls").locator(".result")
    assert "records, one per line (NDJSON); the first 50:" in result.inner_text()
    shown = console.json("exportCalls")
    oldest = api(console, "/calls?sort=updatedAt&pageSize=50")["calls"]
    assert [c["id"] for c in shown] == [c["id"] for c in oldest]  # the sync order's start
    result.scroll_into_view_if_needed()
    console.screenshot("console-export.png")

    assert console.follow("exportCalls", "next") == "200 OK"  # the export's Link rel="next"
    asked = urllib.parse.parse_qs(sent_urls(console, "/v1/calls")[-1].query)
    assert asked["sort"] == ["updatedAt"] and asked["cursor"]
    assert "nextCursor" in console.json("exportCalls")  # a page of the sync order
    console.assert_clean()
