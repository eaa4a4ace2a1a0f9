"""The SQLite engine: one database file, used from the event loop without ever blocking it.

Why plain `sqlite3` on our own threads rather than aiosqlite or apsw: aiosqlite gives every
connection a thread and hops to it once per statement; here a whole unit of work (a contact
upload, a page and its count) is one Python function that runs on the connection's thread in
one hop, inside one transaction, and the event loop awaits only its result. apsw would add a
compiled dependency for no gain over the standard library's module.

- Writes run on one writer thread per process, each unit in `BEGIN IMMEDIATE ... COMMIT`, so
  a unit is all or nothing and writers of several processes take turns through SQLite's own
  lock, first those that were waiting (turns.py), each waiting up to `timeout` seconds, then
  StoreBusy.
- Reads run on reader threads, each with its own connection; in WAL mode readers never wait
  for the writer and see the last committed state. Units that read a few rows by an index
  (`quick=True`: a key's check, one record, a page whose total is kept) run on one thread of
  their own, so that the hot paths hand Python's GIL between two threads only (with four
  threads taking turns, the event loop waited for them: docs/performance.md) and a long read
  (a count, the metrics, a timeline) on the other threads never holds them up.
- Every unit has a deadline: a statement still running at `timeout` is interrupted (a progress
  handler), so no request waits on the database longer than that.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from store.errors import StoreBusy, StoreDamaged, StoreError, StoreUnavailable
from store.sqlite.checkpoints import SCRUB_TIMEOUT, Checkpointer, scrub_log, truncate_log
from store.sqlite.opening import translate
from store.sqlite.threads import yield_on_wakeup
from store.sqlite.turns import Turns

log = logging.getLogger("workspace_api")

READERS = 3  # besides the quick one
READER_CACHE_KB = 8 * 1024
WRITER_CACHE_KB = 32 * 1024
# Bytes the write-ahead log is cut back to when it restarts after a checkpoint copied it whole
# (PRAGMA journal_size_limit): a log an import grew to hundreds of MB gives the disk back.
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024
PROGRESS_STEPS = 20_000  # virtual-machine steps between two deadline checks
# The writer copies no log itself (its connection's automatic checkpoint is off): a thread
# beside it does, after the writes, at most once per this many seconds (_checkpoints).
CHECKPOINT_PAUSE = 1.0
# Every connection to the file zeroes what it deletes (PRAGMA secure_delete): a deleted row's
# cell, a page put on the free list, an index entry. An erased value then survives in no free
# page of the file; the write-ahead log's old frames are the scrub's (Engine.scrub).
SECURE_DELETE = "PRAGMA secure_delete=ON"
T = TypeVar("T")


class _Workers:
    """Threads that run units from one queue and hand each result back to the event loop that
    asked for it: a hand-over each way, about half the Python of run_in_executor's chained
    concurrent.futures and asyncio futures. Results wait in `_done` for one wake-up of the loop:
    while the loop is busy, results that finish meanwhile share it (a wake-up is a write to the
    loop's self-pipe, a read there, and a hand-over of the GIL; docs/performance.md)."""

    def __init__(self, count: int, name: str, initializer: Callable[[], Any]):
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._done: collections.deque = collections.deque()
        self._waking: asyncio.AbstractEventLoop | None = None  # a drain is scheduled there
        self._threads = [
            threading.Thread(
                target=self._work, args=(initializer,), name=f"{name}_{index}", daemon=True
            )
            for index in range(count)
        ]
        for thread in self._threads:
            thread.start()

    def _work(self, initializer: Callable[[], Any]) -> None:
        yield_on_wakeup()  # a unit handed over does not take the core from the event loop
        # A thread must never die of its connection: the first unit opens it again and reports.
        with contextlib.suppress(Exception):
            initializer()
        while (item := self._queue.get()) is not None:
            loop, future, fn, args = item
            try:
                result, error = fn(*args), None
            except BaseException as exc:
                result, error = None, exc
            # Appended before `_waking` is read, and the drain clears `_waking` before it
            # empties `_done`: so a result is always in `_done` when a drain is still to run.
            self._done.append((loop, future, result, error))
            if self._waking is not loop:
                self._waking = loop
                with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                    loop.call_soon_threadsafe(self._drain, loop)
            del item, future, result, error

    def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the event loop: settle every result that is ready."""
        self._waking = None
        done = self._done
        while done:
            owner, future, result, error = done.popleft()
            if owner is loop:
                _settle(future, result, error)
            else:  # another loop's (a store used from two loops): settled on its own
                with contextlib.suppress(RuntimeError):
                    owner.call_soon_threadsafe(_settle, future, result, error)

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        future = asyncio.get_running_loop().create_future()
        self._queue.put((future.get_loop(), future, fn, args))
        return future

    def shutdown(self) -> None:
        """Let the units already queued finish, then stop the threads."""
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join()


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if not future.done():  # a cancelled waiter no longer wants it
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


SYNCHRONOUS = ("full", "normal")


class Engine:
    """The threads and connections of one database file (created and checked beforehand:
    store/sqlite/opening.py). `synchronous` is SQLite's `PRAGMA synchronous` (WAL mode):
    "full" makes every commit durable before it returns (an fsync of the log per commit),
    "normal" durable at the next checkpoint (a power loss may take the last commits back;
    a process crash never does)."""

    def __init__(
        self,
        path: str | os.PathLike,
        timeout: float = 5.0,
        readers: int = READERS,
        synchronous: str = "full",
    ):
        if synchronous not in SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {SYNCHRONOUS}, not {synchronous!r}")
        self.path = Path(path)
        self.timeout = timeout
        self.synchronous = synchronous
        self._busy_ms = int(timeout * 1000)
        # The writer thread's turns with the writers of other processes on the file.
        self._turns = Turns(self.path)
        # Why the file cannot be used, once a unit has found it damaged: it stays damaged until
        # an operator restores it (readiness fails meanwhile).
        self.damage: StoreDamaged | None = None
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        # Each thread opens its connection as it starts, so that the files a process holds open
        # do not change while it serves.
        self._writer = _Workers(1, "sqlite-writer", self._connection)
        self._quick = _Workers(1, "sqlite-quick", self._connection)
        self._readers = _Workers(readers, "sqlite-reader", self._connection)
        self._closed = False
        # Whether a write unit is running its statements, and who waits for it to stop
        # (statements_done), under _lock.
        self._in_statements = False
        self._quiet: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        # Checkpoints beside the writer (checkpoint_beside): the thread, every how many units
        # the writer copies the log itself, and the units since.
        self._checkpointer: Checkpointer | None = None
        self._checkpoint_every = 0
        self._units = 0
        # The thread that copies the log after ordinary writes (_checkpoints), once one wrote.
        self._between_writes: Checkpointer | None = None
        # Fault injection for the tests of what a failure mid-write leaves behind: when set,
        # it is asked every `progress_steps` virtual-machine steps whether to fail the unit.
        self.fault: Callable[[], bool] | None = None
        self.progress_steps = PROGRESS_STEPS

    # -- connections (one per thread) ---------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path,
                timeout=self.timeout,
                isolation_level=None,
                check_same_thread=False,
                cached_statements=256,
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(SECURE_DELETE)
            conn.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
            # Page cache: the writer's is larger (index pages of bulk inserts stay hot); readers
            # mostly touch a few pages per query and share the OS page cache beneath.
            writer = threading.current_thread().name.startswith("sqlite-writer")
            conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KB if writer else READER_CACHE_KB}")
            if writer:
                # A commit never copies the log into the file before its write is answered
                # (with an import beside it, the log holds the import's units: copying them
                # took a write up to seconds); the thread of _checkpoints does.
                conn.execute("PRAGMA wal_autocheckpoint=0")
            conn.execute(f"PRAGMA busy_timeout={self._busy_ms}")
            # A log that grew large (an import) is cut back to this when it next restarts.
            conn.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def _discard(self, conn: sqlite3.Connection) -> None:
        """Close this thread's connection (the next unit opens a fresh one)."""
        self._local.conn = None
        with self._lock:
            if conn in self._connections:
                self._connections.remove(conn)
        with contextlib.suppress(sqlite3.Error):
            conn.close()

    def _run(
        self,
        fn: Callable[..., T],
        args: tuple,
        write: bool,
        deadline: float,
        snapshot: bool = True,
        durable: bool = True,
    ) -> T:
        if time.monotonic() >= deadline:  # waited in the queue past its deadline: not started
            raise StoreBusy("the database stayed busy for too long")
        lax = write and not durable and self.synchronous == "full"
        try:
            conn = self._connection()
            if lax:  # this commit alone waits for no fsync; the next durable one syncs it too
                conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc
        fault = self.fault
        conn.set_progress_handler(
            lambda: time.monotonic() > deadline or bool(fault and fault()), self.progress_steps
        )
        try:
            # A read unit is one read transaction too (a page and its count see one snapshot),
            # unless it is a single statement, which sees one snapshot anyway.
            try:
                if write:
                    # After the writers of other processes that were waiting (turns.py).
                    if not self._turns.begin(conn, deadline, self._busy_ms):
                        raise StoreBusy("the database stayed busy for too long")
                    # The unit's statements, from its BEGIN up to its COMMIT (statements_done:
                    # waiting for the write lock above does not count).
                    self._statements(True)
                    try:
                        result = fn(conn, *args)
                    finally:
                        self._statements(False)
                else:
                    if snapshot:
                        conn.execute("BEGIN")
                    result = fn(conn, *args)
                if write or snapshot:
                    conn.execute("COMMIT")
                checkpointer = self._checkpointer
                if write and checkpointer is not None:
                    self._checkpoint_after_unit(conn, checkpointer)
                elif write:
                    self._checkpoints().request()
            except BaseException:
                # Whatever failed (the unit, or its COMMIT), nothing of it stays; an interrupted
                # statement may have rolled the transaction back already.
                conn.set_progress_handler(None, 0)  # the rollback itself must not be interrupted
                try:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                except sqlite3.Error:
                    self._discard(conn)  # closing it rolls back whatever is left
                raise
            return result
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc
        finally:
            conn.set_progress_handler(None, 0)
            if lax and self._local.conn is conn:
                try:
                    conn.execute("PRAGMA synchronous=FULL")
                except sqlite3.Error:
                    self._discard(conn)  # never left lax: the next unit opens a fresh one

    def _checkpoint_after_unit(self, conn: sqlite3.Connection, checkpointer: Checkpointer) -> None:
        """On the writer thread, after a unit's COMMIT, with checkpoints beside the writer: ask
        the checkpoint thread to copy the log; every `_checkpoint_every` units, wait for it and
        copy the rest here, so that the log is copied whole and the next unit starts it over
        (the log never holds more than that many units)."""
        self._units += 1
        if self._units % self._checkpoint_every:
            checkpointer.request()
            return
        checkpointer.wait(self.timeout)
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error:  # the unit is committed: the next one tries again
            log.warning("a checkpoint after a write failed")

    def checkpoint_beside(self, every: int) -> Callable[[], None]:
        """From now on (on the writer thread: call it inside a write unit) the writer leaves
        checkpoints to a thread of their own, which copies the log while the writer runs its next
        unit, and copies the log itself every `every` units; SQLite's automatic checkpoints
        are off on the writer's connection. Returns the function that ends this (on the event
        loop's thread, once no write is under way), after which a fresh writer connection
        (renew_writer) checkpoints as usual again."""
        conn = self._connection()
        conn.execute("PRAGMA wal_autocheckpoint=0")
        self._checkpoint_every, self._units = every, 0
        self._checkpointer = Checkpointer(self._checkpoint_connection)

        def end() -> None:
            checkpointer, self._checkpointer = self._checkpointer, None
            if checkpointer is not None:
                checkpointer.stop()

        return end

    def _checkpoints(self) -> Checkpointer:
        """On the writer thread: the thread that copies the log after ordinary writes, at most
        once per CHECKPOINT_PAUSE (made at the first write of this process)."""
        checkpoints = self._between_writes
        if checkpoints is None or checkpoints.pid != os.getpid():
            checkpoints = Checkpointer(
                self._checkpoint_connection, CHECKPOINT_PAUSE, "sqlite-checkpoint-after-writes"
            )
            self._between_writes = checkpoints
        return checkpoints

    def _checkpoint_connection(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(SECURE_DELETE)
        conn.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
        return conn

    def _statements(self, running: bool) -> None:
        """On the writer thread: a unit starts or stops running its statements."""
        with self._lock:
            self._in_statements = running
            if running or not self._quiet:
                return
            waiting, self._quiet = self._quiet, []
        for loop, future in waiting:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                loop.call_soon_threadsafe(_settle, future, None, None)

    async def statements_done(self) -> None:
        """Return once no write unit of this process is running its statements: the writer is
        idle, waiting for the file's write lock, or committing, none of which needs Python's
        GIL. A caller with much Python work of its own beside large write units (the import)
        awaits it between slices of that work: while a unit runs its statements the writer takes
        the GIL for every row, and each time it waits for the caller's thread to hand it over
        (docs/performance.md)."""
        with self._lock:
            if not self._in_statements:
                return
            future = asyncio.get_running_loop().create_future()
            self._quiet.append((future.get_loop(), future))
        await future

    def _failed(self, exc: sqlite3.Error) -> StoreError:
        """The store error of a unit's SQLite error; a damaged file is logged once."""
        error = translate(self.path, exc)
        if isinstance(error, StoreDamaged):
            with self._lock:  # (units of several threads may find it at once)
                first, self.damage = self.damage is None, self.damage or error
            if first:
                log.error(
                    "%s; meanwhile the requests that read the damaged pages get 503, and so "
                    "does /readyz",
                    error,
                )
        return error

    def run_once(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` in a write transaction on a connection of the calling thread, closed
        afterwards (start-up work, before the event loop uses the store)."""
        try:
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(SECURE_DELETE)
                conn.execute("BEGIN IMMEDIATE")
                result = fn(conn)
                conn.execute("COMMIT")
                return result
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise translate(self.path, exc) from exc

    async def _submit(
        self,
        pool: _Workers,
        fn: Callable[..., T],
        args: tuple,
        write: bool,
        timeout: float | None,
        snapshot: bool = True,
        durable: bool = True,
    ) -> T:
        if self._closed:
            raise StoreUnavailable("the store is closed")
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        return await pool.submit(self._run, fn, args, write, deadline, snapshot, durable)

    async def read(
        self,
        fn: Callable[..., T],
        *args: Any,
        timeout: float | None = None,
        snapshot: bool = True,
        quick: bool = False,
    ) -> T:
        """Run `fn(conn, *args)` on a reader thread, in one read transaction; its result.
        `snapshot=False` leaves the transaction out, for a unit of one statement (which sees
        one snapshot by itself) that would otherwise pay two more statements. `quick=True`
        for a unit bounded by an index to a few rows: it runs on the quick thread."""
        return await self._submit(
            self._quick if quick else self._readers, fn, args, False, timeout, snapshot
        )

    async def write(
        self, fn: Callable[..., T], *args: Any, timeout: float | None = None, durable: bool = True
    ) -> T:
        """Run `fn(conn, *args)` in one write transaction on the writer thread; its result.
        `durable=False` (bookkeeping that is redone when lost, like the webhook dispatcher's
        claims) commits without waiting for the disk even under `synchronous="full"`: a power
        loss may take it back, with whatever commits came after it and before the next durable
        one (the log is written in order); a process crash never does."""
        return await self._submit(self._writer, fn, args, True, timeout, durable=durable)

    async def truncate_log(self) -> bool:
        """On the writer thread, outside any unit: copy the whole write-ahead log into the file
        and truncate it to nothing (a TRUNCATE checkpoint), after a run of large writes left it
        at its peak size. False when readers or another process's writer kept it from
        finishing within the busy timeout (journal_size_limit trims it at the log's next
        restart then)."""

        def truncate() -> bool:
            try:
                return truncate_log(self._connection())
            except sqlite3.Error:
                log.warning("truncating the write-ahead log failed; the next restart trims it")
                return False

        return await self._writer.submit(truncate)

    async def scrub(self, timeout: float = SCRUB_TIMEOUT) -> bool:
        """Truncate the write-ahead log to nothing, trying again while readers of any process
        hold snapshots in it, for at most `timeout` seconds: whether it did
        (store/sqlite/checkpoints.py). With secure_delete the file holds no deleted content;
        afterwards the log holds no old frame either."""
        if self._closed:
            raise StoreUnavailable("the store is closed")
        try:
            return await scrub_log(self.path, timeout)
        except sqlite3.Error as exc:
            raise self._failed(exc) from exc

    async def renew_writer(self) -> None:
        """Close the writer thread's connection; the next write opens a fresh one."""
        await self._writer.submit(lambda: self._discard(self._connection()))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._writer.shutdown()
        self._quick.shutdown()
        self._readers.shutdown()
        checkpoints, self._between_writes = self._between_writes, None
        if checkpoints is not None and checkpoints.pid == os.getpid():
            checkpoints.stop()
        with self._lock:
            for conn in self._connections:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
            self._connections.clear()
        self._turns.close()
