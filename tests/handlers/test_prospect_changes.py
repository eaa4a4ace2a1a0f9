"""GET, PATCH and DELETE /v1/prospects/{id} over real HTTP: reading one prospect, correcting and
clearing its fields with the upload's normalisation and matching kept in step, and deleting it
(its lists, timeline, calls, events and the tombstone a second DELETE finds)."""

import datetime as dt
import json
import uuid

import pytest

import store.mongo.activities as store_mongo_activities
from tests.helpers import follow_events

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)


def iso(value: dt.datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


@pytest.fixture
def settled(app):
    """Events and sync pages without the settle delay (the test moves the clock instead)."""
    app.settings["config"] = app.settings["config"].replace(sync_settle_seconds=0)


async def upload(api, list_id: str, *contacts: dict) -> list[str]:
    response = await api.post(f"/v1/lists/{list_id}/contacts", {"contacts": list(contacts)})
    assert response.code == 200, response
    return [r["prospectId"] for r in response.json()["results"]]


async def events_of(api, kind: str) -> list[dict]:
    events, _ = await follow_events(api, f"/v1/events?type={kind}")
    return events


async def test_get_one_prospect_and_404_for_other_workspaces_and_unknown(
    api, api_b, new_list, ws_b
):
    (ada,) = await upload(api, (await new_list())["id"], {"email": "ada@example.com"})
    response = await api.get(f"/v1/prospects/{ada}")
    assert response.code == 200, response
    prospect = response.json()["prospect"]
    assert prospect["id"] == ada and prospect["email"] == "ada@example.com"
    assert set(prospect) == {
        "id", "firstName", "lastName", "phoneNumber", "email", "companyName", "companyDomain",
        "jobTitle", "linkedinUrl", "ownerUserId", "listIds", "doNotCall", "doNotCallReason",
            "createdAt", "updatedAt",
    }  # fmt: skip
    other = await api_b.get(f"/v1/prospects/{ada}")
    unknown = await api.get(f"/v1/prospects/{uuid.uuid4()}")
    assert other.code == unknown.code == 404
    assert other.json()["detail"] == unknown.json()["detail"]
    assert (await api.get("/v1/prospects/not-a-uuid")).code == 404


async def test_patch_sets_and_clears_fields_and_matching_follows(
    api, new_list, clock, settled, ws_a
):
    listing = await new_list()
    (ada,) = await upload(
        api,
        listing["id"],
        {"email": "ada@example.com", "phoneNumber": "+12125550101", "jobTitle": "CTO"},
    )
    before = (await api.get(f"/v1/prospects/{ada}")).json()["prospect"]
    clock.advance(1)
    change = {
        "email": "  Ada@New.example ",
        "phoneNumber": "(415) 555-0123",
        "jobTitle": None,
        "firstName": "Ada",
        "ownerUserId": ws_a.users[1]["id"].upper(),
    }
    response = await api.patch(f"/v1/prospects/{ada}", change)
    assert response.code == 200, response
    after = response.json()["prospect"]
    assert after["email"] == "Ada@New.example"
    assert after["phoneNumber"] == "+14155550123"
    assert after["jobTitle"] is None and after["firstName"] == "Ada"
    assert after["ownerUserId"] == ws_a.users[1]["id"]
    assert after["updatedAt"] > before["updatedAt"]
    assert after["createdAt"] == before["createdAt"] and after["listIds"] == [listing["id"]]
    assert (await api.get(f"/v1/prospects/{ada}")).json()["prospect"] == after
    # Filters and matching compare the new identifiers, not the old ones.
    found = (await api.get("/v1/prospects?email=ada@new.example")).json()["prospects"]
    assert [p["id"] for p in found] == [ada]
    assert (await api.get("/v1/prospects?email=ada@example.com")).json()["prospects"] == []
    by_phone = (await api.get("/v1/prospects?phoneNumber=%2B14155550123")).json()["prospects"]
    assert [p["id"] for p in by_phone] == [ada]
    (reused,) = await upload(api, listing["id"], {"email": "ADA@new.example"})
    (fresh,) = await upload(api, listing["id"], {"email": "ada@example.com"})
    assert reused == ada and fresh != ada
    updated = [e for e in await events_of(api, "prospect.updated") if e["data"]["id"] == ada]
    assert updated and updated[-1]["data"] == after
    # Clearing the owner; a PATCH that changes nothing writes nothing.
    cleared = (await api.patch(f"/v1/prospects/{ada}", {"ownerUserId": None})).json()
    assert cleared["prospect"]["ownerUserId"] is None
    count = len(await events_of(api, "prospect.updated"))
    clock.advance(1)
    same = await api.patch(f"/v1/prospects/{ada}", {"firstName": " Ada ", "jobTitle": None})
    assert same.code == 200 and same.json()["prospect"] == cleared["prospect"]
    assert len(await events_of(api, "prospect.updated")) == count


@pytest.mark.parametrize(
    "body,status,pointer",
    [
        ({}, 400, "#"),
        ({"nickname": "Ada"}, 400, "#/nickname"),
        ({"email": ""}, 400, "#/email"),
        ({"email": "   "}, 400, "#/email"),
        ({"jobTitle": 5}, 400, "#/jobTitle"),
        ({"phoneNumber": "not a phone"}, 400, "#/phoneNumber"),
        ({"ownerUserId": "not-a-uuid"}, 400, "#/ownerUserId"),
        ({"ownerUserId": str(uuid.uuid4())}, 422, "#/ownerUserId"),
        ({"ownerUserId": "{deleted}"}, 422, "#/ownerUserId"),
        ({"email": None, "firstName": None}, 400, "#"),
    ],
)
async def test_a_bad_patch_is_refused_and_writes_nothing(
    api, new_list, ws_a, body, status, pointer
):
    (ada,) = await upload(api, (await new_list())["id"], {"email": "a@example.com"})
    (await api.patch(f"/v1/prospects/{ada}", {"firstName": "Ada"}))
    before = (await api.get(f"/v1/prospects/{ada}")).json()["prospect"]
    if body.get("ownerUserId") == "{deleted}":
        body = {"ownerUserId": ws_a.deleted_user["id"]}
    response = await api.patch(f"/v1/prospects/{ada}", body)
    assert response.code == status, response
    problem = response.json()
    if status == 422:
        assert problem["code"] == "invalid_reference"
    assert pointer in [e.get("pointer") for e in problem.get("errors", [])], problem
    assert (await api.get(f"/v1/prospects/{ada}")).json()["prospect"] == before


async def test_patch_of_another_workspace_or_a_deleted_prospect_is_404(api, api_b, new_list):
    (ada,) = await upload(api, (await new_list())["id"], {"email": "a@example.com"})
    assert (await api_b.patch(f"/v1/prospects/{ada}", {"jobTitle": "x"})).code == 404
    assert (await api.patch(f"/v1/prospects/{uuid.uuid4()}", {"jobTitle": "x"})).code == 404
    assert (await api.fetch(f"/v1/prospects/{ada}", "DELETE")).code == 204
    assert (await api.patch(f"/v1/prospects/{ada}", {"jobTitle": "x"})).code == 404


async def test_identifiers_of_another_prospect_are_409_and_write_nothing(api, new_list):
    listing = await new_list()
    ada, bob = await upload(api, listing["id"], {"email": "ada@example.com"}, {"email": "b@x.io"})
    response = await api.patch(f"/v1/prospects/{bob}", {"email": "ADA@example.com"})
    assert response.code == 409, response
    assert response.json()["code"] == "prospect_exists"
    assert [e["pointer"] for e in response.json()["errors"]] == ["#/email"]
    assert (await api.get(f"/v1/prospects/{bob}")).json()["prospect"]["email"] == "b@x.io"
    # Once that prospect is deleted, its identifiers are free.
    assert (await api.fetch(f"/v1/prospects/{ada}", "DELETE")).code == 204
    moved = await api.patch(f"/v1/prospects/{bob}", {"email": "ada@example.com"})
    assert moved.code == 200, moved


async def test_delete_leaves_lists_and_timeline_keeps_calls_and_records_events(
    api, dialer, new_list, clock, settled, ws_a
):
    first, second = await new_list("First"), await new_list("Second")
    ada, bob = await upload(
        api, first["id"], {"email": "ada@example.com", "firstName": "Ada"}, {"email": "b@x.io"}
    )
    await upload(api, second["id"], {"email": "ada@example.com"})
    started = NOW - dt.timedelta(minutes=30)
    call = {
        "userId": ws_a.users[0]["id"],
        "prospectId": ada,
        "listId": first["id"],
        "direction": "outbound",
        "disposition": "connected",
        "fromNumber": "+12125550142",
        "toNumber": "+14155550111",
        "startedAt": iso(started),
        "answeredAt": iso(started + dt.timedelta(seconds=12)),
        "endedAt": iso(started + dt.timedelta(seconds=252)),
    }
    call_id = (await dialer.post("/v1/calls", call)).json()["call"]["id"]
    timeline = await api.get(f"/v1/prospect-activities?prospectId={ada}")
    assert timeline.code == 200 and len(timeline.json()["activities"]) >= 3
    lists_before = {x["id"]: x for x in (await api.get("/v1/lists")).json()["lists"]}
    total = (await api.get("/v1/prospects")).json()["total"]
    clock.advance(1)

    response = await api.fetch(f"/v1/prospects/{ada}", "DELETE")
    assert response.code == 204 and response.body == b""
    assert (await api.get(f"/v1/prospects/{ada}")).code == 404
    assert (await api.get(f"/v1/prospect-activities?prospectId={ada}")).code == 404
    assert (await api.get("/v1/prospects")).json()["total"] == total - 1
    for listing in (first, second):
        after = (await api.get(f"/v1/lists/{listing['id']}")).json()["list"]
        before = lists_before[listing["id"]]
        assert after["prospectsCount"] == before["prospectsCount"] - 1
        assert after["updatedAt"] > before["updatedAt"]
        members = (await api.get(f"/v1/prospects?listId={listing['id']}")).json()["prospects"]
        assert ada not in [p["id"] for p in members]
    exported = (await api.get("/v1/exports/activities")).body.decode().splitlines()
    assert exported and not [line for line in exported if json.loads(line)["prospectId"] == ada]
    # Its calls stay, with its id.
    kept = (await api.get(f"/v1/calls/{call_id}")).json()["call"]
    assert kept["prospectId"] == ada
    by_prospect = (await api.get(f"/v1/calls?prospectId={ada}")).json()["calls"]
    assert [c["id"] for c in by_prospect] == [call_id]
    # The events: prospect.deleted with {id, deletedAt}, and list.updated of both lists.
    deleted = await events_of(api, "prospect.deleted")
    assert [e["data"]["id"] for e in deleted] == [ada]
    assert set(deleted[0]["data"]) == {"id", "deletedAt"}
    listed = await events_of(api, "list.updated")
    last = {e["data"]["id"]: e["data"] for e in listed}
    for listing in (first, second):
        assert last[listing["id"]]["prospectsCount"] == (
            lists_before[listing["id"]]["prospectsCount"] - 1
        )
    # Again: 204 while the tombstone is kept, nothing recorded twice; never existed: 404.
    assert (await api.fetch(f"/v1/prospects/{ada}", "DELETE")).code == 204
    assert len(await events_of(api, "prospect.deleted")) == 1
    assert (await api.fetch(f"/v1/prospects/{uuid.uuid4()}", "DELETE")).code == 404
    assert (await api.get(f"/v1/prospects/{bob}")).code == 200
    # No event or export shows the deleted prospect's contact fields any more as its state.
    (again,) = await upload(api, first["id"], {"email": "ada@example.com"})
    assert again != ada


def unanswered_call(ws_a, prospect_id: str) -> dict:
    """The POST /v1/calls body of a call to the prospect that was not answered."""
    started = NOW - dt.timedelta(minutes=30)
    return {
        "userId": ws_a.users[0]["id"],
        "prospectId": prospect_id,
        "direction": "outbound",
        "disposition": "no_answer",
        "fromNumber": "+12125550142",
        "toNumber": "+14155550111",
        "startedAt": iso(started),
        "endedAt": iso(started + dt.timedelta(seconds=30)),
    }


async def test_a_change_to_a_deleted_prospects_call_leaves_its_timeline_gone(
    api, dialer, new_list, clock, settled, ws_a
):
    """The call's disposition changes after its prospect was deleted: the call changes (and
    `call.updated` is recorded), but its timeline entry is not written again: the timeline
    stays gone from every read, and no `activity.created` follows the `prospect.deleted`."""
    (ada,) = await upload(api, (await new_list("Calls"))["id"], {"email": "ada@example.com"})
    call = unanswered_call(ws_a, ada)
    call_id = (await dialer.post("/v1/calls", call)).json()["call"]["id"]
    clock.advance(1)
    assert (await api.fetch(f"/v1/prospects/{ada}", "DELETE")).code == 204
    clock.advance(1)
    changed = await dialer.patch(f"/v1/calls/{call_id}", {"disposition": "voicemail"})
    assert changed.code == 200, changed
    assert changed.json()["call"]["disposition"] == "voicemail"
    assert (await api.get(f"/v1/prospect-activities?prospectId={ada}")).code == 404
    exported = (await api.get("/v1/exports/activities")).body.decode().splitlines()
    assert not [line for line in exported if json.loads(line)["prospectId"] == ada]
    clock.advance(1)
    events, _ = await follow_events(api, "/v1/events")
    kinds = [(e["type"], e["data"]["id"]) for e in events]
    after = kinds[kinds.index(("prospect.deleted", ada)) + 1 :]
    assert after == [("call.updated", call_id)], after


async def test_delete_of_another_workspaces_prospect_is_404_and_keeps_it(api, api_b, new_list):
    (ada,) = await upload(api, (await new_list())["id"], {"email": "a@example.com"})
    assert (await api_b.fetch(f"/v1/prospects/{ada}", "DELETE")).code == 404
    assert (await api.get(f"/v1/prospects/{ada}")).code == 200


async def no_trace_after_the_delete(api, prospect_id: str, store) -> list[tuple[str, str]]:
    """No activity of the prospect is stored or exported; the events after its
    `prospect.deleted`, as (type, id)."""
    assert await store.db["activities"].count_documents({"prospectId": prospect_id}) == 0
    exported = (await api.get("/v1/exports/activities")).body.decode().splitlines()
    assert not [line for line in exported if json.loads(line)["prospectId"] == prospect_id]
    events, _ = await follow_events(api, "/v1/events")
    kinds = [(e["type"], e["data"]["id"]) for e in events]
    return kinds[kinds.index(("prospect.deleted", prospect_id)) + 1 :]


@pytest.mark.mongodb  # SQLite: the call, its entry and the delete are each one transaction
async def test_a_call_whose_prospect_is_deleted_as_it_lands_leaves_no_timeline(
    api, dialer, new_list, clock, settled, ws_a, store, monkeypatch
):
    """MongoDB writes a call, then its timeline entry: a prospect deleted between the two
    (after the call's references were checked) gets no entry back."""
    (ada,) = await upload(api, (await new_list("Calls"))["id"], {"email": "ada@example.com"})
    recorder = store.calls.recorder
    insert = recorder.insert

    async def insert_then_delete(docs, pending):
        taken = await insert(docs, pending)
        assert await store.prospects.delete(ws_a.id, ada)
        return taken

    monkeypatch.setattr(recorder, "insert", insert_then_delete)
    call = unanswered_call(ws_a, ada)
    response = await dialer.post("/v1/calls", call)
    assert response.code == 201, response
    monkeypatch.undo()
    clock.advance(1)
    after = await no_trace_after_the_delete(api, ada, store)
    assert ("call.created", response.json()["call"]["id"]) in after
    assert not [kind for kind, _ in after if kind.startswith("activity.")], after


@pytest.mark.mongodb
async def test_an_activity_logged_as_its_prospect_is_deleted_leaves_no_timeline(
    api, dialer, new_list, clock, settled, ws_a, store, monkeypatch
):
    """MongoDB checks the prospect, then writes the activity: a prospect deleted between the
    two gets no activity back (the log answers 201: it landed before the delete took it)."""
    (ada,) = await upload(api, (await new_list("Notes"))["id"], {"email": "ada@example.com"})
    written = store_mongo_activities.bulk

    async def delete_then_write(col, writes):
        assert await store.prospects.delete(ws_a.id, ada)
        return await written(col, writes)

    monkeypatch.setattr(store_mongo_activities, "bulk", delete_then_write)
    body = {"prospectId": ada, "type": "note", "occurredAt": iso(NOW), "details": {"text": "Hi"}}
    response = await dialer.post("/v1/prospect-activities", body)
    assert response.code == 201, response
    monkeypatch.undo()
    clock.advance(1)
    after = await no_trace_after_the_delete(api, ada, store)
    assert not [kind for kind, _ in after if kind.startswith("activity.")], after
