"""Exports, backend-neutral: every record of a resource in one stream (GET /v1/exports/...).

An export covers exactly the records settled when it started: those whose sync-order instant
(`updatedAt`; an activity's `storedAt`) is at or before the horizon `settled_before` (the start
minus `sync_settle_seconds`, the settle rule of `sort=updatedAt`). Each backend reads them in
the sync order (that instant, then id) in bounded batches, each batch a keyset query of its own
(after the previous batch's last record), so memory stays flat and no database cursor stays
open for the length of the export. A record changed during the export moves past the horizon:
it leaves the rest of the export and is found by the sync order from `continuation(horizon)`.

A batch is a list of records, or `Lines`: records the store already encoded as NDJSON.
"""

from __future__ import annotations

import datetime as dt

from store.paging import Position

# An id after every id (ids are UUID strings): the position after every record of an instant.
AFTER_EVERY_ID = "\U0010ffff"
BATCH_SIZE = 1000


class Lines:
    """Records already encoded as NDJSON (`text`, UTF-8): one JSON record per line, each line
    ending in a newline; the API writes them out as they are."""

    __slots__ = ("count", "text")

    def __init__(self, text: bytes, count: int):
        self.text = text
        self.count = count


Batch = list[dict] | Lines


def continuation(horizon: dt.datetime) -> Position:
    """The sync-order position right after every record an export with this horizon covered:
    following it misses nothing the export left out and repeats nothing it sent."""
    return Position(horizon, AFTER_EVERY_ID)
