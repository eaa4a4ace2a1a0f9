"""POST /v1/lists/{listId}/contacts: validation, matching, integrity, concurrency."""

import asyncio
import datetime as dt
import os
import time
import urllib.parse
import uuid

import pytest

from schemas import Schemas
from store.errors import StoreUnavailable
from tests.helpers import Client, walk_pages


async def upload(api, list_id, contacts, expect=200):
    response = await api.post(f"/v1/lists/{list_id}/contacts", {"contacts": contacts})
    assert response.code == expect, response
    return response.json()


async def prospects(store, workspace_id):
    return [p for p in await store.documents("prospects") if p["workspaceId"] == workspace_id]


async def test_upload_result_and_list_metadata(api, new_list):
    created = await new_list()
    result = await upload(
        api,
        created["id"],
        [
            {"firstName": "Ada", "email": "ada@example.com"},
            {"phoneNumber": "+14155550101", "lastName": "Byron"},
        ],
    )
    results = result.pop("results")
    assert result == {
        "listId": created["id"],
        "acceptedContacts": 2,
        "suppressedContacts": 0,
        "totalProspects": 2,
    }
    assert [(r["index"], r["outcome"]) for r in results] == [(0, "created"), (1, "created")]
    result["results"] = results
    assert Schemas().errors("/schemas/records/contact-upload-result.json", result) == []
    after = (await api.get(f"/v1/lists/{created['id']}")).json()["list"]
    assert after["prospectsCount"] == 2
    assert after["updatedAt"] > created["updatedAt"] or after["updatedAt"] >= created["createdAt"]
    listed = (await api.get("/v1/lists")).json()["lists"][0]
    assert listed["prospectsCount"] == 2


async def test_updated_at_moves(api, store, new_list, clock):
    import datetime as dt

    created = await new_list()
    later = dt.datetime(2030, 1, 1, 12, 0, 0, 123000)
    clock.set(later)
    await upload(api, created["id"], [{"email": "a@example.com"}])
    after = (await api.get(f"/v1/lists/{created['id']}")).json()["list"]
    assert after["updatedAt"] == "2030-01-01T12:00:00.123Z"
    assert after["createdAt"] == created["createdAt"]


async def test_same_contacts_again_do_not_change_the_count(api, store, ws_a, new_list):
    created = await new_list()
    contacts = [{"email": f"p{i}@example.com", "firstName": f"P{i}"} for i in range(10)]
    contacts.append({"firstName": "Only", "lastName": "Names"})
    contacts.append({"linkedinUrl": "https://www.linkedin.com/in/only-linkedin/"})
    first = await upload(api, created["id"], contacts)
    second = await upload(api, created["id"], contacts)
    assert first["totalProspects"] == second["totalProspects"] == 12
    assert len(await prospects(store, ws_a.id)) == 12


async def test_email_is_matched_case_insensitively(api, store, ws_a, new_list):
    one, two = await new_list("one"), await new_list("two")
    await upload(api, one["id"], [{"email": "Jane.Doe@Example.com", "firstName": "Jane"}])
    result = await upload(api, two["id"], [{"email": " jane.doe@example.COM ", "lastName": "Doe"}])
    assert result["totalProspects"] == 1
    [prospect] = await prospects(store, ws_a.id)
    assert prospect["firstName"] == "Jane" and prospect["lastName"] == "Doe"
    assert prospect["email"] == "Jane.Doe@Example.com"  # first value kept, never overwritten
    assert sorted(prospect["listIds"]) == sorted([one["id"], two["id"]])


@pytest.mark.parametrize("phone", ["not a phone", "1" * 63, "12", "+1 (415) 555-01X9"])
async def test_an_unreadable_phone_number_is_400_with_a_pointer_and_writes_nothing(
    api, store, ws_a, new_list, phone
):
    """A phone number is stored in E.164 or not at all: one that cannot be read is refused,
    as the same value is by GET /v1/prospects?phoneNumber=."""
    created = await new_list()
    contacts = [
        {"email": "fine@example.com"},
        {"email": "also@example.com", "phoneNumber": "+14155550100"},
        {"firstName": "Bad", "phoneNumber": phone},
    ]
    response = await api.post(f"/v1/lists/{created['id']}/contacts", {"contacts": contacts})
    assert response.code == 400, response
    problem = response.json()
    assert [e["pointer"] for e in problem["errors"]] == ["#/contacts/2/phoneNumber"]
    assert "E.164" in problem["errors"][0]["detail"]
    assert [p for p in await store.documents("prospects") if p["workspaceId"] == ws_a.id] == []
    query = await api.get(f"/v1/prospects?phoneNumber={urllib.parse.quote(phone)}")
    assert query.code == 400 and query.json()["errors"][0]["pointer"] == "#/query/phoneNumber"


