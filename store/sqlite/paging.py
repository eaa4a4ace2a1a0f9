"""Paging on SQLite: a page by number with its exact total, or the records after a keyset
position (store.paging.Window), both in the index order.

An unfiltered total is read from `counters` (kept in the same transaction as every insert), so
page 1 of a million calls costs what page 1 of ten thousand does; a filtered total is counted
over the index that serves the filter.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Callable

from store.paging import MAX_SKIP, Page, Position, RawJSON, Window
from store.sqlite.schema import ms, to_doc

# Between the records of an encoded page: JSON text never holds a raw control character.
SEPARATOR = 30


def bump(conn: sqlite3.Connection, workspace_id: str, name: str, by: int) -> None:
    """Add `by` to the workspace's counter `name` (inside the writer's transaction)."""
    if by:
        conn.execute(
            "INSERT INTO counters (workspaceId, name, value) VALUES (?, ?, ?) "
            "ON CONFLICT (workspaceId, name) DO UPDATE SET value = value + ?",
            (workspace_id, name, by, by),
        )


COUNTER = "SELECT value FROM counters WHERE workspaceId = ? AND name = ?"


# A page this far in or less, whose total is kept (or that has none), reads a bounded number
# of index entries: a quick unit (Engine.read). Deeper offsets walk the index to get there.
QUICK_SKIP = 10_000


def quick(window: Window, unfiltered: bool) -> bool:
    """Whether reading this window with no filter but the workspace is a quick unit."""
    if window.page is None:  # keyset: a seek, then at most page_size + 1 entries
        return unfiltered
    return (
        unfiltered
        and window.settled_before is None
        and (window.page - 1) * window.page_size <= QUICK_SKIP
    )


def page_query(
    conn: sqlite3.Connection,
    *,
    fields: str,
    source: str,
    where: list[str],
    params: list,
    window: Window,
    order: tuple[str, str],
    record: Callable[[dict], dict],
    encoded: str | None = None,
    counted: tuple[str, str] | None = None,
) -> Page:
    """One window of `SELECT fields FROM source WHERE where`, ordered by `order` (the sort
    value and the id expressions), each row made a record by `record`.

    With `encoded` (SQL that builds a row's record as JSON text, schema.json_record) SQLite
    builds the records' JSON and returns the whole page, its count included, from one
    statement: one step of the virtual machine instead of one per row (each a hand-over of
    Python's GIL between this thread and the event loop's), and a fraction of the CPU of
    building and encoding the records in Python. One statement sees one snapshot, so such a
    unit needs no transaction of its own (Engine.read's `snapshot=False`).

    In page mode the total is the counter `counted` (workspace id, counter name) when given (an
    unfiltered count kept by every insert), else a count of `source` with the same conditions.
    """
    value, ident = order
    where, params = list(where), list(params)
    if window.settled_before is not None:
        where.append(f"{value} <= ?")
        params.append(ms(window.settled_before))
        counted = None
    if window.after is not None:
        where.append(f"({value}, {ident}) {'>' if window.ascending else '<'} (?, ?)")
        params += [ms(window.after.value), window.after.id]
    condition = " AND ".join(where)
    direction = "" if window.ascending else " DESC"
    query = (
        f"SELECT {encoded + ' AS j' if encoded else fields} FROM {source} "
        f"WHERE {condition} ORDER BY {value}{direction}, {ident}{direction} LIMIT ? OFFSET ?"
    )
    count, count_params = (
        (COUNTER, list(counted))
        if counted
        else (f"SELECT COUNT(*) FROM {source} WHERE {condition}", params)
    )
    size, page = window.page_size, window.page
    skip = None if page is None else (page - 1) * size
    found: list[str] | list[dict]  # encoded records, or records
    total: int | None
    if encoded:
        found, total = _encoded_rows(conn, query, params, count, count_params, size, skip)
    elif skip is None:
        found, total = (
            [record(to_doc(row)) for row in conn.execute(query, (*params, size + 1, 0))],
            None,
        )
    else:
        counted_row = conn.execute(count, count_params).fetchone()
        total = counted_row[0] if counted_row else 0
        found = (
            []
            if skip >= min(total, MAX_SKIP)
            else [  # past the end: no walk to it
                record(to_doc(row)) for row in conn.execute(query, (*params, size, skip))
            ]
        )
    if page is None:  # keyset: one more record than asked tells whether more follow
        items, end = _items(found[:size], encoded, window)
        return Page(items, None, None, size, len(found) > size, window.sort, end)
    assert total is not None  # page mode always counts
    items, end = _items(found, encoded, window)
    return Page(items, total, page, size, page * size < total, window.sort, end)


def _encoded_rows(
    conn: sqlite3.Connection,
    query: str,
    params: list,
    count: str,
    count_params: list,
    size: int,
    skip: int | None,
) -> tuple[list[str], int | None]:
    """The encoded records of a page (keyset when `skip` is None: `size` + 1 of them) and, in
    page mode, the total, all from one statement; a page past the end is not walked to."""
    records = f"SELECT group_concat(j, char({SEPARATOR})) FROM ({query})"
    if skip is None:
        text, total = conn.execute(records, (*params, size + 1, 0)).fetchone()[0], None
    else:
        skip = min(skip, MAX_SKIP)
        total, text = conn.execute(
            f"SELECT n, CASE WHEN ? < n THEN ({records}) END "
            f"FROM (SELECT coalesce(({count}), 0) AS n)",
            (skip, *params, size, skip, *count_params),
        ).fetchone()
    return (text.split(chr(SEPARATOR)) if text else []), total


def _items(
    found: list, encoded: str | None, window: Window
) -> tuple[list[dict] | RawJSON, Position | None]:
    """The page's items (records, or encoded records joined into one JSON array) and, for
    encoded ones, the position of the last (read back from its JSON)."""
    if not encoded:
        return found, None
    end = None
    if found:
        last = json.loads(found[-1])
        stamp = dt.datetime.fromisoformat(last[window.field].removesuffix("Z"))
        end = Position(stamp, last["id"])
    return RawJSON(f"[{','.join(found)}]".encode()), end
