"""Activities keep when they were stored (`storedAt`): rows and documents written before the
field existed get their `occurredAt` when the store opens them, so the activities export holds
them too, in their place."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3

import pytest

from handlers import jsonio
from store.activities import activity_document
from store.clock import utcnow
from store.exports import Lines
from store.sqlite import open_sqlite

OCCURRED = dt.datetime(2026, 3, 2, 9, 30)


def notes(workspace_id: str, count: int, **kwargs) -> list[dict]:
    return [
        activity_document(
            workspace_id,
            "2b7d4c59-9e8a-4d5b-8f2a-1c906f1c0a3e",
            "note",
            OCCURRED + dt.timedelta(minutes=i),
            f"Note {i}",
            {"text": f"Note {i}"},
            **kwargs,
        )
        for i in range(count)
    ]


async def exported(store, workspace_id: str) -> list[dict]:
    """The export's records as the API writes them (instants as ISO 8601 text)."""
    lines: list[dict] = []
    async for batch in store.activities.export(workspace_id, utcnow(), batch_size=3):
        if isinstance(batch, Lines):
            lines += [json.loads(line) for line in batch.text.splitlines()]
        else:
            lines += json.loads(jsonio.dumps_bytes(batch))
    return lines


async def test_a_new_activity_is_stored_now_and_exported_after_older_ones(store, ws_a):
    older = notes(ws_a.id, 4, stored_at=dt.datetime(2026, 3, 3))
    await store.activities.insert_documents(ws_a.id, older)
    before = jsonio.format_timestamp(utcnow())
    await store.activities.insert_documents(ws_a.id, notes(ws_a.id, 2))
    lines = await exported(store, ws_a.id)
    assert {line["summary"] for line in lines[:4]} == {f"Note {i}" for i in range(4)}
    keys = [(line["storedAt"], line["id"]) for line in lines]
    assert keys == sorted(keys)  # stored together: by id
    assert all(line["storedAt"] >= before for line in lines[4:]) and len(lines) == 6
    assert lines[0]["storedAt"] == "2026-03-03T00:00:00.000Z"


@pytest.mark.sqlite
async def test_an_older_sqlite_file_gets_stored_at_from_occurred_at(tmp_path, ws_a):
    path = tmp_path / "older.sqlite3"
    store = open_sqlite(str(path))
    await store.workspaces.create("Older", workspace_id=ws_a.id)
    await store.close()
    with sqlite3.connect(path) as conn:  # the file as the version before storedAt wrote it
        conn.execute("DROP INDEX activities_ws_stored")
        conn.execute("ALTER TABLE activities DROP COLUMN storedAt")
        columns = '"_id", workspaceId, prospectId, type, occurredAt, summary, details'
        for doc in notes(ws_a.id, 5):
            conn.execute(
                f"INSERT INTO activities ({columns}) VALUES (?, ?, ?, ?, ?, ?, '{{}}')",
                (
                    doc["_id"],
                    ws_a.id,
                    doc["prospectId"],
                    "note",
                    int((doc["occurredAt"] - dt.datetime(1970, 1, 1)).total_seconds() * 1000),
                    doc["summary"],
                ),
            )
    store = open_sqlite(str(path))
    try:
        lines = await exported(store, ws_a.id)
        assert [line["storedAt"] for line in lines] == [line["occurredAt"] for line in lines]
        assert [line["summary"] for line in lines] == [f"Note {i}" for i in range(5)]
        with sqlite3.connect(path) as conn:
            assert conn.execute(
                "SELECT count(*) FROM activities WHERE storedAt IS NULL"
            ).fetchone() == (0,)
    finally:
        await store.close()


@pytest.mark.mongodb
async def test_older_mongodb_documents_get_stored_at_from_occurred_at(store, ws_a, ws_b):
    for ws in (ws_a, ws_b):
        documents = notes(ws.id, 5)
        for doc in documents:
            del doc["storedAt"]  # as the version before storedAt wrote them
        await store.db["activities"].insert_many(documents)
    await store.ensure_indexes()  # every process start
    for ws in (ws_a, ws_b):
        lines = await exported(store, ws.id)
        assert [line["storedAt"] for line in lines] == [line["occurredAt"] for line in lines]
        assert len(lines) == 5
    assert await store.db["activities"].count_documents({"storedAt": None}) == 0