async def test_blank_phone_numbers_are_ignored_not_refused(api, new_list):
    created = await new_list()
    result = await upload(api, created["id"], [{"email": "blank@example.com", "phoneNumber": "  "}])
    assert result["acceptedContacts"] == 1


@pytest.mark.parametrize(
    "stored,uploaded",
    [
        ("+1 415 555 0101", "(415) 555-0101"),
        ("+14155550101", "415.555.0101"),
        ("+44 20 7946 0958", "+442079460958"),
    ],
)
async def test_phone_is_matched_in_e164(api, store, ws_a, new_list, stored, uploaded):
    created = await new_list()
    await upload(api, created["id"], [{"phoneNumber": stored, "firstName": "A"}])
    result = await upload(api, created["id"], [{"phoneNumber": uploaded, "jobTitle": "CTO"}])
    assert result["totalProspects"] == 1
    [prospect] = await prospects(store, ws_a.id)
    assert prospect["phoneNumber"].startswith("+") and " " not in prospect["phoneNumber"]
    assert prospect["jobTitle"] == "CTO"


async def test_blank_fields_are_filled_never_overwritten(api, store, ws_a, new_list):
    created = await new_list()
    await upload(api, created["id"], [{"email": "x@example.com", "firstName": "Xavier"}])
    await upload(
        api,
        created["id"],
        [
            {
                "email": "x@example.com",
                "firstName": "Other",
                "companyName": "Acme",
                "phoneNumber": "+14155550199",
            }
        ],
    )
    [prospect] = await prospects(store, ws_a.id)
    assert prospect["firstName"] == "Xavier"
    assert prospect["companyName"] == "Acme"
    assert prospect["phoneNumber"] == "+14155550199"
    # the filled phone now matches too
    result = await upload(api, created["id"], [{"phoneNumber": "4155550199"}])
    assert result["totalProspects"] == 1


async def test_ambiguous_match_creates_a_new_prospect(api, store, ws_a, new_list):
    created = await new_list()
    await upload(api, created["id"], [{"email": "a@example.com"}, {"phoneNumber": "+14155550123"}])
    result = await upload(
        api, created["id"], [{"email": "a@example.com", "phoneNumber": "+14155550123"}]
    )
    assert result["totalProspects"] == 3
    again = await upload(
        api, created["id"], [{"email": "a@example.com", "phoneNumber": "+14155550123"}]
    )
    assert again["totalProspects"] == 3
    assert len(await prospects(store, ws_a.id)) == 3


async def test_linkedin_conflict_creates_a_separate_prospect(api, store, ws_a, new_list):
    created = await new_list()
    await upload(
        api,
        created["id"],
        [{"email": "sam@example.com", "linkedinUrl": "https://linkedin.com/in/sam-one"}],
    )
    result = await upload(
        api,
        created["id"],
        [{"email": "SAM@example.com", "linkedinUrl": "linkedin.com/in/sam-two/"}],
    )
    assert result["totalProspects"] == 2
    # the same URL written differently is no conflict
    same = await upload(
        api,
        created["id"],
        [{"email": "sam@example.com", "linkedinUrl": "https://www.linkedin.com/in/Sam-One/?trk=x"}],
    )
    assert same["totalProspects"] == 2
    # re-uploading the conflicting contact reuses its own prospect
    again = await upload(
        api, created["id"], [{"email": "sam@example.com", "linkedinUrl": "linkedin.com/in/sam-two"}]
    )
    assert again["totalProspects"] == 2
    assert len(await prospects(store, ws_a.id)) == 2


