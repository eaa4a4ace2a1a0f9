"""The rate limit's window counters on the embedded store: a table in a memory-mapped file
beside the database (`<database>-ratelimit`, owner-only, its blocks allocated for real when it
is created), shared by every process that opens the same database file, and counted exactly
under a `flock` lock.

Why not a row in the database: every request would pay a write transaction on the writer
thread (a thread hand-over each way and a commit, about 100-200 us of CPU), where this costs a
few microseconds on the event loop itself (docs/performance.md "The rate limiter"). Every
process that can share a SQLite file runs on the same host, so a file they all map is as
shared as the database, and `flock` locks are released by the kernel if a process dies
holding one. The lock is only ever tried without blocking, through a call that keeps Python's
GIL (ctypes.PyDLL): a lock call that let go of the GIL would make the event loop wait for the
database threads to hand it back, which cost more than the counting itself.

The table: a header, then SLOTS slots of (workspace key, window start, expiry, count), the
key being a 16-byte BLAKE2b digest of the workspace id (stable across processes, unlike
Python's `hash`). A workspace's window lives in the first usable slot from its key's hash
(open addressing, linear probing); a slot whose window has expired is reused, and a slot never
used ends a search. A request that finds the lock taken tries again on the next turn of the
event loop, for at most LOCK_WAIT seconds, then gets the store's 503. More windows alive at
once than SLOTS (tens of thousands of workspaces making requests within the same two minutes,
far past what one SQLite file serves) answer 503 too, rather than count inexactly.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import datetime as dt
import errno
import fcntl
import hashlib
import mmap
import os
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from store.errors import StoreBusy, StoreUnusable
from store.sqlite.schema import ms

MAGIC = b"WSAPI-RL-1\0\0\0\0\0\0"
SLOT = struct.Struct("<16sqqq")  # workspace key, window start (ms), expiry (ms), count
SLOTS = 65_536
HEADER = len(MAGIC)
SIZE = HEADER + SLOTS * SLOT.size
EMPTY = bytes(16)
LOCK_WAIT = 2.0
T = TypeVar("T")

_libc = ctypes.PyDLL(None, use_errno=True)  # PyDLL: the call keeps the GIL
_flock = _libc.flock
_flock.argtypes = (ctypes.c_int, ctypes.c_int)
_flock.restype = ctypes.c_int


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock if it is free, without blocking; False if another holds it."""
    if _flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EINTR):
        return False
    raise OSError(code, os.strerror(code))


def _allocate(fd: int) -> None:
    """Give every block of the file disk space (an OSError such as ENOSPC when there is none)."""
    if hasattr(os, "posix_fallocate"):
        os.posix_fallocate(fd, 0, SIZE)
    elif os.fstat(fd).st_blocks * 512 < SIZE:  # sparse, where there is no posix_fallocate
        os.ftruncate(fd, HEADER)  # (counting starts again) every block written below
        os.pwrite(fd, bytes(SIZE - HEADER), HEADER)
        os.fsync(fd)


def counters_path(database: Path) -> Path:
    return database.with_name(database.name + "-ratelimit")


class SharedCounters:
    """`store.ratelimits` of the SQLite store (the interface of server.ratelimit's counters)."""

    def __init__(self, path: Path):
        self.path = path
        self._open()

    def _open(self) -> None:
        """Open and map the file (again in a forked child: a `flock` belongs to the open file,
        which a child would otherwise share with its parent, and so not exclude it).

        Every block of the file is allocated for real (posix_fallocate) before it is mapped,
        also when an older version left it sparse: a store to a page of a memory-mapped file
        that has no disk block behind it, on a full disk, is a SIGBUS that kills the process.
        Allocated, the counters keep working when the disk fills up."""
        self.pid = os.getpid()
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise self._unusable("cannot be opened", exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # blocking, once at start-up: set the file up
            try:
                if os.fstat(fd).st_size != SIZE or os.pread(fd, HEADER, 0) != MAGIC:
                    os.ftruncate(fd, 0)  # unknown or torn: counting starts again
                    os.ftruncate(fd, SIZE)
                    os.pwrite(fd, MAGIC, 0)
                _allocate(fd)
            except OSError as exc:
                raise self._unusable(f"cannot be given its {SIZE:,} bytes", exc) from exc
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            self.map = mmap.mmap(fd, SIZE)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd

    def _unusable(self, what: str, exc: OSError) -> StoreUnusable:
        return StoreUnusable(
            f"the rate-limit counters file {self.path} {what} ({exc.strerror}): free space on "
            "its file system, or check its permissions (it lives beside the database file)"
        )

    async def hit(
        self, workspace_id: str, window_start: dt.datetime, expire_at: dt.datetime
    ) -> int:
        """Count one request in the workspace's window; returns the window's count so far."""
        return await self._locked(self._hit, workspace_id, ms(window_start), ms(expire_at))

    async def count(self, workspace_id: str, window_start: dt.datetime) -> int:
        """The window's count without counting a request (tests and diagnostics)."""
        return await self._locked(self._hit, workspace_id, ms(window_start), None)

    async def clear(self) -> None:
        """Forget every window (the store's `drop`)."""
        await self._locked(self._clear)

    def _clear(self) -> None:
        self.map[HEADER:] = bytes(SIZE - HEADER)

    async def _locked(self, fn: Callable[..., T], *args: Any) -> T:
        if os.getpid() != self.pid:
            self.close()
            self._open()
        deadline = time.monotonic() + LOCK_WAIT
        while not _try_lock(self.fd):
            if time.monotonic() > deadline:
                raise StoreBusy("the rate-limit counters stayed locked for too long")
            await asyncio.sleep(0.0005)  # another process is counting: microseconds
        try:
            return fn(*args)
        finally:
            _flock(self.fd, fcntl.LOCK_UN)

    def _hit(self, workspace_id: str, start: int, expire: int | None) -> int:
        """Under the lock: add one to the window's count (or, with `expire` None, only read it)."""
        key = hashlib.blake2b(workspace_id.encode(), digest_size=16).digest()
        first = int.from_bytes(key[:8], "little") % SLOTS
        free = None
        for probe in range(SLOTS):
            offset = HEADER + (first + probe) % SLOTS * SLOT.size
            stored, stored_start, stored_expire, count = SLOT.unpack_from(self.map, offset)
            if stored == key and stored_start == start:
                if expire is not None:
                    count += 1
                    SLOT.pack_into(self.map, offset, key, start, stored_expire, count)
                return count
            if stored == EMPTY:  # never used: the window is not further on
                free = offset if free is None else free
                break
            if free is None and stored_expire <= start:  # over everywhere: reusable
                free = offset
        if expire is None:
            return 0
        if free is None:
            raise StoreBusy("more rate-limit windows are open than the counter table holds")
        SLOT.pack_into(self.map, free, key, start, expire, 1)
        return 1

    def close(self) -> None:
        with contextlib.suppress(BufferError, ValueError):
            self.map.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)
