"""Pages the SQLite store encodes itself (`encoded=True`, JSON built by SQLite) say exactly
what the same pages built and encoded in Python say: every record, field, null, boolean,
timestamp and list, and the same position for the next cursor."""

import datetime as dt
import json
import random
import sqlite3

import pytest

from demo.data import Scale
from demo.seeding import seed
from handlers import jsonio
from store.paging import RawJSON, Window
from store.sqlite.schema import json_record

pytestmark = pytest.mark.sqlite


def decoded(page) -> list[dict]:
    return json.loads(jsonio.dumps(page.items))


async def same_pages(read, windows) -> int:
    """Read each window both ways and compare; the number of records compared."""
    compared = 0
    for window in windows:
        plain, encoded = await read(window, False), await read(window, True)
        assert isinstance(encoded.items, RawJSON)
        assert decoded(encoded) == decoded(plain)
        assert (encoded.total, encoded.has_more, encoded.last) == (
            plain.total,
            plain.has_more,
            plain.last,
        )
        compared += len(plain.items)
    return compared


async def test_encoded_pages_equal_python_built_ones(store, auth):
    workspaces = await seed(
        store, auth, seed=11, scale=Scale(calls=400, prospects=120, timeline=10)
    )
    wid = workspaces[0]["id"]
    first = await store.calls.page(wid, Window(5))
    windows = [
        Window(100),
        Window(100, 3),
        Window(7, None),
        Window(50, 99),
        Window(30, None, "updatedAt"),
        Window(10, None, after=first.last),
        Window(10, 2, "updatedAt"),
    ]
    user = first.items[0]["userId"]
    count = 0
    for filters in (
        {},
        {"user_id": user},
        {"disposition": "connected"},
        {"direction": "inbound", "created_from": dt.datetime(2000, 1, 1)},
    ):

        async def calls(window, encoded, filters=filters):
            return await store.calls.page(wid, window, encoded=encoded, **filters)

        count += await same_pages(calls, windows)
    assert count > 500
    lists = (await store.lists.page(wid, Window(100))).items
    assert await same_pages(lambda w, e: store.lists.page(wid, w, encoded=e), windows)
    for list_id in (None, lists[0]["id"]):
        assert await same_pages(
            lambda w, e, list_id=list_id: store.prospects.page(wid, w, list_id=list_id, encoded=e),
            windows,
        )
    empty = await store.calls.page(wid, Window(100, 1000), encoded=True)
    assert decoded(empty) == [] and empty.last is None

    # A call's stored record follows a change of its notes; a row written before the column
    # existed (record NULL) has its record built when read.
    call = first.items[0]
    await store.calls.change(wid, call["id"], {"notes": 'Called back \u00e9 "later"'})
    await store.engine.write(
        lambda conn: conn.execute(
            'UPDATE calls SET record = NULL WHERE "_id" IN (SELECT "_id" FROM calls LIMIT 50)'
        )
    )
    assert (
        await same_pages(
            lambda w, e: store.calls.page(wid, w, encoded=e),
            [Window(100), Window(100, 2), Window(100, 3)],
        )
        == 300
    )
    shown = decoded(await store.calls.page(wid, Window(5), encoded=True))
    assert shown[0]["id"] == call["id"] and shown[0]["notes"] == 'Called back \u00e9 "later"'

    # Rows written before toNumberSuppressed existed (the column NULL, the stored record
    # without it) read false, encoded or not.
    await store.engine.write(
        lambda conn: conn.execute(
            "UPDATE calls SET toNumberSuppressed = NULL, "
            "record = json_remove(record, '$.toNumberSuppressed') "
            'WHERE "_id" IN (SELECT "_id" FROM calls LIMIT 80)'
        )
    )
    assert await same_pages(lambda w, e: store.calls.page(wid, w, encoded=e), [Window(100)])
    shown = decoded(await store.calls.page(wid, Window(100), encoded=True))
    assert [c["toNumberSuppressed"] for c in shown] == [False] * 100


def test_sql_timestamps_match_the_api_format():
    """strftime over integer milliseconds writes what jsonio writes, over the whole range a
    record can hold, milliseconds and odd instants included."""
    rng = random.Random(7)
    top = int(
        (dt.datetime(9999, 12, 31, 23, 59, 59, 999000) - dt.datetime(1970, 1, 1))
        / dt.timedelta(milliseconds=1)
    )
    values = [
        0,
        1,
        999,
        1000,
        59_999,
        86_399_999,
        top,
        951_782_400_000,  # 2000-02-29
        *(rng.randrange(0, top) for _ in range(20_000)),
        *(rng.randrange(1_600_000_000_000, 1_900_000_000_000) for _ in range(20_000)),
    ]
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (createdAt INTEGER, hasRecording INTEGER, listIds TEXT)")
    conn.executemany(
        "INSERT INTO t VALUES (?, ?, ?)",
        [(v, v % 2, json.dumps([str(v)])) for v in values] + [(None, 0, "[]")],
    )
    sql = json_record({"at": "createdAt", "flag": "hasRecording", "ids": "listIds"})
    rows = [json.loads(text) for (text,) in conn.execute(f"SELECT {sql} FROM t ORDER BY rowid")]
    for value, row in zip(values, rows, strict=False):
        instant = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=value)
        assert row == {
            "at": jsonio.format_timestamp(instant),
            "flag": bool(value % 2),
            "ids": [str(value)],
        }
    assert rows[-1] == {"at": None, "flag": False, "ids": []}