async def test_linkedin_fills_a_prospect_without_one(api, store, ws_a, new_list):
    created = await new_list()
    await upload(api, created["id"], [{"email": "kim@example.com"}])
    result = await upload(
        api, created["id"], [{"email": "kim@example.com", "linkedinUrl": "linkedin.com/in/kim"}]
    )
    assert result["totalProspects"] == 1
    [prospect] = await prospects(store, ws_a.id)
    assert prospect["linkedinUrl"] == "linkedin.com/in/kim"


async def test_repeats_inside_one_request_resolve_to_one_prospect(api, store, ws_a, new_list):
    created = await new_list()
    result = await upload(
        api,
        created["id"],
        [
            {"email": "dup@example.com"},
            {"email": "DUP@example.com", "firstName": "Dee"},
            {"phoneNumber": "+14155550777", "email": "dup@example.com"},
            {"phoneNumber": "415-555-0777", "lastName": "Upp"},
            {"firstName": "Name", "lastName": "Only"},
            {"firstName": " name ", "lastName": "ONLY"},
        ],
    )
    assert result["acceptedContacts"] == 6
    assert result["totalProspects"] == 2
    merged = next(p for p in await prospects(store, ws_a.id) if p.get("email"))
    assert (merged["firstName"], merged["lastName"], merged["phoneNumber"]) == (
        "Dee",
        "Upp",
        "+14155550777",
    )


async def test_prospects_are_matched_within_the_workspace_only(
    api, api_b, store, ws_a, ws_b, new_list
):
    mine = await new_list()
    theirs = await api_b.post("/v1/lists", {"name": "b", "ownerUserId": ws_b.users[0]["id"]})
    await upload(api, mine["id"], [{"email": "shared@example.com", "firstName": "A"}])
    await upload(
        api_b, theirs.json()["list"]["id"], [{"email": "shared@example.com", "firstName": "B"}]
    )
    [a] = await prospects(store, ws_a.id)
    [b] = await prospects(store, ws_b.id)
    assert a["_id"] != b["_id"] and a["firstName"] == "A" and b["firstName"] == "B"


async def test_unknown_other_workspace_and_malformed_list_ids_are_404(api, api_b, new_list):
    created = await new_list()
    body = {"contacts": [{"email": "a@example.com"}]}
    responses = [
        await api_b.post(f"/v1/lists/{created['id']}/contacts", body),
        await api.post(f"/v1/lists/{uuid.uuid4()}/contacts", body),
        await api.post("/v1/lists/not-a-uuid/contacts", body),
    ]
    assert [r.code for r in responses] == [404, 404, 404]
    bodies = [{**r.json(), "requestId": ""} for r in responses]
    assert bodies[0] == bodies[1] == bodies[2]
    assert (await api.get(f"/v1/lists/{created['id']}")).json()["list"]["prospectsCount"] == 0


INVALID = {
    "no contacts key": ({}, "#/contacts"),
    "contacts not an array": ({"contacts": {"email": "a@b.c"}}, "#/contacts"),
    "empty array": ({"contacts": []}, "#/contacts"),
    "101 contacts": ({"contacts": [{"email": f"c{i}@x.io"} for i in range(101)]}, "#/contacts"),
    "contact not an object": ({"contacts": [{"email": "a@b.c"}, "x"]}, "#/contacts/1"),
    "empty contact": ({"contacts": [{"email": "a@b.c"}, {}]}, "#/contacts/1"),
    "only blank fields": (
        {"contacts": [{"email": "a@b.c"}, {"firstName": " ", "email": ""}]},
        "#/contacts/1",
    ),
    "unknown field": ({"contacts": [{"email": "a@b.c", "age": "3"}]}, "#/contacts/0/age"),
    "workspaceId in contact": (
        {"contacts": [{"email": "a@b.c", "workspaceId": "w"}]},
        "#/contacts/0/workspaceId",
    ),
    "non-string field": (
        {"contacts": [{"email": "a@b.c"}, {"phoneNumber": 4155550101}]},
        "#/contacts/1/phoneNumber",
    ),
    "too long": ({"contacts": [{"firstName": "x" * 201}]}, "#/contacts/0/firstName"),
    "extra top-level field": ({"contacts": [{"email": "a@b.c"}], "dryRun": True}, "#/dryRun"),
}


