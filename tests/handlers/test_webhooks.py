"""The webhook endpoints' API: creation and its URL checks (SSRF: https to public addresses
only, unless the operator allowed a range), validation, secrets shown only at creation and
rotation, PATCH, DELETE, recover's bounds, the deliveries listing's cursor, Idempotency-Key,
and another workspace's endpoint behaving like an unknown one. The app runs with the default
configuration: no network allowed beyond the public ones."""

from __future__ import annotations

import datetime as dt
import logging
import uuid

import pytest

BASE = "/v1/webhook-endpoints"
PUBLIC = "https://93.184.215.14/hooks"  # a public address: no name lookup needed


async def create(api, **body) -> dict:
    response = await api.post(BASE, {"url": PUBLIC, **body})
    assert response.code == 201, response
    return response.json()["webhookEndpoint"]


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://127.0.0.1:8080/hook", "loopback"),
        ("https://127.0.0.1/hook", "loopback"),
        ("https://localhost/hook", "loopback"),  # a name that resolves to 127.0.0.1
        ("https://169.254.169.254/latest/meta-data", "link"),  # cloud metadata
        ("https://[::ffff:127.0.0.1]/hook", "loopback"),  # IPv4-mapped IPv6
        ("https://[::1]/hook", "loopback"),
        ("https://10.1.2.3/hook", "private"),
        ("https://192.168.0.10/hook", "private"),
        ("http://93.184.215.14/hook", "https"),  # public, but not https
        ("ftp://93.184.215.14/hook", ""),
        ("not a url", ""),
    ],
)
async def test_urls_that_could_reach_the_operators_network_are_refused(api, url, words):
    response = await api.post(BASE, {"url": url})
    assert response.code == 422, response
    problem = response.json()
    assert problem["code"] == "invalid_webhook_url"
    assert problem["errors"][0]["pointer"] == "#/url"
    assert words.lower() in problem["detail"].lower()
    assert "127.0.0.1" not in problem["detail"] or "127.0.0.1" in url  # no resolved address
    assert (await api.get(BASE)).json() == {"webhookEndpoints": []}  # nothing was written


async def test_create_shows_the_secret_once_and_the_record_everywhere(api):
    response = await api.post(BASE, {"url": PUBLIC, "description": "CRM"})
    assert response.code == 201
    created = response.json()["webhookEndpoint"]
    secret = created.pop("secret")
    assert secret.startswith("whsec_")
    assert set(created) == {
        "id",
        "url",
        "eventTypes",
        "description",
        "status",
        "disabledReason",
        "disabledAt",
        "createdAt",
        "updatedAt",
    }
    assert created["status"] == "enabled" and created["eventTypes"] is None
    one = await api.get(f"{BASE}/{created['id']}")
    assert one.json() == {"webhookEndpoint": created}
    listed = await api.get(BASE)
    assert listed.json() == {"webhookEndpoints": [created]}
    for body in (one.body, listed.body):
        assert secret.encode() not in body and b"secret" not in body


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"url": PUBLIC, "eventTypes": ["call.deleted"]}, "#/eventTypes/0"),
        ({"url": PUBLIC, "eventTypes": []}, "#/eventTypes"),
        ({"url": PUBLIC, "eventTypes": ["call.created", "call.created"]}, "#/eventTypes"),
        ({"url": PUBLIC, "workspaceId": str(uuid.uuid4())}, "#"),
        ({}, "#"),
        ({"url": ""}, "#/url"),
    ],
)
async def test_bad_bodies_are_400_and_write_nothing(api, body, pointer):
    response = await api.post(BASE, body)
    assert response.code == 400, response
    assert response.json()["errors"][0]["pointer"].startswith(pointer)
    assert (await api.get(BASE)).json() == {"webhookEndpoints": []}


async def test_patch_changes_fields_checks_the_url_and_disables(api):
    endpoint = await create(api)
    path = f"{BASE}/{endpoint['id']}"
    response = await api.fetch(
        path,
        "PATCH",
        json_body={"eventTypes": ["call.updated", "call.created"], "description": None},
    )
    assert response.code == 200, response
    changed = response.json()["webhookEndpoint"]
    assert changed["eventTypes"] == ["call.created", "call.updated"]
    assert changed["description"] is None and "secret" not in changed
    refused = await api.fetch(path, "PATCH", json_body={"url": "https://10.0.0.1/x"})
    assert refused.code == 422 and refused.json()["code"] == "invalid_webhook_url"
    assert (await api.get(path)).json()["webhookEndpoint"]["url"] == PUBLIC
    off = await api.fetch(path, "PATCH", json_body={"status": "disabled"})
    assert off.json()["webhookEndpoint"]["status"] == "disabled"
    assert off.json()["webhookEndpoint"]["disabledReason"] == "disabled through the API"
    empty = await api.fetch(path, "PATCH", json_body={})
    assert empty.code == 400
    wrong = await api.fetch(path, "PATCH", json_body={"status": "paused"})
    assert wrong.code == 400 and wrong.json()["errors"][0]["pointer"] == "#/status"


