"""What a write removed is recorded by the write, not read back: a `<resource>.deleted` event
with `{"id", "deletedAt"}` made from the unit's Removed (store.events.Removed), crash-safe on
both backends; and a stored event's data can be rewritten later (Events.rewrite). No API write
removes a record yet: `remove` below is the shape those writes take on each backend (SQLite:
the delete and its event in one write unit; MongoDB: a marked tombstone, the delete, the
events)."""

from __future__ import annotations

import datetime as dt

import orjson

from store.clock import utcnow
from store.events import EPOCH, Removed
from store.paging import Position

WS = "ws-tomb"


async def remove(store, gone: Removed, publish: bool = True) -> None:
    """Delete a list as a removing write does, recording what it removed."""
    if store.backend == "sqlite":

        def unit(conn) -> None:
            conn.execute('DELETE FROM lists WHERE "_id" = ? AND workspaceId = ?', (gone.id, WS))
            store.event_writer.record(conn, WS, [], removed=[gone])

        await store.engine.write(unit)
        return
    writer = store.event_writer
    pending = writer.begin()
    await writer.bury(WS, pending, [gone])
    await store.db["lists"].delete_one({"_id": gone.id, "workspaceId": WS})
    if publish:
        await writer.publish(WS, pending, removed=[gone])


async def feed(store) -> list[dict]:
    page = await store.events.page(WS, Position(EPOCH, ""), utcnow() + dt.timedelta(hours=1), 100)
    return [orjson.loads(event.text) for event in page.events]


async def test_a_removal_records_a_deleted_event_from_the_write(store):
    listing = await store.lists.create(WS, "Doomed", "u1")
    at = dt.datetime(2026, 3, 1, 12, 0, 0, 250000)
    await remove(store, Removed("list", listing["id"], at))
    assert await store.lists.get(WS, listing["id"]) is None
    events = await feed(store)
    assert [e["type"] for e in events] == ["list.created", "list.deleted"]
    assert events[1]["data"] == {"id": listing["id"], "deletedAt": "2026-03-01T12:00:00.250Z"}
    assert events[1]["occurredAt"] >= events[0]["occurredAt"]


async def test_a_removal_whose_writer_stopped_is_recorded_by_the_sweep(store):
    """MongoDB: the writer dies after the delete, before its events; the feed waits at the
    tombstone's marker and the sweep records the event. (SQLite: the unit is one transaction,
    nothing to recover.)"""
    listing = await store.lists.create(WS, "Doomed", "u1")
    await remove(store, Removed("list", listing["id"], utcnow()), publish=False)
    if store.backend == "sqlite":
        assert await store.events.recover(utcnow() + dt.timedelta(hours=1)) == 0
    else:
        assert [e["type"] for e in await feed(store)] == ["list.created"]
        waiting = await store.events.page(WS, Position(EPOCH, ""), utcnow(), 100)
        assert waiting.settled < utcnow()  # held before the tombstone's marker
        assert await store.events.recover(utcnow() + dt.timedelta(hours=1)) == 1
        assert await store.events.recover(utcnow() + dt.timedelta(hours=1)) == 0
    events = await feed(store)
    assert [e["type"] for e in events] == ["list.created", "list.deleted"]
    assert events[1]["data"]["id"] == listing["id"]


async def test_a_tombstone_whose_delete_never_landed_records_nothing(store):
    if store.backend == "sqlite":
        return  # one transaction: a delete that never landed left nothing
    listing = await store.lists.create(WS, "Kept", "u1")
    writer = store.event_writer
    await writer.bury(WS, writer.begin(), [Removed("list", listing["id"], utcnow())])
    assert await store.events.recover(utcnow() + dt.timedelta(hours=1)) == 0
    assert [e["type"] for e in await feed(store)] == ["list.created"]


async def test_an_events_data_can_be_rewritten(store):
    listing = await store.lists.create(WS, "Named", "u1")
    await store.lists.create("ws-other", "Other", "u1")
    (event,) = await feed(store)
    assert event["data"]["name"] == "Named"
    assert await store.events.rewrite(WS, event["id"], {"id": listing["id"], "erased": True})
    assert not await store.events.rewrite("ws-other", event["id"], {"id": "x"})
    assert not await store.events.rewrite(WS, "0190a0a0-0000-7000-8000-000000000000", {})
    (after,) = await feed(store)
    assert after == {**event, "data": {"id": listing["id"], "erased": True}}
