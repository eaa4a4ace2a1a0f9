"""GET /v1/events: what each write records, the envelope and cursors, ordering, filters,
settling, retention (410 events_expired) and the store's retention delete; on MongoDB, that the
feed waits for a change whose events are still being written, and that the sweep records the
events a dead writer left unwritten."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import uuid
from urllib.parse import quote

import pytest

from demo.data import Scale
from demo.seeding import seed
from handlers import jsonio
from schemas import Schemas
from server.config import load_config
from store.paging import Position
from tests.helpers import Client, add_call, follow_events, test_environ

SETTLE = 0.5


@pytest.fixture
def config():
    return load_config(
        environ=test_environ(
            shared=True,
            WSAPI_SYNC_SETTLE_SECONDS=str(SETTLE),
            WSAPI_RATE_LIMIT_PER_MINUTE="1000000",
        )
    )


async def settled_feed(api, clock, path="/v1/events", **kwargs) -> tuple[list[dict], dict]:
    """Every event of the feed once the writes so far have settled (the clock moved past the
    settle period); the last body."""
    clock.advance(SETTLE + 0.2)
    return await follow_events(api, path, **kwargs)


async def test_every_write_records_its_events_with_the_records_as_the_api_returns_them(
    api, store, ws_a, new_list, clock
):
    listing = await new_list("Events")
    upload = await api.post(
        f"/v1/lists/{listing['id']}/contacts",
        {"contacts": [{"email": "ada@example.com"}, {"email": "bob@example.com"}]},
    )
    assert upload.code == 200
    call_id = await add_call(store, ws_a, None)
    await store.calls.change(ws_a.id, call_id, {"notes": "Call back Tuesday"})
    events, body = await settled_feed(api, clock)
    assert set(body) == {"events", "pageSize", "hasMore", "nextCursor"}
    assert body["pageSize"] == 100 and body["hasMore"] is False
    assert isinstance(body["nextCursor"], str)
    by_type: dict[str, list[dict]] = {}
    for event in events:
        by_type.setdefault(event["type"], []).append(event)
        assert Schemas().errors("/schemas/records/event.json", event) == [], event
    assert [e["data"]["id"] for e in by_type["list.created"]] == [listing["id"]]
    prospects = {p["id"]: p for p in (await api.get("/v1/prospects")).json()["prospects"]}
    assert {e["data"]["id"] for e in by_type["prospect.created"]} == set(prospects)
    assert "prospect.updated" not in by_type  # created and listed in one upload: one event
    for event in by_type["prospect.created"]:
        assert event["data"] == prospects[event["data"]["id"]]
        assert event["data"]["listIds"] == [listing["id"]]
    current = (await api.get(f"/v1/lists/{listing['id']}")).json()["list"]
    assert by_type["list.updated"][-1]["data"] == current and current["prospectsCount"] == 2
    calls = (await api.get("/v1/calls")).json()["calls"]
    assert [e["data"]["id"] for e in by_type["call.created"]] == [call_id]
    assert by_type["call.updated"][-1]["data"] == calls[0]
    assert calls[0]["notes"] == "Call back Tuesday"
    activities = by_type["activity.created"]
    kinds = sorted(e["data"]["type"] for e in activities)
    assert kinds == ["call", "list_added", "list_added"]
    for event in activities:
        prospect_id = event["data"]["prospectId"]
        timeline = [
            a async for batch in store.activities.timeline(ws_a.id, prospect_id) for a in batch
        ]
        entry = json.loads(
            jsonio.dumps(next(a for a in timeline if a["id"] == event["data"]["id"]))
        )
        assert event["data"] == {**entry, "prospectId": prospect_id}


def dialer_call(ws, prospect_id: str | None, minute: int, **more) -> dict:
    """A call body of the dialer's (POST /v1/calls), answered, started `minute` past 10:00."""
    body = {
        "userId": ws.users[0]["id"],
        "prospectId": prospect_id,
        "direction": "outbound",
        "disposition": "connected",
        "fromNumber": "+12125550142",
        "toNumber": "+14155550111",
        "startedAt": f"2026-01-05T10:{minute:02d}:00Z",
        "answeredAt": f"2026-01-05T10:{minute:02d}:05Z",
        "endedAt": f"2026-01-05T10:{minute:02d}:55Z",
        **more,
    }
    return {k: v for k, v in body.items() if v is not None}


