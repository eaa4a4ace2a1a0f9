"""The do-not-call list over HTTP, on a real port: POST /v1/do-not-call (normalised as contact
matching normalises, added/existing, an unreadable phone rejects the whole request and writes
nothing), GET /v1/do-not-call (cursor pages newest first, lookup by phone or email), DELETE
/v1/do-not-call/{id}; the prospects' doNotCall and doNotCallReason following the list, the
`doNotCall` filter, contact uploads skipping suppressed contacts, and the events."""

from __future__ import annotations

import uuid

import pytest

from server.config import load_config
from tests.helpers import Client, follow_events, test_environ
from tests.webhooks.receiver import until

DNC = "/v1/do-not-call"


@pytest.fixture
def config():
    """A short settle period: the feed shows events 0.3 s after they are recorded."""
    return load_config(environ=test_environ(shared=True, WSAPI_SYNC_SETTLE_SECONDS="0.3"))


async def add(client: Client, *entries: dict, reason: str | None = None) -> list[dict]:
    body: dict = {"entries": list(entries)}
    if reason is not None:
        body["reason"] = reason
    response = await client.post(DNC, body)
    assert response.code == 200, response
    return response.json()["results"]


async def upload(client: Client, list_id: str, *contacts: dict) -> dict:
    response = await client.post(f"/v1/lists/{list_id}/contacts", {"contacts": list(contacts)})
    assert response.code == 200, response
    return response.json()


async def prospect(client: Client, prospect_id: str) -> dict:
    body = (await client.get("/v1/prospects?pageSize=100")).json()
    return next(p for p in body["prospects"] if p["id"] == prospect_id)


async def events_of(client: Client, types: str, count: int) -> list[dict]:
    async def found() -> list[dict] | None:
        events, _ = await follow_events(client, f"/v1/events?type={types}")
        return events if len(events) >= count else None

    return await until(found, what=f"{count} events of {types}")  # type: ignore[return-value]


async def test_entries_are_normalised_added_once_and_read_back(api):
    results = await add(
        api,
        {"phoneNumber": "(415) 555-0101"},
        {"email": "  Ada@Example.COM "},
        {"phoneNumber": "+1 415 555 0101"},
        reason="Opted out in the CRM",
    )
    assert [r["outcome"] for r in results] == ["added", "added", "existing"]
    assert [r["index"] for r in results] == [0, 1, 2]
    phone, email = results[0]["entry"], results[1]["entry"]
    assert phone["phoneNumber"] == "+14155550101" and "email" not in phone
    assert email["email"] == "ada@example.com" and "phoneNumber" not in email
    assert phone["reason"] == "Opted out in the CRM"
    assert results[2]["entry"] == phone
    again = await add(api, {"email": "ADA@example.com"}, reason="other")
    assert again == [{"index": 0, "entry": email, "outcome": "existing"}]

    found = (await api.get(f"{DNC}?phoneNumber=4155550101")).json()
    assert found == {"entries": [phone], "pageSize": 50, "hasMore": False, "nextCursor": None}
    found = (await api.get(f"{DNC}?email=ada%40EXAMPLE.com")).json()
    assert found["entries"] == [email]
    assert (await api.get(f"{DNC}?email=nobody%40example.com")).json()["entries"] == []


async def test_pages_newest_first_by_cursor(api):
    for number in range(5):
        await add(api, {"phoneNumber": f"+1415555020{number}"})
    response = await api.get(f"{DNC}?pageSize=50")
    everything = response.json()["entries"]
    assert [e["phoneNumber"] for e in everything] == [f"+1415555020{n}" for n in range(4, -1, -1)]
    seen, path = [], f"{DNC}?pageSize=50"
    # The smallest page is 50: 65 entries make two pages, the second reached by the cursor.
    for number in range(60):
        await add(api, {"email": f"person{number}@example.com"})
    while True:
        body = (await api.get(path)).json()
        seen += body["entries"]
        if not body["hasMore"]:
            break
        assert body["nextCursor"]
        path = f"{DNC}?cursor={body['nextCursor']}"
    assert len(seen) == 65 and len({e["id"] for e in seen}) == 65
    stamps = [(e["createdAt"], e["id"]) for e in seen]
    assert stamps == sorted(stamps, reverse=True)


