"""Backups of the SQLite file and restores from them, while (backup) or before (restore) the
service uses it: the operator's `workspace-api backup` and `restore` (server/backup.py).

A backup is SQLite's online backup API, run in steps of STEP_PAGES pages inside one read
transaction on the source: the copy is the database as it was when that transaction began
(every commit acknowledged before then, nothing after), and the writers of other processes go on
meanwhile (WAL mode: a reader never blocks a writer). Without that transaction a write between two
steps would make SQLite start the copy over, and under a steady stream of writes it might never
end. While it runs, checkpoints cannot copy the log past its snapshot, so the log grows by what is
written meanwhile and is copied into the file once the backup ends.

Whether a process has the file open is what SQLite's own locks say: every connection to a
database in WAL mode holds a shared lock on one byte of its `-shm` file (the "DMS" byte, unix
VFS), and only a process that has the file to itself gets that lock exclusively. A restore holds
it exclusively while it replaces the file, so no process opens the database meanwhile.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from store.sqlite import schema

STEP_PAGES = 4096  # 16 MiB of 4 KiB pages per step of the backup API
STEP_PAUSE = 0.0  # seconds between two steps (the source's writers do not wait for them)
# The unix VFS's "dead man switch" byte in the -shm file: 120 + SQLITE_SHM_NLOCK (8).
SHM_DMS_BYTE = 128


class BackupError(Exception):
    """A backup or a restore could not be done; the message says why, in one line."""


def copy_online(
    source: Path,
    target: Path,
    busy_timeout: float = 5.0,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Copy the database at `source` into the new file `target` (which must not exist) with the
    backup API, in steps, as of one snapshot. `progress(copied, total)` pages after each step."""
    src = sqlite3.connect(source, timeout=busy_timeout, isolation_level=None)
    try:
        src.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        # One read transaction over every step: one snapshot, never started over.
        src.execute("BEGIN")
        src.execute("SELECT count(*) FROM sqlite_schema").fetchone()
        dst = _connect_new(target)
        try:

            def step(status: int, remaining: int, total: int) -> None:
                if progress is not None:
                    progress(total - remaining, total)

            src.backup(dst, pages=STEP_PAGES, progress=step, sleep=STEP_PAUSE)
        finally:
            dst.close()
        src.execute("COMMIT")
    finally:
        src.close()


def _connect_new(path: Path) -> sqlite3.Connection:
    """A connection to a new, owner-only file (0600, like the database: it holds the same
    personal data and the key-signing secret)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return sqlite3.connect(path, isolation_level=None)


def problems(path: Path) -> list[str]:
    """What makes the file at `path` unfit to serve: `PRAGMA integrity_check`'s findings, or the
    tables of this service that it lacks (a SQLite file of something else). Empty: fit."""
    try:
        conn = sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        return [f"cannot be opened ({exc})"]
    try:
        found = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if found != ["ok"]:
            return found
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")
        }
    except sqlite3.Error as exc:
        return [f"is not a usable SQLite database ({exc})"]
    finally:
        conn.close()
    missing = sorted(set(schema.TABLES) - set(schema.ADDED_TABLES) - tables)
    if missing:
        return [f"is not a Workspace Data API database (no table {', '.join(missing)})"]
    return []


def _shm(path: Path) -> Path:
    return path.with_name(path.name + "-shm")


@contextlib.contextmanager
def sole_user(path: Path) -> Iterator[None]:
    """Hold the database at `path` for this process alone: BackupError while any process has it
    open. Meanwhile no process can open it (SQLite answers them busy, and they try again)."""
    fd = os.open(_shm(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, SHM_DMS_BYTE)
        except OSError:
            raise BackupError(
                f"a process has the database file {path} open: stop every `workspace-api serve`,"
                " `demo`, `import` and admin command using it, then run the restore again"
            ) from None
        try:
            yield
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, SHM_DMS_BYTE)
    finally:
        os.close(fd)


def in_use(path: Path) -> bool:
    """Whether a process has the database at `path` open (in WAL mode, as the service opens it)."""
    if not _shm(path).exists():
        return False
    try:
        with sole_user(path):
            return False
    except BackupError:
        return True


def stage(source: Path, staged: Path) -> None:
    """Copy the backup at `source` into `staged` whole (with what a log beside it holds),
    through the backup API (reading `source` only)."""
    src = sqlite3.connect(source, isolation_level=None)
    try:
        dst = _connect_new(staged)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


def carry_erasures(old: Path, staged: Path) -> int:
    """Copy the erasure requests of the database at `old` into the staged copy (those it does
    not have, or has in an earlier state): a restore must not forget what was erased after the
    backup was taken, so that `workspace-api erasures reapply` can erase it again. They hold
    only keyed hashes and ids. How many were carried over (0 without an old file)."""
    if not old.is_file():
        return 0
    conn = sqlite3.connect(f"file:{staged}", uri=True, isolation_level=None)
    try:
        conn.execute("ATTACH DATABASE ? AS old", (f"file:{old}?mode=ro",))
        if not conn.execute(
            "SELECT 1 FROM old.sqlite_master WHERE type = 'table' AND name = 'erasures'"
        ).fetchone():
            return 0
        conn.execute(f"CREATE TABLE IF NOT EXISTS main.erasures ({schema.TABLES['erasures']})")
        return conn.execute(
            "INSERT OR REPLACE INTO main.erasures SELECT * FROM old.erasures"
        ).rowcount
    finally:
        conn.close()


def replace(path: Path, staged: Path) -> None:
    """Put the checked file `staged` (same directory) in place of the database at `path`, for
    this process alone (sole_user). The old write-ahead log is moved aside first, so it can
    never be applied to the new file; a crash leaves the old file or the new one, whole."""
    wal = path.with_name(path.name + "-wal")
    aside = path.with_name(f".{path.name}-wal.{os.getpid()}.old")
    with sole_user(path):
        with contextlib.suppress(FileNotFoundError):
            os.rename(wal, aside)
        _fsync(staged)
        os.rename(staged, path)
        _fsync(path.parent)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(aside)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(partial: Path, target: Path) -> None:
    """Give the finished file `partial` its name `target`, never replacing a file there."""
    _fsync(partial)
    try:
        os.link(partial, target)
    except FileExistsError:
        raise BackupError(f"{target} exists: a backup never replaces a file") from None
    finally:
        os.unlink(partial)
    _fsync(target.parent)


def timed(fn: Callable[[], None]) -> float:
    """Seconds `fn()` took."""
    started = time.monotonic()
    fn()
    return time.monotonic() - started