async def events_since(api, cursor: str, clock) -> dict[str, list[dict]]:
    """The settled events after `cursor`, by type."""
    events, _ = await settled_feed(api, clock, f"/v1/events?cursor={cursor}")
    by_type: dict[str, list[dict]] = {}
    for event in events:
        assert Schemas().errors("/schemas/records/event.json", event) == [], event
        by_type.setdefault(event["type"], []).append(event)
    return by_type


async def check_activities(api, by_type: dict[str, list[dict]]) -> None:
    """Every activity.created event carries the activity as its prospect's timeline shows it."""
    for event in by_type.get("activity.created", []):
        prospect_id = event["data"]["prospectId"]
        body = (await api.get(f"/v1/prospect-activities?prospectId={prospect_id}")).json()
        entry = next(a for a in body["activities"] if a["id"] == event["data"]["id"])
        assert event["data"] == {**entry, "prospectId": prospect_id}


async def test_the_dialers_writes_record_their_events(api, dialer, store, ws_a, clock):
    pat = await store.prospects.create(ws_a.id, {"email": "pat@a.example"})
    _, before = await settled_feed(api, clock)
    sid = "CA" + "e1" * 16
    first = await dialer.post("/v1/calls", dialer_call(ws_a, pat["id"], 1, providerCallSid=sid))
    again = await dialer.post("/v1/calls", dialer_call(ws_a, pat["id"], 1, providerCallSid=sid))
    assert (first.code, again.code) == (201, 200)  # the same call again records nothing
    new = await dialer.post(
        "/v1/calls", dialer_call(ws_a, None, 2, prospect={"email": "new@b.example"})
    )
    filled = await dialer.post(
        "/v1/calls",
        dialer_call(ws_a, None, 3, prospect={"email": "pat@a.example", "jobTitle": "CTO"}),
    )
    assert new.json()["prospectMatch"]["outcome"] == "created"
    assert filled.json()["prospectMatch"] == {"prospectId": pat["id"], "outcome": "reused"}
    batch = await dialer.post(
        "/v1/calls/batch",
        {"calls": [dialer_call(ws_a, pat["id"], 4), dialer_call(ws_a, pat["id"], 5)]},
    )
    assert batch.code == 200
    call_id = first.json()["call"]["id"]
    change = {
        "notes": "Call back",
        "recordingSid": "RE" + "7a" * 16,
        "recordingDurationSeconds": 50,
    }
    for _ in range(2):  # the same change again changes nothing and records nothing
        assert (await dialer.patch(f"/v1/calls/{call_id}", change)).code == 200
    note = {
        "prospectId": pat["id"],
        "type": "note",
        "occurredAt": "2026-01-05T11:00:00Z",
        "details": {"text": "Asked for pricing"},
    }
    logged = await dialer.post("/v1/prospect-activities", note)
    assert logged.code == 201
    by_type = await events_since(api, before["nextCursor"], clock)
    assert {kind: len(events) for kind, events in by_type.items()} == {
        "call.created": 5,
        "call.updated": 1,
        "prospect.created": 1,
        "prospect.updated": 1,
        "activity.created": 6,  # the five calls' timeline entries and the note
    }
    calls = {c["id"]: c for c in (await api.get("/v1/calls?pageSize=100")).json()["calls"]}
    assert {e["data"]["id"] for e in by_type["call.created"]} == set(calls)
    assert by_type["call.updated"][0]["data"] == calls[call_id]  # the call as it is now
    assert calls[call_id]["hasRecording"] and "7a" * 16 not in json.dumps(by_type).lower()
    prospects = {p["id"]: p for p in (await api.get("/v1/prospects")).json()["prospects"]}
    assert by_type["prospect.created"][0]["data"] == prospects[new.json()["call"]["prospectId"]]
    assert by_type["prospect.updated"][0]["data"] == prospects[pat["id"]]
    assert prospects[pat["id"]]["jobTitle"] == "CTO"
    kinds = sorted(e["data"]["type"] for e in by_type["activity.created"])
    assert kinds == ["call"] * 5 + ["note"]
    await check_activities(api, by_type)