async def test_an_unreadable_phone_rejects_the_request_and_writes_nothing(api):
    response = await api.post(
        DNC, {"entries": [{"phoneNumber": "+14155550101"}, {"phoneNumber": "not a number"}]}
    )
    assert response.code == 400
    problem = response.json()
    assert problem["errors"][0]["pointer"] == "#/entries/1/phoneNumber"
    assert (await api.get(DNC)).json()["entries"] == []
    for body in (
        {"entries": []},
        {"entries": [{"phoneNumber": "+14155550101", "email": "a@example.com"}]},
        {"entries": [{"phoneNumber": "+14155550101"}], "reason": "x" * 201},
        {"entries": [{"fax": "+14155550101"}]},
        {"entries": [{"email": "a@example.com"}] * 1001},
    ):
        assert (await api.post(DNC, body)).code == 400
    assert (await api.get(DNC)).json()["entries"] == []


async def test_delete_removes_the_entry_then_404(api, api_b):
    entry = (await add(api, {"phoneNumber": "+14155550101"}))[0]["entry"]
    assert (await api_b.fetch(f"{DNC}/{entry['id']}", "DELETE")).code == 404
    assert (await api.fetch(f"{DNC}/{entry['id']}", "DELETE")).code == 204
    assert (await api.get(DNC)).json()["entries"] == []
    assert (await api.fetch(f"{DNC}/{entry['id']}", "DELETE")).code == 404
    assert (await api.fetch(f"{DNC}/{uuid.uuid4()}", "DELETE")).code == 404
    assert (await api.fetch(f"{DNC}/not-an-id", "DELETE")).code == 404


async def test_prospects_follow_the_list_at_once(api, new_list):
    listing = await new_list()
    done = await upload(
        api,
        listing["id"],
        {"firstName": "Ada", "phoneNumber": "+14155550101", "email": "ada@example.com"},
        {"firstName": "Bob", "phoneNumber": "+14155550102"},
    )
    ada_id, bob_id = (r["prospectId"] for r in done["results"])
    ada = await prospect(api, ada_id)
    assert ada["doNotCall"] is False and ada["doNotCallReason"] is None
    before = (await events_of(api, "prospect.updated,prospect.created", 2))[-1]

    email = (await add(api, {"email": "ADA@example.com"}))[0]["entry"]
    ada = await prospect(api, ada_id)
    assert (ada["doNotCall"], ada["doNotCallReason"]) == (True, "suppressed_email")
    assert ada["updatedAt"] >= before["occurredAt"]
    phone = (await add(api, {"phoneNumber": "4155550101"}))[0]["entry"]
    assert (await prospect(api, ada_id))["doNotCallReason"] == "suppressed_phone"
    bob = await prospect(api, bob_id)
    assert bob["doNotCall"] is False

    dialable = (await api.get("/v1/prospects?doNotCall=false")).json()["prospects"]
    assert [p["id"] for p in dialable] == [bob_id]
    blocked = (await api.get("/v1/prospects?doNotCall=true")).json()["prospects"]
    assert [p["id"] for p in blocked] == [ada_id]
    assert listing["id"] in (await prospect(api, ada_id))["listIds"]  # still a member

    assert (await api.fetch(f"{DNC}/{phone['id']}", "DELETE")).code == 204
    assert (await prospect(api, ada_id))["doNotCallReason"] == "suppressed_email"
    assert (await api.fetch(f"{DNC}/{email['id']}", "DELETE")).code == 204
    ada = await prospect(api, ada_id)
    assert (ada["doNotCall"], ada["doNotCallReason"]) == (False, None)

    # prospect.updated only for the prospect whose value changed: Ada four times, Bob never.
    updated = await events_of(api, "prospect.updated", 4)
    assert [e["data"]["id"] for e in updated] == [ada_id] * 4
    reasons = [e["data"]["doNotCallReason"] for e in updated]
    assert reasons == ["suppressed_email", "suppressed_phone", "suppressed_email", None]
    entries = await events_of(api, "do_not_call.added,do_not_call.removed", 4)
    assert [(e["type"], e["data"]) for e in entries] == [
        ("do_not_call.added", email),
        ("do_not_call.added", phone),
        ("do_not_call.removed", phone),
        ("do_not_call.removed", email),
    ]


