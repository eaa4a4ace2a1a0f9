"""What a request body and a query may hold: U+0000 (NUL) in no text anywhere (PostgreSQL text
refuses it, so a NUL stored here would break the first integrator who loads it there), and
every body error points at its place (`errors[].pointer`, "#" for the body as a whole).

Every string of a valid body of every endpoint that takes one gets a NUL in turn: each is 400
pointing at that string, nothing is written, and the valid body itself is then accepted."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from handlers.jsonio import NUL_DETAIL, format_timestamp
from store.clock import utcnow
from tests.helpers import Client

PUBLIC = "https://93.184.215.14/hooks"
CONTACT = {
    "firstName": "Ada",
    "lastName": "Lovelace",
    "phoneNumber": "+14155550199",
    "email": "ada@a.example",
    "companyName": "Engines",
    "companyDomain": "engines.example",
    "jobTitle": "Analyst",
    "linkedinUrl": "https://www.linkedin.com/in/ada",
}


def call(user: str, **more) -> dict:
    return {
        "userId": user,
        "prospect": CONTACT,
        "direction": "outbound",
        "disposition": "connected",
        "fromNumber": "+12125550142",
        "toNumber": "+14155550111",
        "startedAt": "2026-01-05T10:00:00Z",
        "answeredAt": "2026-01-05T10:00:09Z",
        "endedAt": "2026-01-05T10:03:09Z",
        "notes": "called back",
        "providerCallSid": "CA" + "a" * 32,
        "recordingSid": "RE" + "b" * 32,
        "recordingDurationSeconds": 60,
        **more,
    }


def bodies(user: str, list_id: str, prospect: str, call_id: str, hook: str):
    """(method, path, a valid body) for every operation that reads a JSON body."""
    note = {"prospectId": prospect, "type": "note", "occurredAt": "2026-01-05T10:00:00Z"}
    return [
        ("POST", "/v1/lists", {"name": "Leads", "ownerUserId": user}),
        ("POST", f"/v1/lists/{list_id}/contacts", {"contacts": [CONTACT]}),
        ("POST", "/v1/calls", call(user)),
        ("POST", "/v1/calls/batch", {"calls": [call(user, providerCallSid="CA" + "c" * 32)]}),
        ("PATCH", f"/v1/calls/{call_id}", {"notes": "later", "disposition": "voicemail"}),
        ("POST", "/v1/prospect-activities", {**note, "details": {"text": "hello"}}),
        (
            "POST",
            "/v1/prospect-activities",
            {
                **note,
                "type": "email",
                "summary": "sent",
                "details": {"direction": "outbound", "subject": "Hi"},
            },
        ),
        (
            "POST",
            "/v1/prospect-activities",
            {**note, "type": "status_change", "details": {"from": "new", "to": "contacted"}},
        ),
        (
            "POST",
            "/v1/webhook-endpoints",
            {"url": PUBLIC, "description": "CRM", "eventTypes": ["call.created"]},
        ),
        ("PATCH", f"/v1/webhook-endpoints/{hook}", {"url": PUBLIC, "description": "CRM"}),
        ("POST", f"/v1/webhook-endpoints/{hook}/recover", {"since": format_timestamp(utcnow())}),
    ]


def strings(value: object, pointer: str = "#") -> Iterator[str]:
    """The pointer of every string in a JSON value."""
    if isinstance(value, str):
        yield pointer
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from strings(child, f"{pointer}/{key}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from strings(child, f"{pointer}/{index}")


def with_nul(value: object, pointer: str, here: str = "#") -> object:
    """The value with a NUL in the middle of the string at `pointer`."""
    if here == pointer:
        assert isinstance(value, str)
        return value[:1] + "\u0000" + value[1:]
    if isinstance(value, dict):
        return {k: with_nul(v, pointer, f"{here}/{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [with_nul(v, pointer, f"{here}/{i}") for i, v in enumerate(value)]
    return value


@pytest.fixture
def api(io_loop, origin, auth, ws_a):
    """Workspace A's client with every scope (the bodies cover write and ingest)."""
    scopes = frozenset({"read", "write", "ingest"})
    _, key = io_loop.run_sync(lambda: auth.create(ws_a.id, "all", scopes))
    return Client(origin, key)


async def snapshot(store) -> dict:
    """Every stored document, but the rate limit's counters (every request counts)."""
    names = [name for name in await store.collections() if "rate" not in name]
    return {name: await store.documents(name) for name in sorted(names)}