@pytest.mark.parametrize("body,pointer", INVALID.values(), ids=INVALID.keys())
async def test_invalid_uploads_are_400_and_change_nothing(
    api, store, ws_a, new_list, body, pointer
):
    created = await new_list()
    response = await api.post(f"/v1/lists/{created['id']}/contacts", body)
    assert response.code == 400
    problem = response.json()
    assert problem["code"] == "invalid_request"
    assert pointer in [e["pointer"] for e in problem["errors"]], problem
    after = (await api.get(f"/v1/lists/{created['id']}")).json()["list"]
    assert after == created
    assert await prospects(store, ws_a.id) == []


@pytest.mark.server_limit("update_batch")
async def test_exactly_100_contacts_are_accepted(api, new_list):
    created = await new_list()
    contacts = [{"email": f"c{i}@example.com"} for i in range(100)]
    assert (await upload(api, created["id"], contacts))["totalProspects"] == 100


async def test_concurrent_overlapping_uploads_create_no_duplicates(origin, store, ws_a, new_list):
    """Uploads at once, each on its own connection, over overlapping windows of 40 people:
    email plus phone, or the phone alone in another format (different dedupe keys, so only
    turn-taking keeps them one prospect). On the wire tier they interleave over real database
    connections; whatever the order: one prospect per person, each listed once, and an exact
    prospectsCount. 20 uploads; 6 on the wire tier, whose server reads a whole collection for
    every query but one on _id (tests/wire.py LIMITS "scan"), so 20 uploads taking turns there
    outlast an upload's 10 s wait for its turn."""
    uploads = 6 if os.environ.get("WSAPI_TEST_TIER") == "wire" else 20
    created = await new_list()
    client = Client(origin, ws_a.key, connections=uploads)

    def contact(person: int, variant: int) -> dict:
        if variant % 2:
            return {"phoneNumber": f"(415) 555-{person:04d}", "firstName": f"P{person}"}
        return {"email": f"P{person}@Example.COM", "phoneNumber": f"+1415555{person:04d}"}

    batches = [[contact(person, k) for person in range(5 * k, 5 * k + 40)] for k in range(uploads)]
    results = await asyncio.gather(*[upload(client, created["id"], b) for b in batches])
    assert all(r["acceptedContacts"] == 40 for r in results)
    people = 5 * (uploads - 1) + 40
    assert max(r["totalProspects"] for r in results) == people
    found = await prospects(store, ws_a.id)
    phones = [p["phoneE164"] for p in found]
    assert len(phones) == len(set(phones)) == people
    emails = [p["emailNorm"] for p in found if p.get("emailNorm")]
    assert len(emails) == len(set(emails)) >= 5 * (uploads - 2) + 40  # all in an even window
    assert all(p["listIds"] == [created["id"]] for p in found)
    after = (await client.get(f"/v1/lists/{created['id']}")).json()["list"]
    assert after["prospectsCount"] == people
    listed, total = await walk_pages(
        client, f"/v1/prospects?listId={created['id']}&pageSize=100", "prospects"
    )
    assert total == len({p["id"] for p in listed}) == people


@pytest.mark.sqlite
async def test_an_upload_is_one_transaction_whatever_its_size(api, store, new_list, monkeypatch):
    writes = []
    original = store.engine.write

    async def write(fn, *args, **kwargs):
        writes.append(fn.__name__)
        return await original(fn, *args, **kwargs)

    monkeypatch.setattr(store.engine, "write", write)
    created = await new_list()
    for size in (1, 10, 100):
        writes.clear()
        contacts = [
            {"email": f"s{size}-{i}@example.com", "phoneNumber": f"+1415555{i:04d}"}
            for i in range(size)
        ]
        await upload(api, created["id"], contacts)
        assert writes.count("upload") == 1


@pytest.mark.mongodb
async def test_round_trips_do_not_grow_with_contact_count(api, store, new_list, monkeypatch):
    calls = []
    collection = store.prospects.col
    for name in ("find", "find_one", "bulk_write", "update_one", "insert_one", "insert_many"):
        original = getattr(collection, name)

        def counting(*args, _original=original, _name=name, **kwargs):
            calls.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(collection, name, counting)
    created = await new_list()
    counts = []
    for size in (1, 10, 100):
        calls.clear()
        contacts = [
            {"email": f"s{size}-{i}@example.com", "phoneNumber": f"+1415555{i:04d}"}
            for i in range(size)
        ]
        await upload(api, created["id"], contacts)
        counts.append(len(calls))
    assert 2 <= counts[0] == counts[1] == counts[2] <= 3