async def test_a_refused_dialer_write_records_nothing(api, dialer, store, ws_a, clock):
    pat = await store.prospects.create(ws_a.id, {"email": "pat@a.example"})
    _, before = await settled_feed(api, clock)
    sid = "CA" + "e2" * 16
    assert (
        await dialer.post("/v1/calls", dialer_call(ws_a, pat["id"], 1, providerCallSid=sid))
    ).code == 201
    _, after = await settled_feed(api, clock, f"/v1/events?cursor={before['nextCursor']}")
    refused = [
        ("/v1/calls", dialer_call(ws_a, pat["id"], 1, providerCallSid=sid, notes="other")),
        (
            "/v1/calls",
            dialer_call(ws_a, None, 2, prospect={"email": "x@b.example"}, listId=str(uuid.uuid4())),
        ),
        (
            "/v1/calls/batch",
            {
                "calls": [
                    dialer_call(ws_a, None, 3, prospect={"email": "y@b.example"}),
                    dialer_call(ws_a, pat["id"], 4, userId=str(uuid.uuid4())),
                ]
            },
        ),
        (
            "/v1/prospect-activities",
            {
                "prospectId": str(uuid.uuid4()),
                "type": "note",
                "occurredAt": "2026-01-05T11:00:00Z",
                "details": {"text": "x"},
            },
        ),
    ]
    for path, body in refused:
        response = await dialer.post(path, body)
        assert response.code in (409, 422), response
    unknown = await dialer.patch(f"/v1/calls/{uuid.uuid4()}", {"notes": "x"})
    assert unknown.code == 404
    assert await events_since(api, after["nextCursor"], clock) == {}


async def test_an_import_records_the_events_the_api_writes_record(api, store, ws_a, clock):
    from server.importer import Summary, import_file

    pat = await store.prospects.create(ws_a.id, {"email": "pat@a.example"})
    _, before = await settled_feed(api, clock)
    lines = [
        dialer_call(ws_a, pat["id"], 1, providerCallSid="CA" + "e3" * 16),
        dialer_call(ws_a, None, 2, prospect={"email": "new@b.example"}),
        dialer_call(ws_a, pat["id"], 3, userId=str(uuid.uuid4())),  # rejected
    ]
    text = "\n".join(json.dumps(line) for line in lines).encode()
    for run in range(2):  # importing the file again creates nothing, and records nothing
        summary = Summary("calls", ws_a.id, None)
        await import_file(store, "calls", ws_a.id, io.BytesIO(text), None, summary)
        assert (summary.created, summary.existing, summary.rejected) == (
            (2, 0, 1) if run == 0 else (0, 2, 1)
        )
    activity = {
        "prospectId": pat["id"],
        "type": "email",
        "occurredAt": "2026-01-05T11:00:00Z",
        "details": {"direction": "outbound", "subject": "Pricing"},
    }
    summary = Summary("activities", ws_a.id, None)
    await import_file(
        store, "activities", ws_a.id, io.BytesIO(json.dumps(activity).encode()), None, summary
    )
    assert summary.created == 1
    by_type = await events_since(api, before["nextCursor"], clock)
    assert {kind: len(events) for kind, events in by_type.items()} == {
        "call.created": 2,
        "prospect.created": 1,
        "activity.created": 3,
    }
    calls = {c["id"]: c for c in (await api.get("/v1/calls")).json()["calls"]}
    assert {e["data"]["id"]: e["data"] for e in by_type["call.created"]} == calls
    await check_activities(api, by_type)


async def test_the_feed_is_in_one_total_order_of_occurred_at_then_id(
    api, store, ws_a, new_list, clock
):
    for number in range(3):
        listing = await new_list(f"L{number}")
        contacts = [{"email": f"p{number}-{i}@example.com"} for i in range(5)]
        await api.post(f"/v1/lists/{listing['id']}/contacts", {"contacts": contacts})
    events, _ = await settled_feed(api, clock)
    keys = [(e["occurredAt"], e["id"]) for e in events]
    assert keys == sorted(keys) and len(set(keys)) == len(keys) >= 3 * (1 + 5 + 5 + 1)
    assert all(uuid.UUID(e["id"]).version == 7 for e in events)


async def test_pages_follow_the_cursor_with_a_link_and_skip_and_repeat_nothing(
    api, new_list, clock
):
    for number in range(25):
        await new_list(f"L{number}")
    everything, _ = await settled_feed(api, clock)
    first = await api.get("/v1/events?pageSize=10")
    body = first.json()
    assert len(body["events"]) == 10 and body["hasMore"] is True and body["pageSize"] == 10
    link = first.headers["Link"]
    assert link == f'</v1/events?cursor={quote(body["nextCursor"])}&pageSize=10>; rel="next"'
    seen = body["events"]
    while body["hasMore"]:
        body = (await api.get(f"/v1/events?cursor={body['nextCursor']}&pageSize=7")).json()
        seen += body["events"]
    assert [e["id"] for e in seen] == [e["id"] for e in everything] and len(seen) == 25


