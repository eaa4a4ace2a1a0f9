"""Erasure requests over HTTP, on a real port: POST /v1/erasures (202, Location, a `pending`
request; 400 for an email that is not an address, an unreadable phone, a malformed id, no
identifier or an unknown field, writing nothing; Idempotency-Key), GET /v1/erasures/{id} and
GET /v1/erasures (newest first, by cursor). No response shows the identifiers, and the stored
request keeps only their keyed hashes (HMAC-SHA256 under the service secret) and the prospects
they matched when it was made. No worker runs here (server/erasure_work.py is tested in
tests/server/test_erasure_work.py): requests stay `pending`."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid

import pytest

from tests.helpers import Client

ERASURES = "/v1/erasures"
RECORD = {"id", "status", "requestedAt", "completedAt", "reason", "counts"}
ZERO = {"prospects": 0, "activities": 0, "calls": 0, "recordings": 0, "events": 0}
EMAIL, PHONE = "Ada.Lovelace@Example.com", "(415) 555-0101"


@pytest.fixture
def admin(io_loop, origin, auth, ws_a) -> Client:
    _, key = io_loop.run_sync(lambda: auth.create(ws_a.id, "admin", frozenset({"read", "admin"})))
    return Client(origin, key)


@pytest.fixture
def admin_b(io_loop, origin, auth, ws_b) -> Client:
    _, key = io_loop.run_sync(lambda: auth.create(ws_b.id, "admin", frozenset({"read", "admin"})))
    return Client(origin, key)


async def stored(store, erasure_id: str) -> dict:
    """The request as the store keeps it (each backend's own read: the contract shows no
    hashes)."""
    if store.embedded:

        def read(conn):
            row = conn.execute('SELECT * FROM erasures WHERE "_id" = ?', (erasure_id,)).fetchone()
            return dict(row)

        doc = await store.engine.read(read)
        return {**doc, **{k: json.loads(doc[k]) for k in ("hashes", "prospectIds")}}
    return await store.db["erasures"].find_one({"_id": erasure_id})


def keyed(auth, value: str) -> str:
    return hmac.new(auth.subkey("erasures"), value.encode(), hashlib.sha256).hexdigest()


async def upload(api: Client, ws_a, contacts: list[dict]) -> list[str]:
    """Contacts uploaded to a new list of workspace A; the prospects' ids."""
    created = await api.post("/v1/lists", {"name": "Leads", "ownerUserId": ws_a.users[0]["id"]})
    list_id = created.json()["list"]["id"]
    response = await api.post(f"/v1/lists/{list_id}/contacts", {"contacts": contacts})
    assert response.code == 200, response
    listed = (await api.get(f"/v1/prospects?listId={list_id}")).json()["prospects"]
    return sorted(p["id"] for p in listed)


async def test_post_answers_202_pending_with_location_and_reads_show_it(admin, api, ws_a):
    response = await admin.post(ERASURES, {"email": EMAIL})
    assert response.code == 202, response
    erasure = response.json()["erasure"]
    assert set(erasure) == RECORD
    assert erasure["status"] == "pending"
    assert erasure["completedAt"] is None and erasure["reason"] is None
    assert erasure["counts"] == ZERO
    assert response.headers["Location"] == f"{ERASURES}/{erasure['id']}"
    again = await admin.get(response.headers["Location"])
    assert again.code == 200 and again.json() == {"erasure": erasure}
    listed = (await admin.get(ERASURES)).json()
    assert listed == {"erasures": [erasure], "pageSize": 50, "hasMore": False, "nextCursor": None}
    for body in (response.body, again.body):
        assert b"lovelace" not in body.lower() and b"example.com" not in body.lower()


async def test_request_keeps_keyed_hashes_and_the_matched_prospects_only(
    admin, api, ws_a, store, auth
):
    ada = await upload(api, ws_a, [{"firstName": "Ada", "email": EMAIL, "phoneNumber": PHONE}])
    other = await upload(api, ws_a, [{"firstName": "Bob", "email": "bob@example.com"}])
    by_phone = await upload(api, ws_a, [{"firstName": "Ada", "phoneNumber": "+14155550101"}])
    response = await admin.post(
        ERASURES, {"email": "  ada.lovelace@EXAMPLE.com ", "phoneNumber": PHONE}
    )
    doc = await stored(store, response.json()["erasure"]["id"])
    assert doc["hashes"] == {
        "email": keyed(auth, "ada.lovelace@example.com"),
        "phoneNumber": keyed(auth, "+14155550101"),
    }
    assert sorted(doc["prospectIds"]) == sorted(set(ada + by_phone))
    assert not set(other) & set(doc["prospectIds"])
    text = json.dumps(doc, default=str).lower()
    assert "lovelace" not in text and "555" not in text and "+1415" not in text