@pytest.mark.sqlite
async def test_the_count_moves_in_the_upload_transaction(api, store, ws_a, new_list):
    created = await new_list()
    contacts = [{"email": f"i{i}@example.com"} for i in range(5)]
    listing = await store.lists.get(ws_a.id, created["id"])
    assert (await store.prospects.add_to_list(ws_a.id, listing, contacts)).members == 5
    assert (await store.lists.get(ws_a.id, created["id"]))["prospectsCount"] == 5
    retry = await upload(api, created["id"], contacts)
    assert retry["totalProspects"] == 5


@pytest.mark.mongodb
async def test_count_repairs_itself_after_an_interrupted_upload(
    api, store, ws_a, new_list, monkeypatch
):
    """Memberships written, but the upload died before it set the list's count: the next read
    of the list counts again, without a retry (every step: tests/handlers/test_safe_writes.py)."""
    import store.mongo.prospects as mongo_prospects

    created = await new_list()
    contacts = [{"email": f"i{i}@example.com"} for i in range(5)]

    async def died(*args, **kwargs):
        raise StoreUnavailable("the process died here")

    monkeypatch.setattr(mongo_prospects, "set_counted", died)
    listing = await store.lists.get(ws_a.id, created["id"])
    with pytest.raises(StoreUnavailable):
        await store.prospects.add_to_list(ws_a.id, listing, contacts)
    monkeypatch.undo()
    assert (await api.get(f"/v1/lists/{created['id']}")).json()["list"]["prospectsCount"] == 5
    listed = (await api.get("/v1/lists")).json()["lists"]
    assert [x["prospectsCount"] for x in listed if x["id"] == created["id"]] == [5]
    retry = await upload(api, created["id"], contacts)
    assert retry["totalProspects"] == 5


@pytest.mark.mongodb
@pytest.mark.parametrize("horizon", ["after the repair", "before the repair"])
async def test_an_export_repairs_the_count_too(
    api, store, ws_a, new_list, monkeypatch, horizon, clock
):
    """The lists export counts again like the reads; a list the repair moves past the export's
    horizon is left to the sync that follows it (its updatedAt is then the repair's)."""
    import store.mongo.prospects as mongo_prospects

    created = await new_list()

    async def died(*args, **kwargs):
        raise StoreUnavailable("the process died here")

    monkeypatch.setattr(mongo_prospects, "set_counted", died)
    listing = await store.lists.get(ws_a.id, created["id"])
    with pytest.raises(StoreUnavailable):
        await store.prospects.add_to_list(ws_a.id, listing, [{"email": "x@example.com"}])
    monkeypatch.undo()
    settled = clock.now() + dt.timedelta(hours=1 if horizon == "after the repair" else 0)
    exported = [
        record
        async for batch in store.lists.export(ws_a.id, settled)
        for record in batch
        if record["id"] == created["id"]
    ]
    if horizon == "after the repair":
        assert [record["prospectsCount"] for record in exported] == [1]
    else:
        assert exported == []
    assert (await store.lists.get(ws_a.id, created["id"]))["prospectsCount"] == 1


async def test_matches_split_by_a_linkedin_conflict_are_not_safe(api, store, ws_a, new_list):
    created = await new_list()
    await upload(
        api,
        created["id"],
        [
            {"email": "amy@example.com", "linkedinUrl": "linkedin.com/in/amy-one"},
            {"phoneNumber": "+14155550142", "firstName": "Phone only"},
        ],
    )
    # email matches the first (whose LinkedIn conflicts), phone the second: no safe match
    contact = {
        "email": "amy@example.com",
        "phoneNumber": "+14155550142",
        "linkedinUrl": "linkedin.com/in/amy-two",
    }
    result = await upload(api, created["id"], [contact])
    assert result["totalProspects"] == 3
    found = await prospects(store, ws_a.id)
    phone_only = next(p for p in found if p.get("firstName") == "Phone only")
    assert "email" not in phone_only  # nothing was copied onto the wrong prospect
    # the same contact again lands on the prospect it created
    assert (await upload(api, created["id"], [contact]))["totalProspects"] == 3


