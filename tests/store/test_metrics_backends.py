"""The dialer metrics of MongoDB (the tier's server) and of SQLite (a throwaway file beside it)
are the same report on the same calls: across DST changes, offsets of any size, a historical
offset that puts day boundaries inside quarter hours, a user filter, calls on the boundaries.
Calls stored before they carried their metrics fields count all the same, and get the fields
once at start-up; a changed call's `$set` keeps its contribution right."""

from __future__ import annotations

import datetime as dt
import logging
import random
import uuid
from zoneinfo import ZoneInfo

import pytest

from store.calls import DISPOSITIONS, call_document
from store.database import open_store
from store.metrics import contribution
from store.mongo.metrics import FILLED, changed_call_set, fill_metric_fields, metric_fields

pytestmark = pytest.mark.mongodb

USERS = [str(uuid.UUID(int=n)) for n in (3, 1, 2)]
# Around the autumn DST change in New York and Europe (2026-10-25 and 11-01), and around the
# local midnights of 1971-03-01..03 in Monrovia (-00:44:30 then: 00:44:30Z).
WINDOWS = [
    (dt.datetime(2026, 10, 23), dt.timedelta(days=12)),
    (dt.datetime(1971, 2, 28, 23), dt.timedelta(days=4)),
]
EDGES = [  # calls on and next to boundaries
    dt.datetime(2026, 10, 26, 4),  # New York midnight (EDT)
    dt.datetime(2026, 11, 2, 5),  # New York midnight (EST)
    dt.datetime(2026, 10, 26, 18, 30),  # Kolkata midnight
    dt.datetime(1971, 3, 1, 0, 44, 30),
    dt.datetime(1971, 3, 2, 0, 44, 30),
    dt.datetime(1971, 3, 3, 0, 44, 30),
]
MS = dt.timedelta(milliseconds=1)
CASES = [
    ("2026-10-24", "2026-11-04", "America/New_York", None),
    ("2026-10-24", "2026-11-04", "Europe/Berlin", None),
    ("2026-10-25", "2026-10-31", "Asia/Kolkata", None),
    ("2026-10-25", "2026-10-31", "Pacific/Chatham", None),
    ("2026-10-23", "2026-11-03", "UTC", USERS[1]),
    ("1971-03-01", "1971-03-03", "Africa/Monrovia", None),
    ("1971-03-01", "1971-03-02", "Africa/Monrovia", USERS[2]),
    ("1971-02-28", "1971-03-03", "UTC", None),
]


def documents(workspace_id: str, seed: int = 7, count: int = 400) -> list[dict]:
    rng = random.Random(seed)
    instants = [edge + offset for edge in EDGES for offset in (-MS, 0 * MS, MS)]
    for _ in range(count):
        start, span = rng.choice(WINDOWS)
        instants.append(start + span * rng.random())
    docs = []
    for started in instants:
        disposition = rng.choice([*DISPOSITIONS, "connected", "connected"])
        answered = disposition in ("connected", "voicemail", "wrong_number")
        talk = dt.timedelta(seconds=rng.choice([0, 5, 59, 60, 61, 600]))
        docs.append(
            call_document(
                workspace_id,
                user_id=rng.choice(USERS),
                prospect_id=str(uuid.uuid4()),
                direction=rng.choice(["outbound"] * 4 + ["inbound"]),
                disposition=disposition,
                from_number="+12125550100",
                to_number="+14155550101",
                started_at=started,
                answered_at=started if answered else None,
                ended_at=started + talk,
                meeting_booked=rng.random() < 0.2,
            )
        )
    return docs


@pytest.fixture
def sqlite_store(io_loop):
    store = open_store("memory", "metrics")
    yield store
    io_loop.run_sync(store.close)


async def reports(store, workspace_id: str) -> list[dict]:
    return [
        await store.metrics.report(
            workspace_id,
            dt.date.fromisoformat(first),
            dt.date.fromisoformat(last),
            ZoneInfo(zone),
            user,
        )
        for first, last, zone, user in CASES
    ]


async def test_both_backends_report_the_same_figures(store, sqlite_store):
    workspace = (await store.workspaces.create("Metrics"))["id"]
    docs = documents(workspace)
    await store.calls.insert_documents(workspace, docs)
    await sqlite_store.calls.insert_documents(workspace, docs)
    mongo, sqlite = await reports(store, workspace), await reports(sqlite_store, workspace)
    for case, ours, theirs in zip(CASES, mongo, sqlite, strict=True):
        assert ours == theirs, case
    assert sum(report["totals"]["dials"] for report in mongo) > 500  # the cases are not empty
    monrovia = mongo[CASES.index(("1971-03-01", "1971-03-03", "Africa/Monrovia", None))]
    assert [day["startsAt"].time() for day in monrovia["byDay"]] == [dt.time(0, 44, 30)] * 3
    assert all(day["dials"] for day in monrovia["byDay"])
    other = (await store.workspaces.create("Other"))["id"]
    assert (await reports(store, other)) == (await reports(sqlite_store, other))


