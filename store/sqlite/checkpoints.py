"""Checkpoints: copying the write-ahead log into the database file. A thread that copies it beside
the writer during heavy writes (Engine.checkpoint_beside), and the truncation of the log to
nothing that ends a run of large writes or an erasure (Engine.truncate_log, Engine.scrub).

After a TRUNCATE checkpoint the log is 0 bytes long: no frame of it survives, so a page as it was
before a delete (which the log may hold in an older frame) is gone from the disk's files too. It
cannot finish while a reader of any process holds a snapshot that needs the log, so the scrub
tries again until it does, within a bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from store.sqlite.threads import yield_on_wakeup

log = logging.getLogger("workspace_api")

# How long a scrub keeps trying to truncate the write-ahead log while readers hold snapshots in
# it, how long one try waits for them (the writers of every process wait as long, once), and the
# pause between two tries.
SCRUB_TIMEOUT = 30.0
SCRUB_TRY_MS = 250
SCRUB_PAUSE = 0.05


class Checkpointer:
    """A thread that copies the write-ahead log into the database file (a PASSIVE checkpoint:
    it never blocks a reader or a writer) when asked, on a connection of its own: so that the
    writer can run its next unit meanwhile (Engine.checkpoint_beside), and so that no write
    copies the log itself before its answer (Engine's checkpoints between writes). After each
    checkpoint it rests `pause` seconds: the requests meanwhile make one checkpoint after it."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        pause: float = 0.0,
        name: str = "sqlite-checkpoint",
    ) -> None:
        self._wanted = threading.Event()
        self._idle = threading.Event()
        # A request and the thread's "nothing more wanted, so idle" are one step each: without
        # it a request landing between that check and `_idle.set()` found the thread idle, and
        # the writer's `wait` returned while its checkpoint was still to run.
        self._lock = threading.Lock()
        self._idle.set()
        self._stop = threading.Event()
        self._pause = pause
        self.pid = os.getpid()  # a forked child has no such thread: it makes its own
        self._thread = threading.Thread(target=self._work, args=(connect,), name=name, daemon=True)
        self._thread.start()

    def _work(self, connect: Callable[[], sqlite3.Connection]) -> None:
        yield_on_wakeup()
        conn = None
        while True:
            self._wanted.wait()
            self._wanted.clear()
            if self._stop.is_set():
                break
            try:
                conn = conn or connect()
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error:
                log.warning("a checkpoint beside the writer failed; the next copies the rest")
            finally:
                with self._lock:
                    if not self._wanted.is_set():
                        self._idle.set()
            if self._pause:
                self._stop.wait(self._pause)
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def request(self) -> None:
        with self._lock:
            self._idle.clear()
            self._wanted.set()

    def wait(self, timeout: float) -> None:
        """Until the checkpoint under way (if any) is done."""
        self._idle.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        self._wanted.set()
        self._thread.join()


def truncate_log(conn: sqlite3.Connection) -> bool:
    """One TRUNCATE checkpoint on `conn`: whether it copied the whole log into the file and
    truncated the log to 0 bytes (False: a reader or a writer kept it from finishing within the
    connection's busy timeout)."""
    try:
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    except sqlite3.OperationalError as exc:  # SQLITE_BUSY, SQLITE_LOCKED: another try
        name = getattr(exc, "sqlite_errorname", "") or ""
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return False
        raise
    return busy[0] == 0


async def scrub_log(path: Path, timeout: float = SCRUB_TIMEOUT) -> bool:
    """Truncate the write-ahead log of the database at `path` to nothing, trying again while
    readers hold snapshots in it, for at most `timeout` seconds; whether it did. Each try runs
    on a connection of its own, off the event loop, and waits at most SCRUB_TRY_MS for readers,
    so this process's writer is never held up longer than that."""
    deadline = time.monotonic() + timeout

    def attempt() -> bool:
        conn = sqlite3.connect(path, timeout=SCRUB_TRY_MS / 1000, isolation_level=None)
        try:
            conn.execute("PRAGMA secure_delete=ON")
            conn.execute(f"PRAGMA busy_timeout={SCRUB_TRY_MS}")
            return truncate_log(conn)
        finally:
            conn.close()

    while True:
        if await asyncio.to_thread(attempt):
            return True
        if time.monotonic() >= deadline:
            log.warning(
                "the write-ahead log could not be truncated within %g s: readers kept it", timeout
            )
            return False
        await asyncio.sleep(SCRUB_PAUSE)