async def test_ambiguous_contacts_with_different_linkedin_urls_stay_apart(
    api, store, ws_a, new_list
):
    created = await new_list()
    await upload(api, created["id"], [{"email": "bo@example.com", "linkedinUrl": "l.com/in/1"}])
    await upload(api, created["id"], [{"email": "bo@example.com", "linkedinUrl": "l.com/in/2"}])
    await upload(api, created["id"], [{"email": "bo@example.com", "linkedinUrl": "l.com/in/3"}])
    result = await upload(
        api, created["id"], [{"email": "bo@example.com", "linkedinUrl": "l.com/in/4"}]
    )
    assert result["totalProspects"] == 4
    linkedins = sorted(p["linkedinNorm"] for p in await prospects(store, ws_a.id))
    assert linkedins == ["l.com/in/1", "l.com/in/2", "l.com/in/3", "l.com/in/4"]
    again = await upload(
        api, created["id"], [{"email": "bo@example.com", "linkedinUrl": "l.com/in/3"}]
    )
    assert again["totalProspects"] == 4


async def test_concurrent_uploads_sharing_a_phone_under_different_keys_make_one_prospect(
    api, store, ws_a, new_list
):
    # Without turn-taking both uploads read an empty workspace and create "p:..." and "e:..."
    # prospects with the same phone number; on the wire tier they interleave for real.
    created = await new_list()
    pairs = []
    for i in range(5):
        phone = f"+1415555{i:04d}"
        pairs += [
            upload(api, created["id"], [{"phoneNumber": phone}]),
            upload(api, created["id"], [{"email": f"pair{i}@example.com", "phoneNumber": phone}]),
        ]
    await asyncio.gather(*pairs)
    found = await prospects(store, ws_a.id)
    phones = [p["phoneE164"] for p in found]
    assert len(phones) == len(set(phones)) == 5
    assert all(p.get("email") for p in found)  # the email was filled into the one prospect
    after = (await api.get(f"/v1/lists/{created['id']}")).json()["list"]
    assert after["prospectsCount"] == 5


@pytest.mark.sqlite
async def test_an_upload_that_waits_too_long_for_the_writer_is_503(
    api, store, ws_a, new_list, monkeypatch
):
    import store.sqlite.prospects as sqlite_prospects

    created = await new_list()
    monkeypatch.setattr(sqlite_prospects, "UPLOAD_TIMEOUT", 0.05)
    original, blockers = store.engine.write, []

    async def write(fn, *args, **kwargs):
        if fn is sqlite_prospects.upload:  # another writer holds the writer past the deadline
            blockers.append(asyncio.ensure_future(original(lambda conn: time.sleep(0.3))))
            await asyncio.sleep(0.01)
        return await original(fn, *args, **kwargs)

    monkeypatch.setattr(store.engine, "write", write)
    response = await api.post(
        f"/v1/lists/{created['id']}/contacts", {"contacts": [{"email": "late@example.com"}]}
    )
    await asyncio.gather(*blockers)
    assert blockers
    assert response.code == 503 and response.headers["Retry-After"]
    assert await prospects(store, ws_a.id) == []


@pytest.mark.mongodb
async def test_a_contact_upload_held_up_too_long_is_503(api, store, ws_a, new_list, monkeypatch):
    created = await new_list()
    await store.prospects.leases.try_acquire(ws_a.id, "contact-upload", ttl=60)
    original = store.prospects.leases.held
    monkeypatch.setattr(
        store.prospects.leases,
        "held",
        lambda *args, **kwargs: original(*args, **{**kwargs, "wait": 0.05}),
    )
    response = await api.post(
        f"/v1/lists/{created['id']}/contacts", {"contacts": [{"email": "late@example.com"}]}
    )
    assert response.code == 503 and response.headers["Retry-After"]
    assert await prospects(store, ws_a.id) == []


