"""Exports on SQLite: a resource's settled records in the sync order, in bounded keyset batches
(store/exports.py).

Each batch is one statement on a reader thread: SQLite builds the records' JSON, joins them
into NDJSON and finds the position of the last one, so Python handles one string per batch
(not a row, nor a record), and the statement sees one snapshot without a transaction of its
own. No read stays open between two batches, so a long export never holds back the WAL's
checkpoints.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import AsyncGenerator

from store.exports import Lines
from store.sqlite.engine import Engine
from store.sqlite.schema import ms

# A record's position as one text that sorts like (instant, id): the instant's milliseconds
# zero-padded to a fixed width, then the id; the largest is the batch's last record.
WIDTH = 15


async def export_batches(
    engine: Engine,
    *,
    source: str,
    where: list[str],
    params: list,
    order: tuple[str, str],
    encoded: str,
    settled_before: dt.datetime,
    batch_size: int,
) -> AsyncGenerator[Lines, None]:
    """The rows of `SELECT ... FROM source WHERE where` whose `order[0]` (an instant column) is
    at or before `settled_before`, in the order of `order` (instant, id), as NDJSON batches of
    at most `batch_size` records built by `encoded` (schema.json_record)."""
    value, ident = order
    conditions = [*where, f"{value} <= ?"]
    base = [*params, ms(settled_before)]
    after: tuple[int, str] | None = None
    while True:
        text, count, last = await engine.read(
            _batch,
            source,
            conditions,
            base,
            value,
            ident,
            encoded,
            after,
            batch_size,
            snapshot=False,
        )
        if count:
            yield Lines(text + b"\n", count)
        if count < batch_size:
            return
        after = (int(last[:WIDTH]), last[WIDTH:])


def _batch(
    conn: sqlite3.Connection,
    source: str,
    conditions: list[str],
    params: list,
    value: str,
    ident: str,
    encoded: str,
    after: tuple[int, str] | None,
    size: int,
) -> tuple[bytes, int, str]:
    """(the batch's NDJSON without the final newline, its number of records, the last
    record's position text)."""
    conditions, params = list(conditions), list(params)
    if after is not None:
        conditions.append(f"({value}, {ident}) > (?, ?)")
        params += after
    rows = (
        f"SELECT {encoded} AS j, {value} AS v, {ident} AS i FROM {source} "
        f"WHERE {' AND '.join(conditions)} ORDER BY {value}, {ident} LIMIT ?"
    )
    text, count, last = conn.execute(
        "SELECT CAST(group_concat(j, char(10)) AS BLOB), count(*), "
        f"max(printf('%0{WIDTH}d', v) || i) FROM ({rows})",
        (*params, size),
    ).fetchone()
    return text or b"", count, last or ""
