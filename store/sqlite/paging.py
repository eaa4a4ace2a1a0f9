"""Page-number paging and exact totals on SQLite.

An unfiltered total is read from `counters` (kept in the same transaction as every insert), so
page 1 of a million calls costs what page 1 of ten thousand does; a filtered total is counted
over the index that serves the filter.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from store.paging import MAX_SKIP, Page
from store.sqlite.schema import to_doc


def bump(conn: sqlite3.Connection, workspace_id: str, name: str, by: int) -> None:
    """Add `by` to the workspace's counter `name` (inside the writer's transaction)."""
    if by:
        conn.execute("INSERT INTO counters (workspaceId, name, value) VALUES (?, ?, ?) "
                     "ON CONFLICT (workspaceId, name) DO UPDATE SET value = value + ?",
                     (workspace_id, name, by, by))


def counter(conn: sqlite3.Connection, workspace_id: str, name: str) -> int:
    row = conn.execute("SELECT value FROM counters WHERE workspaceId = ? AND name = ?",
                       (workspace_id, name)).fetchone()
    return row[0] if row else 0


def page_query(conn: sqlite3.Connection, *, select: str, where: list[str], params: list,
               order: str, page: int, page_size: int, record: Callable[[dict], dict],
               total: int | None, count_from: str) -> Page:
    """One page of `select ... WHERE where ORDER BY order` plus the total. `total` is the
    known unfiltered total (from `counters`), or None to count `count_from` with `where`."""
    condition = " AND ".join(where)
    skip = (page - 1) * page_size
    if total is None:
        total = conn.execute(f"SELECT COUNT(*) FROM {count_from} WHERE {condition}",
                             params).fetchone()[0]
    items = []
    if skip < min(total, MAX_SKIP):  # a page past the end is empty without walking to it
        rows = conn.execute(f"{select} WHERE {condition} ORDER BY {order} LIMIT ? OFFSET ?",
                            (*params, page_size, skip))
        items = [record(to_doc(row)) for row in rows]
    return Page(items, total, page, page_size)
