"""Tombstones on SQLite (store/tombstones.py): the sync walks that show them, and the retention
sweep that removes them.

With `includeDeleted=true`, a walk keeps the rows with `deletedAt` and shows each as
`{"id", "deletedAt", "updatedAt"}`: SQL that builds either form from the row. The sweep deletes
tombstones whose `deletedAt` is past the retention horizon, oldest first in bounded batches,
found through each table's `*_deleted` index (partial: tombstones only, across workspaces).
"""

from __future__ import annotations

import datetime as dt
import sqlite3

from store.sqlite.engine import Engine
from store.sqlite.schema import json_record, ms

TABLES = ("prospects", "lists")


def either_json(live: str, alias: str) -> str:
    """SQL of a row's record as JSON text: `live` (schema.json_record) while the row lives,
    the tombstone's form once it is deleted; `alias` prefixes the columns ("p." or "")."""
    tomb = json_record(
        {"id": "_id", "deletedAt": "deletedAt", "updatedAt": "updatedAt"},
        lambda name: f'{alias}"{name}"',
    )
    return f'CASE WHEN {alias}"deletedAt" IS NULL THEN {live} ELSE {tomb} END'


def _sweep(conn: sqlite3.Connection, table: str, horizon: int, batch: int) -> int:
    return conn.execute(
        f'DELETE FROM {table} WHERE "_id" IN (SELECT "_id" FROM {table} INDEXED BY '
        f"{table}_deleted WHERE deletedAt IS NOT NULL AND deletedAt < ? "
        "ORDER BY deletedAt LIMIT ?)",
        (horizon, batch),
    ).rowcount


async def sweep_tombstones(
    engine: Engine, horizon: dt.datetime, batch: int = 1000, max_batches: int = 10
) -> int:
    """Delete up to `max_batches` batches of `batch` tombstones per table deleted before
    `horizon` (each batch one short write unit); how many."""
    deleted = 0
    for table in TABLES:
        for _ in range(max_batches):
            gone = await engine.write(_sweep, table, ms(horizon), batch)
            deleted += gone
            if gone < batch:
                break
    return deleted
