"""The timeline stream: bounded batches in order, and the cursor closed when it is abandoned."""

import datetime as dt
from contextlib import aclosing

import pytest

from store.activities import activity_document, derived_id, list_added_activity


def notes(workspace_id, prospect_id, count):
    base = dt.datetime(2026, 1, 1)
    return [
        activity_document(
            workspace_id,
            prospect_id,
            "note",
            base + dt.timedelta(minutes=i),
            f"n{i}",
            {"text": f"n{i}"},
        )
        for i in range(count)
    ]


async def test_timeline_batches_are_bounded_ordered_and_scoped(store):
    await store.activities.insert_documents("ws-a", notes("ws-a", "p1", 1050))
    await store.activities.insert_documents("ws-a", notes("ws-a", "p2", 3))
    await store.activities.insert_documents("ws-b", notes("ws-b", "p1", 3))
    sizes, seen = [], []
    async with aclosing(store.activities.timeline("ws-a", "p1", 500)) as batches:
        async for batch in batches:
            sizes.append(len(batch))
            seen += batch
    assert sizes == [500, 500, 50]
    assert [a["summary"] for a in seen[:2]] == ["n1049", "n1048"]
    assert set(seen[0]) == {"id", "type", "occurredAt", "userId", "callId", "summary", "details"}


@pytest.mark.mongodb
async def test_abandoning_the_timeline_closes_the_cursor(store, monkeypatch):
    await store.activities.insert_documents("ws-a", notes("ws-a", "p1", 30))
    closed = []
    original_find = store.activities.col.find

    def find(*args, **kwargs):
        cursor = original_find(*args, **kwargs)
        original_close = cursor.close

        async def close():
            closed.append(True)
            return await original_close()

        cursor.close = close
        return cursor

    monkeypatch.setattr(store.activities.col, "find", find)
    async with aclosing(store.activities.timeline("ws-a", "p1", 10)) as batches:
        async for _batch in batches:
            break
    assert closed == [True]


@pytest.mark.sqlite
async def test_the_timeline_holds_no_cursor_between_batches(store, monkeypatch):
    """On SQLite every batch is one short read by keyset: nothing stays open in between."""
    await store.activities.insert_documents("ws-a", notes("ws-a", "p1", 30))
    reads = []
    original = store.engine.read

    async def read(fn, *args, **kwargs):
        reads.append(fn)
        return await original(fn, *args, **kwargs)

    monkeypatch.setattr(store.engine, "read", read)
    seen = []
    async with aclosing(store.activities.timeline("ws-a", "p1", 10)) as batches:
        async for batch in batches:
            seen += batch
    assert len(seen) == 30 and len(reads) == 4  # 10 + 10 + 10 + an empty look past the end
    assert [a["summary"] for a in seen] == [f"n{i}" for i in range(29, -1, -1)]


async def test_insert_refuses_documents_of_another_workspace(store):
    with pytest.raises(ValueError):
        await store.activities.insert_documents("ws-a", notes("ws-b", "p1", 1))


def test_derived_ids_are_stable_and_distinct():
    at = dt.datetime(2026, 1, 1)
    one = list_added_activity("w", "p", "l1", "One", at)
    assert one["_id"] == list_added_activity("w", "p", "l1", "Renamed", at)["_id"]
    assert one["_id"] != list_added_activity("w", "p", "l2", "One", at)["_id"]
    assert derived_id("w", "call", "c") != derived_id("v", "call", "c")