async def test_calls_stored_without_the_fields_count_and_are_filled_once(
    store, sqlite_store, caplog
):
    workspace = (await store.workspaces.create("Before"))["id"]
    old, new = documents(workspace, seed=1, count=150), documents(workspace, seed=2, count=150)
    await store.db["calls"].insert_many([dict(doc) for doc in old])  # as an older version did
    await store.calls.insert_documents(workspace, new)
    await sqlite_store.calls.insert_documents(workspace, old + new)
    expected = await reports(sqlite_store, workspace)
    assert await reports(store, workspace) == expected  # counted by their exact instants

    with caplog.at_level(logging.INFO, logger="workspace_api"):
        assert await fill_metric_fields(store.db, batch=16) == len(old)
    assert f"filled in the dialer-metrics fields of {len(old)} calls" in caplog.text
    stored = {doc["_id"]: doc for doc in await store.documents("calls")}
    for doc in old + new:
        assert {name: stored[doc["_id"]][name] for name in ("quarter", "m")} == metric_fields(doc)
    assert await store.db["migrations"].find_one({"_id": FILLED})
    assert await reports(store, workspace) == expected

    # Once done, it is not looked for again; a call an older host writes during a rolling
    # upgrade still counts.
    late = documents(workspace, seed=3, count=20)
    await store.db["calls"].insert_many([dict(doc) for doc in late])
    await sqlite_store.calls.insert_documents(workspace, late)
    assert await fill_metric_fields(store.db) == 0
    assert await store.db["calls"].count_documents({"quarter": {"$exists": False}}) == len(late)
    assert await reports(store, workspace) == await reports(sqlite_store, workspace)


async def test_filling_an_empty_database_records_nothing(store):
    assert await fill_metric_fields(store.db) == 0
    assert await store.db["migrations"].find_one({"_id": FILLED}) is None
    workspace = (await store.workspaces.create("Fresh"))["id"]
    await store.calls.insert_documents(workspace, documents(workspace, count=5))
    assert await fill_metric_fields(store.db) == 0  # every call has its fields already
    assert await store.db["migrations"].find_one({"_id": FILLED})


async def test_the_set_of_a_changed_call_moves_its_counts(store):
    workspace = (await store.workspaces.create("Changes"))["id"]
    [doc] = documents(workspace, seed=5, count=0)[:1]
    doc |= {
        "direction": "outbound",
        "disposition": "connected",
        "durationSeconds": 90,
        "meetingBooked": False,
        "toNumberSuppressed": True,  # as recorded: the change keeps it counted
    }
    await store.calls.insert_documents(workspace, [doc])
    day = doc["createdAt"].date()

    async def totals() -> dict:
        report = await store.metrics.report(workspace, day, day, ZoneInfo("UTC"))
        return {name: report["totals"][name] for name in contribution(doc)}

    assert await totals() == contribution(doc)
    current = await store.db["calls"].find_one({"_id": doc["_id"]})
    changes = {"disposition": "voicemail", "meetingBooked": True, "updatedAt": doc["updatedAt"]}
    updated = await store.db["calls"].update_one(
        {"_id": doc["_id"], "updatedAt": current["updatedAt"]},
        {"$set": changed_call_set(current, changes)},
    )
    assert updated.modified_count == 1
    assert await totals() == {
        "dials": 1,
        "connects": 0,
        "conversations": 0,
        "meetingsBooked": 1,
        "voicemails": 1,
        "callsToSuppressedNumbers": 1,
        "talkTimeSeconds": 0,
    }


async def test_records_never_show_the_stored_fields(api, store, ws_a):
    [doc] = documents(ws_a.id, count=0)[:1]
    await store.calls.insert_documents(ws_a.id, [doc])
    assert {"quarter", "m"} <= set(await store.db["calls"].find_one({"_id": doc["_id"]}))
    [record] = (await api.get("/v1/calls")).json()["calls"]
    assert record["id"] == doc["_id"] and not {"quarter", "m"} & set(record)
    assert not {"quarter", "m"} & set(await store.calls.change(ws_a.id, doc["_id"], {"notes": "x"}))
