"""Paging on SQLite: a page by number with its exact total, or the records after a keyset
position (store.paging.Window), both in the index order.

An unfiltered total is read from `counters` (kept in the same transaction as every insert), so
page 1 of a million calls costs what page 1 of ten thousand does; a filtered total is counted
over the index that serves the filter.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from store.paging import MAX_SKIP, Page, Window
from store.sqlite.schema import ms, to_doc


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
               window: Window, columns: tuple[str, str], record: Callable[[dict], dict],
               count_from: str, total: Callable[[], int] | None = None) -> Page:
    """One window of `select ... WHERE where`, ordered by `columns` (the sort value and the id
    expressions). In page mode the total is `total()` when given (an unfiltered count kept
    elsewhere) or a count of `count_from` with the same conditions."""
    value, ident = columns
    where, params = list(where), list(params)
    if window.settled_before is not None:
        where.append(f"{value} <= ?")
        params.append(ms(window.settled_before))
        total = None
    if window.after is not None:
        where.append(f"({value}, {ident}) {'>' if window.ascending else '<'} (?, ?)")
        params += [ms(window.after.value), window.after.id]
    direction = "" if window.ascending else " DESC"
    query = (f"{select} WHERE {' AND '.join(where)} "
             f"ORDER BY {value}{direction}, {ident}{direction} LIMIT ? OFFSET ?")
    size = window.page_size
    if window.page is None:  # keyset: one more record than asked tells whether more follow
        rows = conn.execute(query, (*params, size + 1, 0)).fetchall()
        items = [record(to_doc(row)) for row in rows[:size]]
        return Page(items, None, None, size, len(rows) > size, window.sort)
    count = total() if total else conn.execute(
        f"SELECT COUNT(*) FROM {count_from} WHERE {' AND '.join(where)}", params).fetchone()[0]
    skip = (window.page - 1) * size
    items = []
    if skip < min(count, MAX_SKIP):  # a page past the end is empty without walking to it
        items = [record(to_doc(row)) for row in conn.execute(query, (*params, size, skip))]
    return Page(items, count, window.page, size, window.page * size < count, window.sort)