async def test_caught_up_the_cursor_is_where_the_next_poll_resumes(api, new_list, clock):
    empty = (await api.get("/v1/events")).json()
    assert empty["events"] == [] and empty["hasMore"] is False and empty["nextCursor"]
    first = await new_list("First")
    clock.advance(SETTLE + 0.2)
    body = (await api.get(f"/v1/events?cursor={empty['nextCursor']}")).json()
    assert [e["data"]["id"] for e in body["events"]] == [first["id"]]
    again = (await api.get(f"/v1/events?cursor={body['nextCursor']}")).json()
    assert again["events"] == [] and again["hasMore"] is False
    second = await new_list("Second")
    clock.advance(SETTLE + 0.2)
    later = (await api.get(f"/v1/events?cursor={again['nextCursor']}")).json()
    assert [e["data"]["id"] for e in later["events"]] == [second["id"]]


async def test_an_event_appears_as_soon_as_its_write_is_acknowledged(api, new_list, clock):
    """No settle period: with the clock standing still, a write's event is in the feed once
    the write is answered, and the cursor after it sees the next write once the clock moved
    a few milliseconds, far short of the settle period (on MongoDB a write after a read is
    stamped after the feed horizon that read reached: store/mongo/events.py)."""
    clock.freeze()
    first = await new_list("Fresh")
    body = (await api.get("/v1/events")).json()
    assert [e["data"]["id"] for e in body["events"]] == [first["id"]]
    second = await new_list("Next")
    clock.advance(0.002)
    body = (await api.get(f"/v1/events?cursor={body['nextCursor']}")).json()
    assert [e["data"]["id"] for e in body["events"]] == [second["id"]]
    assert body["hasMore"] is False


async def test_type_filters_and_the_cursor_carries_them(api, store, ws_a, new_list, clock):
    listing = await new_list("Typed")
    await api.post(f"/v1/lists/{listing['id']}/contacts", {"contacts": [{"email": "t@x.io"}]})
    call_id = await add_call(store, ws_a, None)
    await store.calls.change(ws_a.id, call_id, {"notes": "Changed"})
    everything, _ = await settled_feed(api, clock)
    wanted = {"call.updated", "list.created", "prospect.created"}
    typed, body = await follow_events(
        api, "/v1/events?type=prospect.created,call.updated,list.created"
    )
    assert [e["id"] for e in typed] == [e["id"] for e in everything if e["type"] in wanted]
    cursor = body["nextCursor"]
    same = await api.get(
        f"/v1/events?cursor={cursor}&type=list.created,call.updated,prospect.created"
    )
    assert same.code == 200
    for query in ("type=call.created", "type=call.updated"):
        response = await api.get(f"/v1/events?cursor={cursor}&{query}")
        assert response.code == 400 and response.json()["errors"][0]["pointer"] == "#/query/type"


@pytest.mark.parametrize(
    "query,parameter",
    [
        ("pageSize=0", "pageSize"),
        ("pageSize=101", "pageSize"),
        ("pageSize=ten", "pageSize"),
        ("type=call.deleted", "type"),
        ("type=", "type"),
        ("type=call.created,", "type"),
        ("type=CALL.CREATED", "type"),
        ("since=yesterday", "since"),
        ("since=2026-02-30", "since"),
        ("page=2", "page"),
        ("sort=updatedAt", "sort"),
        ("workspaceId=x", "workspaceId"),
    ],
)
async def test_bad_parameters_are_400_pointing_at_them(api, query, parameter):
    response = await api.get(f"/v1/events?{query}")
    assert response.code == 400, response
    assert response.json()["errors"][0]["pointer"] == f"#/query/{parameter}"


async def test_page_size_takes_1_to_100(api, new_list, clock):
    for number in range(3):
        await new_list(f"L{number}")
    clock.advance(SETTLE + 0.2)
    assert len((await api.get("/v1/events?pageSize=1")).json()["events"]) == 1
    assert len((await api.get("/v1/events?pageSize=100")).json()["events"]) == 3


