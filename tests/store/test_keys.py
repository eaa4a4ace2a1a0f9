"""Key records written before keys had scopes, expiry and last use keep working unchanged: they
are `read,write` and never expire, on both backends (SQLite: an older file gains the columns,
NULL in its rows; MongoDB: documents without the fields)."""

from __future__ import annotations

import datetime as dt
import sqlite3
import uuid

import pytest

from store.database import open_store
from store.keys import DEFAULT_SCOPES
from store.sqlite.schema import ms
from tests.helpers import Client

CREATED = dt.datetime(2025, 3, 4, 5, 6, 7, 890000)


async def insert_old_key(store, workspace_id: str) -> str:
    """A key record as the service wrote it before scopes and expiry existed; its id."""
    key_id = str(uuid.uuid4())
    if store.backend == "sqlite":

        def insert(conn):
            conn.execute(
                'INSERT INTO api_keys ("_id", workspaceId, name, createdAt, revokedAt) '
                "VALUES (?, ?, ?, ?, NULL)",
                (key_id, workspace_id, "old integration", ms(CREATED)),
            )

        await store.engine.write(insert)
    else:
        await store.db["api_keys"].insert_one(
            {
                "_id": key_id,
                "workspaceId": workspace_id,
                "name": "old integration",
                "createdAt": CREATED,
                "revokedAt": None,
            }
        )
    return key_id


async def test_an_old_key_reads_and_writes_and_never_expires(origin, store, auth, clock, ws_a):
    key_id = await insert_old_key(store, ws_a.id)
    client = Client(origin, auth.sign(key_id, ws_a.id))

    described = (await client.get("/v1/api-key")).json()["apiKey"]
    assert described == {
        "id": key_id,
        "name": "old integration",
        "scopes": ["read", "write"],
        "createdAt": "2025-03-04T05:06:07.890Z",
        "expiresAt": None,
    }
    assert (await client.get("/v1/users")).code == 200
    created = await client.post("/v1/lists", {"name": "Old", "ownerUserId": ws_a.users[0]["id"]})
    assert created.code == 201
    clock.advance(100 * 365 * 86_400)  # a century on: still no expiry
    assert (await client.get("/v1/users")).code == 200

    active = await store.keys.find_active(ws_a.id, key_id)
    assert active is not None
    assert (active.scopes, active.expires_at) == (DEFAULT_SCOPES, None)
    await auth.usage.flush()
    [record] = [k for k in await store.keys.list(ws_a.id) if k["id"] == key_id]
    assert record["scopes"] == ["read", "write"] and record["expiresAt"] is None
    assert record["lastUsedAt"] is not None  # the first write of a field it did not have


@pytest.mark.sqlite
async def test_an_older_sqlite_file_gains_the_key_columns(tmp_path):
    """A file whose api_keys table predates scopes, expiry and last use opens, gets the columns
    (NULL in its rows), and its keys are read,write and never expire."""
    path = tmp_path / "older.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute(
            'CREATE TABLE api_keys ("_id" TEXT PRIMARY KEY, workspaceId TEXT NOT NULL, '
            "name TEXT, createdAt INTEGER NOT NULL, revokedAt INTEGER)"
        )
        conn.execute("INSERT INTO api_keys VALUES ('k1', 'w1', 'old', ?, NULL)", (ms(CREATED),))
    conn.close()
    store = open_store("", "unused", sqlite_path=str(path))
    try:
        await store.ensure_indexes()
        active = await store.keys.find_active("w1", "k1")
        assert active is not None
        assert (active.scopes, active.expires_at) == (DEFAULT_SCOPES, None)
        [record] = await store.keys.list("w1")
        assert record["scopes"] == ["read", "write"]
        assert (record["expiresAt"], record["lastUsedAt"]) == (None, None)
        await store.keys.touch("w1", "k1", dt.datetime(2030, 1, 1, 8, 30))
        [record] = await store.keys.list("w1")
        assert record["lastUsedAt"] == dt.datetime(2030, 1, 1, 8, 30)
    finally:
        await store.close()
    with sqlite3.connect(path) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(api_keys)")}
    conn.close()
    assert {"scopes", "expiresAt", "lastUsedAt"} <= columns


async def test_scopes_are_kept_in_their_order_and_checked(store, ws_a):
    record = await store.keys.create(ws_a.id, "dialer", frozenset({"ingest", "read"}))
    assert record["scopes"] == ["read", "ingest"]
    active = await store.keys.find_active(ws_a.id, record["id"])
    assert active is not None and active.scopes == {"read", "ingest"}
    admin = await store.keys.create(ws_a.id, "directory", frozenset({"admin", "read"}))
    assert admin["scopes"] == ["read", "admin"]
    for bad in (frozenset(), frozenset({"owner"})):
        with pytest.raises(ValueError):
            await store.keys.create(ws_a.id, "bad", bad)
    assert await store.keys.get(ws_a.id, record["id"]) == record
    assert await store.keys.get(str(uuid.uuid4()), record["id"]) is None  # workspace-scoped
    revoked = await store.keys.revoke(record["id"])
    assert revoked is not None and revoked["revokedAt"] is not None
    assert await store.keys.find_active(ws_a.id, record["id"]) is None