async def test_a_linkedin_twin_is_not_reused_when_another_match_has_no_linkedin(
    api, store, ws_a, new_list
):
    created = await new_list()
    await upload(
        api,
        created["id"],
        [
            {"email": "cy@example.com", "linkedinUrl": "linkedin.com/in/cy"},
            {"phoneNumber": "+14155550177", "firstName": "Phone only"},
        ],
    )
    # email matches the LinkedIn twin, phone matches a prospect without LinkedIn: ambiguous
    result = await upload(
        api,
        created["id"],
        [
            {
                "email": "cy@example.com",
                "phoneNumber": "+14155550177",
                "linkedinUrl": "linkedin.com/in/cy",
            }
        ],
    )
    assert result["totalProspects"] == 3
    twin = [
        p
        for p in await prospects(store, ws_a.id)
        if p.get("linkedinNorm") == "linkedin.com/in/cy" and "phoneE164" not in p
    ]
    assert twin, "the phone of another prospect must not be copied onto the LinkedIn twin"


async def test_outcomes_say_which_prospect_each_contact_became(api, store, ws_a, new_list):
    created = await new_list()
    contacts = [
        {"email": "o1@example.com"},
        {"phoneNumber": "+14155550190"},
        {"email": "O1@example.com", "jobTitle": "CTO"},
        {"firstName": "Only a name"},
    ]
    first = (await upload(api, created["id"], contacts))["results"]
    assert [(r["index"], r["outcome"]) for r in first] == [
        (0, "created"),
        (1, "created"),
        (2, "reused"),
        (3, "created"),
    ]
    assert first[0]["prospectId"] == first[2]["prospectId"]  # a repeat within the request
    assert all("reason" not in r for r in first)
    ids = {p["_id"] for p in await prospects(store, ws_a.id)}
    assert {r["prospectId"] for r in first} == ids
    again = (await upload(api, (await new_list("Again"))["id"], contacts))["results"]
    assert [r["outcome"] for r in again] == ["reused"] * 4
    assert [r["prospectId"] for r in again] == [r["prospectId"] for r in first]


async def test_outcomes_give_the_reason_for_a_new_prospect_despite_matches(api, new_list):
    created = await new_list()
    seeded = (
        await upload(
            api,
            created["id"],
            [
                {"email": "r1@example.com", "linkedinUrl": "linkedin.com/in/r-one"},
                {"phoneNumber": "+14155550191"},
            ],
        )
    )["results"]
    result = (
        await upload(
            api,
            created["id"],
            [
                {"email": "r1@example.com", "linkedinUrl": "linkedin.com/in/r-two"},  # conflict
                {"email": "r1@example.com", "phoneNumber": "+14155550191"},  # two prospects match
                # The prospects split off just now stand aside: the one it matched before.
                {"email": "r1@example.com"},
            ],
        )
    )["results"]
    assert [(r["outcome"], r.get("reason")) for r in result] == [
        ("created", "linkedin_conflict"),
        ("created", "ambiguous_match"),
        ("reused", None),
    ]
    assert result[2]["prospectId"] == seeded[0]["prospectId"]
    assert not {r["prospectId"] for r in result[:2]} & {r["prospectId"] for r in seeded}


@pytest.mark.mongodb
async def test_the_first_bulk_write_sends_fills_only_to_prospects_that_existed(
    api, store, new_list, monkeypatch
):
    """100 new contacts: 100 upserts and no fill updates (a prospect just upserted has no
    blanks); fills go only to prospects that existed before, one per filled field."""
    created = await new_list()
    await upload(api, created["id"], [{"email": "old1@example.com"}, {"email": "old2@example.com"}])
    sizes = []
    original = store.prospects.col.bulk_write

    def counting(requests, *args, **kwargs):
        sizes.append(len(requests))
        return original(requests, *args, **kwargs)

    monkeypatch.setattr(store.prospects.col, "bulk_write", counting)
    contacts = [
        {"email": f"new{i}@example.com", "firstName": f"N{i}", "jobTitle": "CTO"} for i in range(98)
    ]
    contacts += [
        {"email": "old1@example.com", "firstName": "Old", "jobTitle": "CEO"},
        {"email": "old2@example.com", "lastName": "Two"},
    ]
    await upload(api, created["id"], contacts)
    assert sizes[0] == 98 + 2 + 1  # upserts, then old1's two fills and old2's one
