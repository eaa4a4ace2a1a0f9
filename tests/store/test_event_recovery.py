"""The event sweep on MongoDB records the events of writes whose writer died after its change
landed (store/mongo/events.py). Without a settle period a reader moves up to the feed horizon,
so what the sweep records must keep the feed's two promises: no event lands behind a position a
reader was already handed, and a record's last event carries it as it is now. Each test stops a
write at one step (its marked change landed, its events never recorded), as a SIGKILL would.
(On SQLite a write's events are in its own transaction: there is nothing to recover.)"""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson
import pytest

from store.clock import new_id
from store.events import EPOCH
from store.mongo.marks import Pending
from store.paging import Position
from tests.helpers import FakeClock

pytestmark = pytest.mark.mongodb

START = Position(EPOCH, "")
GRACE = dt.timedelta(seconds=8)


class Killed(Exception):
    """Where the writer died."""


async def die(*args, **kwargs):
    raise Killed


async def read_on(
    store: Any, workspace_id: str, cursor: Position, clock: FakeClock
) -> tuple[list[dict], Position]:
    """Every event after `cursor` (a caught-up reader's pages) and where the reader is then."""
    events: list[dict] = []
    while True:
        page = await store.events.page(workspace_id, cursor, clock.now(), 100)
        events += [orjson.loads(event.text) for event in page.events]
        cursor = page.resume(cursor)
        if not page.has_more:
            return events, cursor


async def a_call(store: Any, workspace_id: str, clock: FakeClock) -> dict:
    now = clock.now()
    return await store.calls.create(
        workspace_id,
        user_id="u1",
        prospect_id="p1",
        direction="outbound",
        disposition="connected",
        from_number="+12125550100",
        to_number="+14155550100",
        started_at=now - dt.timedelta(minutes=1),
        ended_at=now,
    )


async def test_a_marker_landing_while_the_sweep_runs_is_recorded_past_the_readers(
    store, clock, monkeypatch
):
    """A writer that stalled past the sweep's grace lands its change (and dies) just as the
    sweep starts, after a reader raised the horizon and moved up to it: the event the sweep
    records for that change comes after the reader's position, so the reader gets it."""
    here, there = f"ws-{new_id()}", f"ws-{new_id()}"
    call = await a_call(store, here, clock)
    other = await a_call(store, there, clock)
    writer = store.events.writer
    with monkeypatch.context() as patched:  # another workspace's write, killed after its change
        patched.setattr(writer, "publish", die)
        with pytest.raises(Killed):
            await store.calls.change(there, other["id"], {"notes": "cut short"})
    stalled = Pending(new_id(), clock.now())  # a write that took its marker, then stalled
    seen, cursor = await read_on(store, here, START, clock)
    assert [event["type"] for event in seen] == ["call.created", "activity.created"]
    clock.advance(60)  # past the grace: the sweep takes the stalled write for a dead one
    clock.freeze()
    sweep_floor = store.events._floor
    moved: dict[str, Position] = {}

    async def floor_then_a_reader_and_the_late_change(older_than):
        floor = await sweep_floor(older_than)
        if not moved:
            _, moved["cursor"] = await read_on(store, here, cursor, clock)
            await store.db["calls"].update_one(
                {"_id": call["id"]}, stalled.update({"$set": {"notes": "landed late"}})
            )
        return floor

    monkeypatch.setattr(store.events, "_floor", floor_then_a_reader_and_the_late_change)
    await store.events.recover(clock.now() - GRACE)
    monkeypatch.undo()
    await store.events.recover(clock.now() - GRACE)  # what the first sweep left, if anything
    assert moved["cursor"].value > clock.now()  # the reader was handed the horizon's position
    clock.advance(1)
    seen, _ = await read_on(store, here, moved["cursor"], clock)
    assert [(event["type"], event["data"]["notes"]) for event in seen] == [
        ("call.updated", "landed late")
    ]