async def test_rotation_returns_a_new_secret_and_delete_removes(api):
    endpoint = await create(api)
    rotated = await api.post(f"{BASE}/{endpoint['id']}/rotate-secret")
    assert rotated.code == 200
    assert rotated.json()["webhookEndpoint"]["secret"].startswith("whsec_")
    gone = await api.fetch(f"{BASE}/{endpoint['id']}", "DELETE")
    assert gone.code == 204 and gone.body == b""
    assert (await api.get(f"{BASE}/{endpoint['id']}")).code == 404
    assert (await api.fetch(f"{BASE}/{endpoint['id']}", "DELETE")).code == 404


async def test_recover_since_older_than_the_retention_is_410(api, config):
    endpoint = await create(api)
    path = f"{BASE}/{endpoint['id']}/recover"
    old = dt.datetime.now(dt.UTC) - dt.timedelta(days=config.event_retention_days + 1)
    response = await api.post(path, {"since": old.isoformat()})
    assert response.code == 410 and response.json()["code"] == "events_expired"
    bad = await api.post(path, {"since": "yesterday"})
    assert bad.code == 400 and bad.json()["errors"][0]["pointer"] == "#/since"
    fine = await api.post(path, {"since": "2099-01-01T00:00:00Z"})
    assert fine.code == 202
    assert fine.json() == {
        "recovery": {"endpointId": endpoint["id"], "since": "2099-01-01T00:00:00.000Z"}
    }


async def test_the_deliveries_listing_and_its_cursor(api):
    endpoint = await create(api)
    other = await create(api)
    response = await api.get(f"{BASE}/{endpoint['id']}/deliveries")
    assert response.code == 200
    assert response.json() == {
        "deliveries": [],
        "pageSize": 50,
        "hasMore": False,
        "nextCursor": None,
    }
    # A cursor of another resource or endpoint is 400 invalid_cursor.
    events = (await api.get("/v1/events")).json()["nextCursor"]
    foreign = await api.get(f"{BASE}/{other['id']}/deliveries?cursor={events}")
    assert foreign.code == 400 and foreign.json()["code"] == "invalid_cursor"
    assert (await api.get(f"{BASE}/{endpoint['id']}/deliveries?pageSize=101")).code == 400


async def test_idempotency_key_replays_the_creation(api):
    headers = {"Idempotency-Key": "create-hook-1"}
    first = await api.post(BASE, {"url": PUBLIC}, headers=headers)
    again = await api.post(BASE, {"url": PUBLIC}, headers=headers)
    assert first.code == again.code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert len((await api.get(BASE)).json()["webhookEndpoints"]) == 1


async def test_another_workspaces_endpoint_is_not_found(api, api_b):
    endpoint = await create(api)
    path = f"{BASE}/{endpoint['id']}"
    unknown = f"{BASE}/{uuid.uuid4()}"
    for target in (path, unknown):
        answers = [
            await api_b.get(target),
            await api_b.fetch(target, "PATCH", json_body={"description": "x"}),
            await api_b.fetch(target, "DELETE"),
            await api_b.post(f"{target}/rotate-secret"),
            await api_b.get(f"{target}/deliveries"),
            await api_b.post(f"{target}/recover", {"since": "2099-01-01T00:00:00Z"}),
        ]
        assert [a.code for a in answers] == [404] * 6
    assert (await api_b.get(BASE)).json() == {"webhookEndpoints": []}
    assert (await api.get(path)).json()["webhookEndpoint"]["description"] is None


async def test_a_repeated_rotation_with_its_key_keeps_one_new_secret(api):
    endpoint = await create(api)
    path = f"{BASE}/{endpoint['id']}/rotate-secret"
    headers = {"Idempotency-Key": "rotate-1"}
    first = await api.post(path, headers=headers)
    again = await api.post(path, headers=headers)
    assert first.code == again.code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["webhookEndpoint"]["secret"] == first.json()["webhookEndpoint"]["secret"]


@pytest.mark.parametrize(
    ("host", "rule"),
    [
        ("a..b.com", "label"),
        (".example.com", "label"),
        ("a" * 64 + ".example.com", "label"),
        (".".join(["a" * 60] * 5), "at most 253 characters"),
    ],
    ids=["empty label", "leading dot", "64-character label", "300-character name"],
)
async def test_host_names_dns_cannot_hold_are_422_on_create_and_patch(api, caplog, host, rule):
    caplog.set_level(logging.DEBUG)
    url = f"https://{host}/hook"
    created = await api.post(BASE, {"url": url})
    endpoint = await create(api)
    patched = await api.fetch(f"{BASE}/{endpoint['id']}", "PATCH", json_body={"url": url})
    for response in (created, patched):
        assert response.code == 422, response
        problem = response.json()
        assert problem["code"] == "invalid_webhook_url"
        assert problem["errors"] == [{"pointer": "#/url", "detail": problem["errors"][0]["detail"]}]
        assert rule in problem["detail"] and "host name" in problem["detail"]
    listed = (await api.get(BASE)).json()["webhookEndpoints"]
    assert [(e["id"], e["url"]) for e in listed] == [(endpoint["id"], PUBLIC)]  # none written
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert "Traceback" not in caplog.text
