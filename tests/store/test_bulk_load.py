"""A large first load (the demo's seeding) builds the indexes of calls and activities once at
the end (SQLiteStore.bulk_load): afterwards every index is there, and the data is what a load
that kept them up to date row by row writes."""

import sqlite3

import pytest

from demo import seeding
from demo.data import Scale
from demo.seeding import seed
from server.auth import KeyService
from store.paging import Window
from store.sqlite import open_sqlite
from store.sqlite.schema import INDEXES

pytestmark = pytest.mark.sqlite
SCALE = Scale(calls=600, prospects=50, timeline=5)


def indexes(path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
            )
        }
    finally:
        conn.close()


async def seeded(path, bulk_from: int, monkeypatch) -> tuple[list[dict], list[dict], set]:
    """The calls and activities a seeding writes into a new file, and the file's indexes."""
    monkeypatch.setattr(seeding, "BULK_LOAD_CALLS", bulk_from)
    store = open_sqlite(str(path))
    try:
        await seed(store, KeyService("s" * 40, store.keys), seed=3, scale=SCALE)
        page = await store.calls.page((await store.workspaces.list())[0]["id"], Window(5))
        assert page.total >= SCALE.calls
        activities = await store.documents("activities")
        for doc in activities:
            assert doc.pop("storedAt")  # when it was written: the same data, another moment
        return (await store.documents("calls"), activities, indexes(path))
    finally:
        await store.close()


async def test_a_bulk_seeding_ends_with_every_index_and_the_same_data(tmp_path, monkeypatch):
    bulk = await seeded(tmp_path / "bulk.sqlite3", 100, monkeypatch)
    plain = await seeded(tmp_path / "plain.sqlite3", 10**9, monkeypatch)
    assert set(INDEXES) <= bulk[2] == plain[2]
    assert bulk[0] == plain[0] and bulk[1] == plain[1] and len(bulk[0]) > SCALE.calls


async def test_a_load_that_fails_still_builds_the_indexes(store):
    with pytest.raises(RuntimeError):
        async with store.bulk_load():
            assert not {"calls_ws_newest", "activities_ws_prospect_timeline"} & indexes(store.path)
            raise RuntimeError("the seeding failed")
    assert set(INDEXES) <= indexes(store.path)