async def test_a_nul_in_any_text_of_any_body_is_400_at_its_place(api, store, ws_a):
    user = ws_a.users[0]["id"]
    listing = (await api.post("/v1/lists", {"name": "L", "ownerUserId": user})).json()["list"]
    prospect = (await store.prospects.create(ws_a.id, {"email": "p@a.example"}))["id"]
    made = await api.post("/v1/calls", call(user, providerCallSid="CA" + "d" * 32))
    hook = await api.post("/v1/webhook-endpoints", {"url": PUBLIC})
    cases = bodies(
        user,
        listing["id"],
        prospect,
        made.json()["call"]["id"],
        hook.json()["webhookEndpoint"]["id"],
    )
    before = await snapshot(store)
    tried = 0
    for method, path, body in cases:
        for pointer in strings(body):
            response = await api.fetch(path, method, json_body=with_nul(body, pointer))
            assert response.code == 400, (path, pointer, response)
            assert response.json()["errors"] == [{"pointer": pointer, "detail": NUL_DETAIL}]
            tried += 1
    assert tried > 60
    assert await snapshot(store) == before  # nothing was written
    for method, path, body in cases:  # the bodies themselves are valid
        response = await api.fetch(path, method, json_body=body)
        assert response.code in (200, 201, 202), (path, response)


@pytest.mark.parametrize(
    "query",
    [
        "/v1/prospects?email=a%00b%40a.example",
        "/v1/prospects?phoneNumber=%2B1415%00",
        "/v1/calls?sort=%00createdAt",
        "/v1/events?type=call.created%00",
        "/v1/lists?cursor=abc%00def",
        "/v1/exports/calls?updatedSince=2026-01-05%00",
        "/v1/reporting/dialer-metrics?from=2026-01-01&to=2026-01-31&timezone=UTC%00",
    ],
)
async def test_a_nul_in_a_query_parameter_is_400_at_its_place(api, query):
    response = await api.get(query)
    assert response.code == 400, response
    name = query.split("%00")[0].rsplit("?", 1)[-1].rsplit("&", 1)[-1].split("=")[0]
    errors = {e["pointer"]: e["detail"] for e in response.json()["errors"]}
    # A cursor's every fault reads "the cursor is malformed" (400 invalid_cursor).
    assert errors[f"#/query/{name}"] == (
        NUL_DETAIL if name != "cursor" else "the cursor is malformed"
    )


@pytest.mark.parametrize("key", ["\u0000", "a\u0000b"])
async def test_a_nul_in_a_key_is_400(api, key):
    response = await api.post("/v1/lists", {"name": "L", key: "x"})
    assert response.code == 400 and response.json()["errors"][0]["pointer"] == "#"


# --- every body error has a pointer ---------------------------------------------------------

RAW = {
    "integer beyond int64": (b"100000000000000000000", "#/recordingDurationSeconds"),
    "1e20": (b"1e20", "#/recordingDurationSeconds"),
    "float overflow": (b"1e999", "#/recordingDurationSeconds"),
    "negative overflow": (b"-1e999", "#/recordingDurationSeconds"),
    "huge integer": (b"9" * 5000, "#/recordingDurationSeconds"),
}


@pytest.mark.parametrize(("value", "pointer"), RAW.values(), ids=RAW.keys())
async def test_a_number_out_of_range_points_at_its_field(api, ws_a, value, pointer):
    body = json.dumps(call(ws_a.users[0]["id"], recordingDurationSeconds=0)).encode()
    body = body.replace(b'"recordingDurationSeconds": 0', b'"recordingDurationSeconds": ' + value)
    for path, sent in (("/v1/calls", body), ("/v1/calls/batch", b'{"calls": [' + body + b"]}")):
        response = await api.fetch(
            path, "POST", body=sent, headers={"Content-Type": "application/json"}
        )
        assert response.code == 400, response
        expected = pointer if path == "/v1/calls" else pointer.replace("#", "#/calls/0")
        assert [e["pointer"] for e in response.json()["errors"]] == [expected]


MALFORMED = {
    "truncated": (b'{"name": "x"', "#"),
    "not json": (b"name=x", "#"),
    "NaN": (b'{"name": NaN}', "#"),
    "duplicate key": (b'{"name": "a", "name": "b"}', "#/name"),
    "dollar key": (b'{"$where": "1"}', "#/$where"),
    "nested dollar key": (b'{"contacts": [{"$set": {"a": 1}}]}', "#/contacts/0/$set"),
    "deep objects": (b'{"a":' * 5000 + b"1" + b"}" * 5000, "#"),
    "deep arrays": (b'{"a":' + b"[" * 20 + b"]" * 20 + b"}", "#/a" + "/0" * 16),
    "invalid utf-8": (b'{"name": "\xff\xfe"}', "#"),
    "lone surrogate": (b'{"name": "\\ud800"}', "#/name"),
    "empty": (b"", "#"),
    "whitespace": (b"   ", "#"),
    "top-level huge integer": (b"1" * 30, "#"),
    "top-level NUL": (b'"\\u0000"', "#"),
}


@pytest.mark.parametrize(("body", "pointer"), MALFORMED.values(), ids=MALFORMED.keys())
async def test_every_body_error_has_a_pointer(api, body, pointer):
    response = await api.fetch(
        "/v1/lists", "POST", body=body, headers={"Content-Type": "application/json"}
    )
    assert response.code == 400, response
    problem = response.json()
    assert problem["code"] == "invalid_request"
    assert problem["errors"][0]["pointer"] == pointer, problem
    assert problem["detail"]