async def test_a_deletion_after_a_write_cut_short_stays_the_last_event(store, clock, monkeypatch):
    """A user's change lands and its writer dies before recording its event; the user is then
    deleted (its `user.deleted` recorded at once). When the sweep comes to the cut-short
    change, the user is deleted: the user's last event stays its deletion, `{"id",
    "deletedAt"}`, as for a deletion nothing cut short, and the marker is gone."""
    ws = f"ws-{new_id()}"
    user = await store.users.create(ws, "ann@acme.example", "Ann", "Lee")
    with monkeypatch.context() as patched:
        patched.setattr(store.events.writer, "publish", die)
        with pytest.raises(Killed):
            await store.users.update(ws, user["id"], {"lastName": "Lee-Ray"})
    assert await store.users.delete(ws, user["id"])
    gone = await store.users.get(ws, user["id"])
    clock.advance(60)
    await store.events.recover(clock.now() - GRACE)
    marked = await store.db["users"].find_one({"_id": user["id"]})
    assert marked["_evt"] == []  # recovered: the feed no longer waits for it
    clock.advance(1)
    seen, _ = await read_on(store, ws, START, clock)
    mine = [event for event in seen if event["data"]["id"] == user["id"]]
    assert mine[0]["type"] == "user.created"
    assert (mine[-1]["type"], mine[-1]["data"]) == (
        "user.deleted",
        {"id": user["id"], "deletedAt": gone["deletedAt"].isoformat(timespec="milliseconds") + "Z"},
    )


class DiesPullingMarkers:
    """A database whose writer dies as it pulls its markers: after its events were inserted."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def __getitem__(self, name: str) -> Any:
        return PullDies(self.db[name])


class PullDies:
    def __init__(self, col: Any) -> None:
        self.col = col

    async def update_many(self, query: dict, update: dict, **kwargs: Any) -> Any:
        if "$pullAll" in update:
            raise Killed
        return await self.col.update_many(query, update, **kwargs)

    async def bulk_write(self, requests: list, **kwargs: Any) -> Any:
        if any("$pullAll" in request._doc for request in requests):
            raise Killed
        return await self.col.bulk_write(requests, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.col, name)


async def test_a_writer_that_dies_after_its_events_leaves_no_second_event(
    store, clock, monkeypatch
):
    """A call changed and a user deleted whose writers inserted their events and died before
    pulling their markers (the SIGKILL between the two): the sweep pulls the markers and
    records nothing again. Each record has one event per write."""
    ws = f"ws-{new_id()}"
    call = await a_call(store, ws, clock)
    user = await store.users.create(ws, "ann@acme.example", "Ann", "Lee")
    writer = store.events.writer
    with monkeypatch.context() as patched:
        patched.setattr(writer, "db", DiesPullingMarkers(writer.db))
        with pytest.raises(Killed):
            await store.calls.change(ws, call["id"], {"disposition": "voicemail"})
        with pytest.raises(Killed):
            await store.users.delete(ws, user["id"])
    clock.advance(60)
    assert await store.events.recover(clock.now() - GRACE) == 0
    for name in ("calls", "activities"):
        async for doc in store.db[name].find({"workspaceId": ws}):
            assert not doc.get("_evt"), (name, doc)
    assert not await store.db["tombstones"].count_documents(
        {"workspaceId": ws, "_evt.0": {"$exists": True}}
    )
    clock.advance(1)
    seen, _ = await read_on(store, ws, START, clock)
    assert sorted(event["type"] for event in seen) == sorted(
        [
            "call.created",
            "activity.created",
            "user.created",
            "call.updated",
            "activity.created",
            "user.deleted",
        ]
    )


async def test_a_sweep_that_dies_after_its_events_leaves_no_second_event(store, clock, monkeypatch):
    """The sweep itself is killed between inserting the events it recovered and pulling the
    markers: the next sweep records nothing again."""
    ws = f"ws-{new_id()}"
    call = await a_call(store, ws, clock)
    with monkeypatch.context() as patched:
        patched.setattr(store.events.writer, "publish", die)
        with pytest.raises(Killed):
            await store.calls.change(ws, call["id"], {"notes": "cut short"})
    clock.advance(60)
    with monkeypatch.context() as patched:
        patched.setattr(store.events, "db", DiesPullingMarkers(store.events.db))
        with pytest.raises(Killed):
            await store.events.recover(clock.now() - GRACE)
    assert await store.events.recover(clock.now() - GRACE) == 0
    assert (await store.db["calls"].find_one({"_id": call["id"]}))["_evt"] == []
    clock.advance(1)
    seen, _ = await read_on(store, ws, START, clock)
    assert [
        (event["type"], event["data"]["notes"]) for event in seen if event["type"] == "call.updated"
    ] == [("call.updated", "cut short")]
