"""Opening the database file: creating a new one whole, refusing one that cannot be used, and
naming what is wrong with it in one line (what, which file, what to do).

A new file is written under a temporary name with its schema and then linked into place, so the
service never leaves an empty file at `sqlite_path`: an empty file there is not one it made,
and is refused rather than silently becoming a new, empty store. A file that is not a SQLite
database, or shorter than its header says (with no write-ahead log that could hold the rest),
is refused before SQLite reads it; one that cannot be opened, read or written is refused at its
first statement (SQLiteStore opens it, brings its schema up to date and reads a row of every
table before it serves).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

from store.errors import StoreBusy, StoreDamaged, StoreError, StoreUnavailable, StoreUnusable

MAGIC = b"SQLite format 3\x00"
HEADER = 100
RESTORE = "stop every process using it and restore it from a backup (docs/deployment.md, Backups)"
ACCESS = (
    "check the path, the permissions of the file and of its directory, and whether the file "
    "system is mounted read-only"
)
EMPTY = (
    "if it was meant to become a new database, delete it and start again (the service "
    "creates the file itself); otherwise restore it from a backup"
)


def unusable(
    path: Path, what: str, todo: str, kind: type[StoreUnusable] = StoreUnusable
) -> StoreUnusable:
    """The error of a file that cannot be used, as one line: what, which file, what to do."""
    return kind(f"the database file {path} {what}: {todo}")


def translate(path: Path, exc: sqlite3.Error) -> StoreError:
    """The store error of a SQLite error met while opening or using the file at `path`."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    reason = f"{exc} ({name})" if name else str(exc)
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
        what = "is not a SQLite database" if name == "SQLITE_NOTADB" else "is damaged"
        return unusable(path, f"{what} ({reason})", RESTORE, StoreDamaged)
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
        verb = "opened" if name.startswith("SQLITE_CANTOPEN") else "written"
        return unusable(path, f"cannot be {verb} ({reason})", ACCESS)
    if name.startswith(("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_NOMEM", "SQLITE_PROTOCOL")):
        return StoreUnavailable(f"database: {reason}")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_INTERRUPT")):
        return StoreBusy(f"database: {reason}")
    return StoreError(f"database: {reason}")


def check(path: Path, create: Callable[[sqlite3.Connection], None]) -> None:
    """Create the file at `path` whole (its schema written by `create`) if there is none, or
    refuse one that is empty, not a database or truncated (StoreUnusable)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        _create(path, create)
        return
    except OSError as exc:
        raise unusable(path, f"cannot be opened ({exc.strerror})", ACCESS) from exc
    if not stat.S_ISREG(info.st_mode):
        raise unusable(path, "is not a file", "set sqlite_path (WSAPI_SQLITE_PATH) to a file")
    if os.statvfs(path).f_flag & os.ST_RDONLY:
        raise unusable(path, "cannot be written: its file system is mounted read-only", ACCESS)
    for where in (path, path.parent):  # the file, and its directory for the write-ahead log
        if not os.access(where, os.W_OK):
            raise unusable(path, f"cannot be written ({where} is not writable)", ACCESS)
    try:
        with open(path, "rb") as file:
            head = file.read(HEADER)
    except OSError as exc:
        raise unusable(path, f"cannot be read ({exc.strerror})", ACCESS) from exc
    if not head:
        raise unusable(path, "is empty (0 bytes), not a database the service created", EMPTY)
    if len(head) < HEADER or not head.startswith(MAGIC):
        raise unusable(path, "is not a SQLite database", RESTORE, StoreDamaged)
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages, changes, valid_for = (int.from_bytes(head[i : i + 4], "big") for i in (28, 24, 92))
    # The header's page count is valid when its version number matches; the write-ahead log,
    # when there is one, may hold pages the file does not have yet (SQLite replays it).
    expected = page_size * pages
    if pages and changes == valid_for and info.st_size < expected and not _has_wal(path):
        raise unusable(
            path,
            f"is truncated ({info.st_size} bytes; its header says {expected})",
            RESTORE,
            StoreDamaged,
        )


def _has_wal(path: Path) -> bool:
    try:
        return os.stat(path.with_name(path.name + "-wal")).st_size > 0
    except OSError:
        return False


def _create(path: Path, create: Callable[[sqlite3.Connection], None]) -> None:
    """A new database at `path`, owner-only (0600), with its schema, written under another name
    and linked into place: a crash leaves no file, or a whole one. Another process creating it
    at the same moment wins or loses as a whole too (a link never replaces a file)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise unusable(path, f"cannot be created ({exc.strerror})", ACCESS) from exc
    partial = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        conn = sqlite3.connect(partial, isolation_level=None)
        try:
            # In WAL mode from the start: the engine's threads, opening their connections at
            # once, then never race to switch it (two connections switching a file's journal
            # mode at the same moment can fail with SQLITE_BUSY without waiting).
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA secure_delete=ON")  # as every connection (store/sqlite/engine.py)
            conn.execute("BEGIN IMMEDIATE")
            create(conn)
            conn.execute("COMMIT")
        finally:
            conn.close()
        _fsync(partial)
        with contextlib.suppress(FileExistsError):  # another process created it first
            os.link(partial, path)
        _fsync(path.parent)
    except OSError as exc:
        raise unusable(path, f"cannot be created ({exc.strerror})", ACCESS) from exc
    except sqlite3.Error as exc:
        raise translate(path, exc) from exc
    finally:
        for leftover in [partial] + [
            partial.with_name(partial.name + suffix) for suffix in ("-journal", "-wal", "-shm")
        ]:
            with contextlib.suppress(OSError):
                os.unlink(leftover)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def probe(conn: sqlite3.Connection) -> None:
    """Read the schema and the first row of every table: the pages every request starts from.
    Cheap whatever the file's size (a handful of pages); a full check of every page is
    `PRAGMA quick_check`, left to the operator (docs/deployment.md)."""
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    for table in tables:
        conn.execute(f'SELECT * FROM "{table}" LIMIT 1').fetchall()