async def test_a_prospect_id_is_kept_even_when_no_live_prospect_has_it(admin, store, auth):
    gone = str(uuid.uuid4())
    response = await admin.post(ERASURES, {"prospectId": gone.upper()})
    assert response.code == 202, response
    doc = await stored(store, response.json()["erasure"]["id"])
    assert doc["prospectIds"] == [gone]
    assert doc["hashes"] == {"prospectId": keyed(auth, gone)}


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"email": "not-an-address"}, "#/email"),
        ({"email": ""}, "#/email"),
        ({"phoneNumber": "call me maybe"}, "#/phoneNumber"),
        ({"phoneNumber": "12"}, "#/phoneNumber"),
        ({"prospectId": "1234"}, "#/prospectId"),
        ({}, "#"),
        ({"email": "ada@example.com", "name": "Ada"}, "#/name"),
        ({"email": 7}, "#/email"),
    ],
)
async def test_invalid_requests_are_400_and_write_nothing(admin, body, pointer):
    response = await admin.post(ERASURES, body)
    assert response.code == 400, response
    problem = response.json()
    assert problem["code"] == "invalid_request"
    assert problem["errors"][0]["pointer"] == pointer
    assert (await admin.get(ERASURES)).json()["erasures"] == []


async def test_idempotency_key_replays_the_first_answer_and_writes_once(admin):
    headers = {"Idempotency-Key": "erase-ada-1"}
    first = await admin.post(ERASURES, {"email": EMAIL}, headers=headers)
    second = await admin.post(ERASURES, {"email": EMAIL}, headers=headers)
    assert first.code == second.code == 202
    assert second.headers["Idempotent-Replayed"] == "true"
    assert second.json() == first.json()
    assert second.headers["Location"] == first.headers["Location"]
    assert len((await admin.get(ERASURES)).json()["erasures"]) == 1
    reused = await admin.post(ERASURES, {"email": "other@example.com"}, headers=headers)
    assert reused.code == 422 and reused.json()["code"] == "idempotency_key_reused"


async def test_list_is_newest_first_by_cursor_without_overlap(admin, clock):
    made = []
    for number in range(53):
        response = await admin.post(ERASURES, {"email": f"person{number}@example.com"})
        made.append(response.json()["erasure"]["id"])
        if number % 2:
            clock.advance(0.001)  # some share an instant: ties are broken by id
    first = await admin.get(f"{ERASURES}?pageSize=50")
    body = first.json()
    assert body["hasMore"] is True and len(body["erasures"]) == 50
    assert 'rel="next"' in first.headers["Link"]
    rest = (await admin.get(f"{ERASURES}?cursor={body['nextCursor']}")).json()
    assert rest["hasMore"] is False and rest["nextCursor"] is None
    walked = [e for page in (body, rest) for e in page["erasures"]]
    assert sorted(e["id"] for e in walked) == sorted(made)
    keys = [(e["requestedAt"], e["id"]) for e in walked]
    assert keys == sorted(keys, reverse=True)


async def test_another_workspace_sees_none_of_them(admin, admin_b):
    erasure = (await admin.post(ERASURES, {"email": EMAIL})).json()["erasure"]
    assert (await admin_b.get(f"{ERASURES}/{erasure['id']}")).code == 404
    assert (await admin_b.get(ERASURES)).json()["erasures"] == []
    cursor_of_a = None
    for number in range(51):
        await admin.post(ERASURES, {"email": f"p{number}@example.com"})
    cursor_of_a = (await admin.get(ERASURES)).json()["nextCursor"]
    refused = await admin_b.get(f"{ERASURES}?cursor={cursor_of_a}")
    assert refused.code == 400 and refused.json()["code"] == "invalid_cursor"


async def test_unknown_and_malformed_ids_are_404(admin):
    assert (await admin.get(f"{ERASURES}/{uuid.uuid4()}")).code == 404
    assert (await admin.get(f"{ERASURES}/nope")).code == 404
