"""Writers of several processes on one SQLite file take turns.

SQLite lets one writer at a time in and makes the others poll for its write lock (the busy
handler sleeps up to 100 ms between tries). A writer with work queued back to back (the import,
a process under a stream of writes) takes the lock again within microseconds of its COMMIT, so a
writer of another process that polls almost never finds it free: it waited for its whole
timeout and its request got 503.

Here a writer that finds the lock taken says so while it waits: it holds a shared `flock` on the
file `<database file>-turns`. Every writer, before it takes the lock for its next unit, looks
whether another one waits (an exclusive `flock` that cannot be had) and, if so, lets it in first,
for up to LET_IN seconds. A process that dies drops its flock with its descriptors, so a dead
waiter holds nobody up. Writers of one process take turns on their writer thread's queue.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from pathlib import Path

LET_IN = 0.1  # how long a writer waits at most for the writers that were waiting before it
LONGEST_PAUSE = 0.005  # a waiting writer tries the lock at least this often


def turns_path(database: Path) -> Path:
    return database.with_name(database.name + "-turns")


class Turns:
    """The turns of this engine's writer (one writer thread: used from it alone)."""

    def __init__(self, database: Path) -> None:
        self.path = turns_path(database)
        self._fd: int | None = None

    def _file(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return self._fd

    def others_waiting(self) -> bool:
        """Whether a writer of another process (or engine) waits for the write lock now."""
        fd = self._file()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False

    def begin(self, conn: sqlite3.Connection, deadline: float, busy_ms: int) -> bool:
        """BEGIN IMMEDIATE on `conn`, after the writers that were waiting before us, trying
        until `deadline`; False when the deadline passed first. The connection's busy timeout
        is `busy_ms` before and after."""
        let_in = min(deadline, time.monotonic() + LET_IN)
        while self.others_waiting() and time.monotonic() < let_in:
            time.sleep(LONGEST_PAUSE)
        conn.execute("PRAGMA busy_timeout=0")
        try:
            if _try_begin(conn):
                return True
            fd = self._file()
            fcntl.flock(fd, fcntl.LOCK_SH)  # we wait: the writer inside lets us in next
            try:
                pause = 0.0005
                while time.monotonic() < deadline:
                    time.sleep(pause)
                    if _try_begin(conn):
                        return True
                    pause = min(pause * 2, LONGEST_PAUSE)
                return False
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            conn.execute(f"PRAGMA busy_timeout={busy_ms}")

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _try_begin(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY:  # (or an extended BUSY code)
            return False
        raise
    return True