async def test_since_is_inclusive_and_carried_by_the_cursor(api, new_list, clock):
    for number in range(4):
        await new_list(f"L{number}")
    everything, _ = await settled_feed(api, clock)
    third = everything[2]
    body = (await api.get(f"/v1/events?since={third['occurredAt']}")).json()
    assert body["events"][0]["id"] in {
        e["id"] for e in everything if e["occurredAt"] == third["occurredAt"]
    }
    assert [e["id"] for e in body["events"]] == [
        e["id"] for e in everything if e["occurredAt"] >= third["occurredAt"]
    ]
    cursor = body["nextCursor"]
    assert (await api.get(f"/v1/events?cursor={cursor}&since={third['occurredAt']}")).code == 200
    moved = await api.get(f"/v1/events?cursor={cursor}&since=2020-01-01")
    assert moved.code == 400 and moved.json()["errors"][0]["pointer"] == "#/query/since"


async def test_a_since_or_cursor_past_the_retention_horizon_is_410(api, app, ws_a, clock):
    old = (clock.now() - dt.timedelta(days=31)).isoformat() + "Z"
    response = await api.get(f"/v1/events?since={old}")
    assert response.code == 410
    problem = response.json()
    assert problem["code"] == "events_expired"
    assert problem["type"] == "/reference/problems#events_expired"
    assert problem["errors"][0]["pointer"] == "#/query/since"
    recent = (clock.now() - dt.timedelta(days=29)).isoformat() + "Z"
    assert (await api.get(f"/v1/events?since={recent}")).code == 200
    cursors = app.settings["cursors"]
    stale = cursors.encode(
        ws_a.id,
        "events",
        "occurredAt",
        {},
        Position(clock.now() - dt.timedelta(days=30, hours=1), ""),
    )
    expired = await api.get(f"/v1/events?cursor={stale}")
    assert expired.code == 410 and expired.json()["errors"][0]["pointer"] == "#/query/cursor"


async def test_foreign_and_other_resources_cursors_are_invalid_cursor(api, api_b):
    theirs = (await api_b.get("/v1/events")).json()["nextCursor"]
    calls = (await api.get("/v1/calls?sort=updatedAt")).json()["nextCursor"]
    for cursor in (theirs, calls, theirs[:-2]):
        response = await api.get(f"/v1/events?cursor={cursor}")
        assert response.code == 400 and response.json()["code"] == "invalid_cursor", cursor
    mine = (await api.get("/v1/events")).json()["nextCursor"]
    assert (await api.get(f"/v1/calls?cursor={mine}")).json()["code"] == "invalid_cursor"


async def test_head_answers_like_get_without_a_body(api):
    response = await api.fetch("/v1/events", "HEAD")
    assert response.code == 200 and response.body == b"" and "Link" in response.headers


async def test_another_workspace_sees_none_of_the_events(api, api_b, new_list, clock):
    await new_list("Mine")
    clock.advance(SETTLE + 0.2)
    assert (await api.get("/v1/events")).json()["events"]
    assert (await api_b.get("/v1/events")).json()["events"] == []


async def test_the_demo_seeding_writes_no_events_and_later_writes_do(store, auth, origin, clock):
    workspaces = await seed(store, auth, seed=3, scale=Scale(calls=50, prospects=30, timeline=5))
    client = Client(origin, workspaces[0]["apiKey"])
    events, _ = await settled_feed(client, clock)
    assert events == []
    users = (await client.get("/v1/users")).json()["users"]
    created = await client.post("/v1/lists", {"name": "After", "ownerUserId": users[0]["id"]})
    events, _ = await settled_feed(client, clock)
    assert [e["type"] for e in events] == ["list.created"]
    assert events[0]["data"] == created.json()["list"]


async def test_retention_deletes_in_bounded_batches_oldest_first(api, store, ws_a, new_list, clock):
    for number in range(7):
        await new_list(f"L{number}")
    clock.advance(SETTLE + 0.2)
    everything, _ = await follow_events(api)
    assert len(everything) == 7
    middle = dt.datetime.fromisoformat(everything[3]["occurredAt"].removesuffix("Z"))
    assert await store.events.delete_expired(middle) == sum(
        e["occurredAt"] < everything[3]["occurredAt"] for e in everything
    )
    future = clock.now() + dt.timedelta(days=1)
    left = 7 - len([e for e in everything if e["occurredAt"] < everything[3]["occurredAt"]])
    assert await store.events.delete_expired(future, batch=2, max_batches=1) == 2
    assert await store.events.delete_expired(future, batch=2) == left - 2
    assert (await follow_events(api))[0] == []