async def test_patch_sets_the_own_flag_and_follows_the_list(api, new_list):
    """PATCH {"doNotCall"} sets and clears the prospect's own flag; a PATCH of the phone or
    email is checked against the list like an entry's addition; the response is the record
    GET answers, and a PATCH that changes nothing records nothing."""
    listing = await new_list()
    done = await upload(api, listing["id"], {"firstName": "Cy", "phoneNumber": "+14155550111"})
    cy_id = done["results"][0]["prospectId"]
    path = f"/v1/prospects/{cy_id}"

    response = await api.patch(path, {"doNotCall": True})
    assert response.code == 200, response
    changed = response.json()["prospect"]
    assert (changed["doNotCall"], changed["doNotCallReason"]) == (True, "prospect")
    assert changed == (await api.get(path)).json()["prospect"]
    assert [p["id"] for p in (await api.get("/v1/prospects?doNotCall=true")).json()["prospects"]]
    again = await api.patch(path, {"doNotCall": True})
    assert again.json()["prospect"]["updatedAt"] == changed["updatedAt"]

    await add(api, {"phoneNumber": "+14155550122"})
    moved = (await api.patch(path, {"doNotCall": False, "phoneNumber": "415 555 0122"})).json()
    assert (moved["prospect"]["doNotCall"], moved["prospect"]["doNotCallReason"]) == (
        True,
        "suppressed_phone",
    )
    cleared = (await api.patch(path, {"phoneNumber": None, "firstName": "Cy"})).json()
    assert (cleared["prospect"]["doNotCall"], cleared["prospect"]["doNotCallReason"]) == (
        False,
        None,
    )
    dialable = (await api.get("/v1/prospects?doNotCall=false")).json()["prospects"]
    assert cy_id in [p["id"] for p in dialable]

    updated = await events_of(api, "prospect.updated", 3)
    reasons = [e["data"]["doNotCallReason"] for e in updated if e["data"]["id"] == cy_id]
    assert reasons == ["prospect", "suppressed_phone", None]
    refused = await api.patch(path, {"doNotCall": "yes"})
    assert refused.code == 400 and refused.json()["errors"][0]["pointer"] == "#/doNotCall"


async def test_an_upload_skips_suppressed_contacts(api, new_list):
    first, second = await new_list("First"), await new_list("Second")
    done = await upload(
        api, first["id"], {"firstName": "Ada", "phoneNumber": "+14155550101", "email": "a@x.io"}
    )
    ada_id = done["results"][0]["prospectId"]
    await add(api, {"phoneNumber": "+14155550101"}, {"email": "Cy@X.io"})
    done = await upload(
        api,
        second["id"],
        {"firstName": "Ada again", "email": "A@X.IO"},  # matches Ada, who is doNotCall
        {"firstName": "New", "phoneNumber": "(415) 555-0101"},  # the number is on the list
        {"firstName": "Cy", "email": "cy@x.io"},  # the email is on the list, no prospect
        {"firstName": "Dee", "phoneNumber": "+14155550104"},
    )
    assert done["acceptedContacts"] == 1 and done["suppressedContacts"] == 3
    assert done["totalProspects"] == 1
    results = done["results"]
    assert results[:3] == [
        {"index": 0, "prospectId": ada_id, "outcome": "suppressed"},
        {"index": 1, "prospectId": ada_id, "outcome": "suppressed"},
        {"index": 2, "prospectId": None, "outcome": "suppressed"},
    ]
    assert results[3]["index"] == 3 and results[3]["outcome"] == "created"
    members = (await api.get(f"/v1/prospects?listId={second['id']}")).json()["prospects"]
    assert [p["id"] for p in members] == [results[3]["prospectId"]]
    assert (await api.get(f"/v1/lists/{second['id']}")).json()["list"]["prospectsCount"] == 1
    everyone = (await api.get("/v1/prospects")).json()["prospects"]
    assert len(everyone) == 2  # Ada and Dee: nobody was created for Cy
    ada = await prospect(api, ada_id)
    assert ada["firstName"] == "Ada" and ada["listIds"] == [first["id"]]

    only = await upload(api, second["id"], {"email": "cy@x.io"})
    assert only["acceptedContacts"] == 0 and only["suppressedContacts"] == 1
    assert only["totalProspects"] == 1


async def test_other_workspaces_lists_do_not_suppress(api, api_b, new_list):
    await add(api_b, {"phoneNumber": "+14155550101"})
    assert (await api.get(f"{DNC}?phoneNumber=%2B14155550101")).json()["entries"] == []
    listing = await new_list()
    done = await upload(api, listing["id"], {"phoneNumber": "+14155550101"})
    assert done["results"][0]["outcome"] == "created" and done["suppressedContacts"] == 0
