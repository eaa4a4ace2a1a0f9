"""`store.heavy_writes()` around the import: its pace (on SQLite, Engine.statements_done) lets
the caller's own work go on while the writer is idle or committing, and holds it while a write
unit runs its statements."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sqlite3
import threading

import pytest

from tests.helpers import wait_for
from tests.store.test_turns import waiting_writers


async def test_the_pace_returns_when_nothing_is_written(store):
    async with store.heavy_writes() as pace:
        await asyncio.wait_for(pace(), 10)


def _unit(entered: threading.Event, release: threading.Event, fail: bool):
    def unit(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT OR REPLACE INTO settings (name, value) VALUES ('heavy', '1')")
        entered.set()
        if not release.wait(10):
            raise AssertionError("never released")
        if fail:
            raise ValueError("the unit fails")

    return unit


@pytest.mark.sqlite
@pytest.mark.parametrize("fail", [False, True], ids=["commits", "fails"])
async def test_the_pace_waits_for_a_write_unit_s_statements(store, fail):
    entered, release = threading.Event(), threading.Event()
    async with store.heavy_writes() as pace:
        writing = asyncio.ensure_future(store.engine.write(_unit(entered, release, fail)))
        try:
            assert await asyncio.to_thread(entered.wait, 10)
            waiting = asyncio.ensure_future(pace())
            await asyncio.sleep(0.1)
            assert not waiting.done()  # the unit is still running its statements
            release.set()
            await asyncio.wait_for(waiting, 10)
        finally:
            release.set()
            outcome = (await asyncio.gather(writing, return_exceptions=True))[0]
        assert isinstance(outcome, ValueError) if fail else outcome is None
        await asyncio.wait_for(pace(), 10)  # idle again: at once


@pytest.mark.sqlite
async def test_the_pace_goes_on_while_the_writer_waits_for_the_file(store):
    """Another process's writer holds the file's write lock: this process's writer waits for
    it, needing no interpreter, so the caller's own work goes on meanwhile."""
    other = sqlite3.connect(store.engine.path, isolation_level=None, check_same_thread=False)
    try:
        async with store.heavy_writes() as pace:
            other.execute("BEGIN IMMEDIATE")  # the other writer's unit is under way
            unit = _unit(*_open(), False)
            writing = asyncio.ensure_future(store.engine.write(unit, timeout=10))
            # The writer says it waits for the lock (store/sqlite/turns.py): a shared flock on
            # the file of turns.
            await wait_for(lambda: waiting_writers(store.engine.path), what="the writer waits")
            assert not writing.done()
            await asyncio.wait_for(pace(), 2)  # at once, though the write is not done
            assert not writing.done()
            other.execute("COMMIT")
            await asyncio.wait_for(writing, 10)
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()


def _open() -> tuple[threading.Event, threading.Event]:
    """The events of a unit that is released from the start."""
    entered, release = threading.Event(), threading.Event()
    release.set()
    return entered, release


@pytest.mark.sqlite
async def test_heavy_writes_copy_the_log_beside_the_writer(store):
    """A thread of its own copies the write-ahead log while the writer writes; every
    HEAVY_CHECKPOINT_EVERY units the writer copies it whole, so the log stays that size."""
    from store.sqlite import HEAVY_CHECKPOINT_EVERY

    def checkpointers() -> int:
        return sum(t.name == "sqlite-checkpoint" for t in threading.enumerate())

    value = "x" * 400_000  # about 100 pages of the log per unit

    def unit(conn: sqlite3.Connection, n: int) -> None:
        conn.execute("INSERT INTO settings (name, value) VALUES (?, ?)", (f"heavy{n}", value))

    wal = f"{store.engine.path}-wal"
    units = HEAVY_CHECKPOINT_EVERY * 4
    sizes = []
    async with store.heavy_writes():
        assert checkpointers() == 1
        for n in range(units):
            await store.engine.write(unit, n)
            sizes.append(await asyncio.to_thread(os.path.getsize, wal))
    assert checkpointers() == 0
    # Without a checkpoint the log would hold every unit (SQLite's own starts at 1,000 pages).
    assert max(sizes) < (HEAVY_CHECKPOINT_EVERY + 2) * len(value)
    stored = await store.engine.read(
        lambda conn: conn.execute(
            "SELECT count(*), sum(length(value)) FROM settings WHERE name LIKE 'heavy%'"
        ).fetchone()
    )
    assert tuple(stored) == (units, units * len(value))


@pytest.mark.sqlite
async def test_heavy_writes_read_the_file_through_a_memory_map(store):
    """Only meanwhile: the writer's fresh connection afterwards maps nothing."""

    def mapped(conn: sqlite3.Connection) -> int:
        return conn.execute("PRAGMA mmap_size").fetchone()[0]

    assert await store.engine.write(mapped) == 0
    async with store.heavy_writes():
        assert await store.engine.write(mapped) > 0
    assert await store.engine.write(mapped) == 0


def _log_size(path: str) -> int:
    try:
        return os.path.getsize(f"{path}-wal")
    except FileNotFoundError:
        return 0


@pytest.mark.sqlite
async def test_the_write_ahead_log_is_truncated_after_the_import(store, ws_a, monkeypatch):
    """The import leaves the log at its peak (several batches' pages, 545 MB a million calls
    deep); disk use returns to the database's own size when it ends."""
    from server import importer
    from tests.server.test_import import call

    monkeypatch.setitem(importer.BATCH, "calls", 200)
    prospect = await store.prospects.create(ws_a.id, {"email": "p@a.example"})
    lines = [
        call(ws_a, prospect["id"], n, providerCallSid=f"CA{n:032x}", notes="n" * 4000)
        for n in range(2000)
    ]
    text = "\n".join(json.dumps(line) for line in lines).encode()
    summary = importer.Summary("calls", ws_a.id, None)
    peak = 0
    async with store.heavy_writes() as pace:
        await importer.import_file(
            store, "calls", ws_a.id, io.BytesIO(text), None, summary, None, None, pace
        )
        peak = _log_size(store.engine.path)
    assert summary.created == 2000
    assert peak > 4 * 1024 * 1024  # the import's batches were in the log
    assert _log_size(store.engine.path) == 0
    assert len(await store.documents("calls")) == 2000  # copied into the file, nothing lost


@pytest.mark.sqlite
async def test_a_write_copies_no_log_and_a_thread_beside_the_writer_does(store):
    """No commit copies the write-ahead log into the file before its write is answered (beside
    an import the log holds the import's units, and copying them took a write up to seconds):
    the writer's automatic checkpoint is off, and a thread beside it copies the log after the
    writes, at most once a second."""

    def automatic(conn: sqlite3.Connection) -> int:
        return conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]

    assert await store.engine.write(automatic) == 0
    value = "x" * 400_000  # about 100 pages of the log per unit

    def unit(conn: sqlite3.Connection, n: int) -> None:
        conn.execute("INSERT INTO settings (name, value) VALUES (?, ?)", (f"copied{n}", value))

    path = str(store.engine.path)
    before = await asyncio.to_thread(os.path.getsize, path)
    for n in range(12):
        await store.engine.write(unit, n)
    # In WAL mode the file itself is written by checkpoints alone: it grows as the log is
    # copied into it.
    await wait_for(lambda: os.path.getsize(path) >= before + 12 * len(value), what="the log copied")
    assert any(t.name == "sqlite-checkpoint-after-writes" for t in threading.enumerate())