@pytest.mark.mongodb
async def test_mongodb_the_feed_waits_for_a_change_whose_events_are_being_written(
    api, store, ws_a, new_list, clock
):
    """A change landed with its marker but its events are held back (a stalled writer, past
    the settle period): readers do not pass it, and see it once its events are in."""
    before = await new_list("Before")
    clock.advance(SETTLE + 0.2)
    writer = store.event_writer
    publish = writer.publish
    held = asyncio.Event()

    entered = asyncio.Event()

    async def held_back(*args, **kwargs):
        entered.set()
        await held.wait()
        await publish(*args, **kwargs)

    writer.publish = held_back
    try:
        pending = asyncio.ensure_future(new_list("Held back"))
        await asyncio.wait_for(entered.wait(), 10)  # its change landed, its events wait
        after_owner = ws_a.users[0]["id"]
        writer.publish = publish  # writes after it record their events at once
        after = await store.lists.create(ws_a.id, "After", after_owner)
        clock.advance(3 * SETTLE)
        seen, body = await follow_events(api)
        assert [e["data"]["id"] for e in seen] == [before["id"]]  # not "After": it waits
        held.set()
        held_list = await pending
    finally:
        writer.publish = publish
    clock.advance(SETTLE + 0.2)
    later, _ = await follow_events(api, f"/v1/events?cursor={body['nextCursor']}")
    # The held-back list's event was recorded last: after "After", and ahead of the reader.
    assert [e["data"]["id"] for e in later] == [after["id"], held_list["id"]]


@pytest.mark.mongodb
async def test_mongodb_the_sweep_records_what_a_dead_writer_left(api, store, ws_a, clock):
    """A writer that dies after its change and before its events: the feed stops before the
    change, and the sweep records its event from the record as it is then."""
    writer = store.event_writer
    pending = writer.begin()
    doc = {
        "_id": str(uuid.uuid4()),
        "workspaceId": ws_a.id,
        "name": "Orphan",
        "source": "CSV",
        "ownerUserId": ws_a.users[0]["id"],
        "createdAt": pending.at,
        "updatedAt": pending.at,
        "prospectsCount": 0,
    }
    await store.lists.col.insert_one(pending.new(doc))  # ... and the writer dies here
    later = await store.lists.create(ws_a.id, "Later", ws_a.users[0]["id"])
    clock.advance(3 * SETTLE)
    assert (await follow_events(api))[0] == []  # the feed waits before the orphan
    assert await store.events.recover(clock.now() - dt.timedelta(seconds=60)) == 0  # not stale yet
    assert await store.events.recover(clock.now() + dt.timedelta(seconds=1)) == 1
    assert await store.events.recover(clock.now() + dt.timedelta(seconds=1)) == 0  # done once
    clock.advance(SETTLE + 0.2)
    events, _ = await follow_events(api)
    assert [(e["type"], e["data"]["id"]) for e in events] == [
        ("list.created", later["id"]),
        ("list.created", doc["_id"]),
    ]
    assert events[1]["data"] == (await api.get(f"/v1/lists/{doc['_id']}")).json()["list"]
    assert (await store.lists.col.find_one({"_id": doc["_id"]}))["_evt"] == []


@pytest.mark.parametrize(
    "ahead", [dt.timedelta(seconds=61), dt.timedelta(days=1), dt.timedelta(days=365 * 900)]
)
async def test_a_since_more_than_a_minute_ahead_is_400(api, ahead, clock):
    since = jsonio.format_timestamp(clock.now() + ahead)
    response = await api.get(f"/v1/events?since={since}")
    assert response.code == 400, response
    assert response.json()["errors"][0]["pointer"] == "#/query/since"
    assert "a minute ahead" in response.json()["detail"]


async def test_a_since_up_to_a_minute_ahead_is_a_clock_running_fast(api, clock):
    since = jsonio.format_timestamp(clock.now() + dt.timedelta(seconds=50))
    response = await api.get(f"/v1/events?since={since}")
    assert response.code == 200, response
    assert response.json()["events"] == []
    assert (await api.get(f"/v1/events?cursor={response.json()['nextCursor']}")).code == 200
