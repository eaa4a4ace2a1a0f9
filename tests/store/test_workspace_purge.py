"""The store's steps of deleting a workspace (store/workspace_deletion.py) on both backends: a
workspace being deleted is no longer found by the request path, its keys are gone, and the
purge reaches a table or collection that no list names (one added later), leaving every other
workspace's records."""

from __future__ import annotations

import sqlite3

import pytest

from store.workspace_deletion import DISABLED_REASON


async def _purge_all(store, workspace_id: str) -> int:
    deleted = 0
    while found := await store.workspaces.purge(workspace_id, batch=2):
        deleted += found
    return deleted


async def test_begin_delete_hides_the_workspace_and_stops_its_keys_and_endpoints(store, ws_a, ws_b):
    now = store.clock.now()
    endpoint = await store.webhook_endpoints.create(
        ws_a.id, "https://hooks.example/in", None, None, "whsec_" + "b" * 32, now
    )
    marked = await store.workspaces.begin_delete(ws_a.id, now)
    assert marked is not None and marked["deletingAt"] == now
    again = await store.workspaces.begin_delete(ws_a.id, store.clock.now())
    assert again is not None and again["deletingAt"] == now  # kept: the grace counts from it

    assert await store.workspaces.get(ws_a.id) is None
    assert (await store.workspaces.find(ws_a.id))["deletingAt"] == now
    assert await store.keys.list(ws_a.id) == []
    [disabled] = await store.webhook_endpoints.list(ws_a.id)
    assert disabled["id"] == endpoint["id"] and disabled["status"] == "disabled"
    assert disabled["disabledReason"] == DISABLED_REASON
    assert await store.workspaces.get(ws_b.id) is not None
    assert len(await store.keys.list(ws_b.id)) == 1
    assert await store.workspaces.begin_delete("no-such-workspace", now) is None


@pytest.mark.sqlite
async def test_the_purge_reaches_a_table_added_later_on_sqlite(store, ws_a, ws_b):
    def add(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE later_things (workspaceId TEXT NOT NULL, value TEXT)")
        conn.executemany(
            "INSERT INTO later_things VALUES (?, ?)",
            [(ws_a.id, f"a{n}") for n in range(5)] + [(ws_b.id, "b")],
        )

    await store.engine.write(add)
    await store.workspaces.begin_delete(ws_a.id, store.clock.now())
    assert await _purge_all(store, ws_a.id) > 5

    def left(conn: sqlite3.Connection) -> list[tuple]:
        return conn.execute("SELECT workspaceId, value FROM later_things").fetchall()

    assert [tuple(row) for row in await store.engine.read(left)] == [(ws_b.id, "b")]
    assert await store.workspaces.remove(ws_a.id)
    assert await store.workspaces.find(ws_a.id) is None


@pytest.mark.mongodb
async def test_the_purge_reaches_a_collection_added_later_on_mongodb(store, ws_a, ws_b):
    await store.db["later_things"].insert_many(
        [{"workspaceId": ws_a.id, "value": f"a{n}"} for n in range(5)]
        + [{"workspaceId": ws_b.id, "value": "b"}]
    )
    await store.workspaces.begin_delete(ws_a.id, store.clock.now())
    assert await _purge_all(store, ws_a.id) > 5

    left = await store.db["later_things"].find({}, {"_id": 0}).to_list()
    assert left == [{"workspaceId": ws_b.id, "value": "b"}]
    assert await store.workspaces.remove(ws_a.id)
    assert await store.workspaces.find(ws_a.id) is None
