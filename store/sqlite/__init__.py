"""The SQLite backend: the embedded default store, a real indexed, transactional database file
(WAL mode), shared by every process of one host that opens the same file."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import datetime as dt
import shutil
import sqlite3
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from store.clock import SYSTEM_CLOCK, Clock
from store.errors import StoreDamaged
from store.sqlite import activities, calls, dnc, lists, opening, prospects, schema, users
from store.sqlite.activities import Activities
from store.sqlite.calls import Calls
from store.sqlite.engine import Engine
from store.sqlite.erasures import Erasures
from store.sqlite.events import Events, EventWriter
from store.sqlite.idempotency import Idempotency, delete_expired_idempotency
from store.sqlite.keys import Keys
from store.sqlite.lists import Lists
from store.sqlite.metrics import DialerMetrics, build_quarters
from store.sqlite.prospects import Prospects
from store.sqlite.provider_calls import ProviderCalls, delete_expired_provider_calls
from store.sqlite.ratecounts import SharedCounters, counters_path
from store.sqlite.settings import Settings
from store.sqlite.tombstones import sweep_tombstones
from store.sqlite.users import Users
from store.sqlite.webhook_deliveries import WebhookDeliveries
from store.sqlite.webhook_endpoints import WebhookEndpoints
from store.sqlite.workspaces import Workspaces

BULK_INDEXES = ("calls_", "activities_")
INDEX_BUILD_TIMEOUT = 900.0
BULK_CACHE_KB = 128 * 1024  # the writer's page cache during a bulk load (then WRITER_CACHE_KB)
# The writer's page cache during heavy writes (the import): the index pages that batches of new
# calls land on stay in memory, rather than being read again for every batch.
HEAVY_CACHE_KB = 256 * 1024
# During heavy writes a thread of their own copies the write-ahead log into the file while the
# writer writes its next unit, and the writer copies it whole every this many units.
HEAVY_CHECKPOINT_EVERY = 4
# During heavy writes the writer reads the file's pages through a memory map of this size (the
# most this build of SQLite maps): an index page that is not in its page cache costs a memory
# access, not a read() and a copy. Writes still go through write().
HEAVY_MMAP_BYTES = 0x7FFF0000


def release_free_memory() -> None:
    """Hand memory that has been freed back to the system (glibc keeps it in the heap for later
    otherwise: after a bulk load, the larger page cache's worth)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


class SQLiteStore:
    backend = "sqlite"
    embedded = True

    @property
    def process_private(self) -> bool:
        """A throwaway file is this process's alone: the rate limiter counts in memory."""
        return self.throwaway

    def __init__(
        self,
        path: str | Path,
        timeout: float = 5.0,
        default_region: str = "US",
        throwaway_dir: str | None = None,
        synchronous: str = "full",
        clock: Clock = SYSTEM_CLOCK,
    ):
        self.path = Path(path)
        self.clock = clock
        # A file that cannot be used ends here, with StoreUnusable naming what is wrong; a new
        # one is created whole (store/sqlite/opening.py).
        opening.check(self.path, schema.create)
        self.engine = Engine(self.path, timeout, synchronous=synchronous)
        self._throwaway_dir = throwaway_dir  # removed at close: `MONGODB_URI=memory`
        try:
            # The schema exists before the store is used (once, at start-up): every table and
            # index is created idempotently, so opening an older or a new file is the same.
            # Then the pages every request starts from are read once.
            self.engine.run_once(schema.create)
            self.engine.run_once(build_quarters)
            self.engine.run_once(opening.probe)
            self.ratelimits = SharedCounters(counters_path(self.path))
        except BaseException:
            self.engine.close()
            raise
        # Every write unit of the families below records its events through this one writer.
        self.event_writer = EventWriter(
            {
                "call": calls.EVENT_SOURCE,
                "prospect": prospects.EVENT_SOURCE,
                "list": lists.EVENT_SOURCE,
                "activity": activities.EVENT_SOURCE,
                "user": users.EVENT_SOURCE,
                "do_not_call": dnc.EVENT_SOURCE,
            },
            clock,
        )
        self.workspaces = Workspaces(self.engine, clock)
        self.users = Users(self.engine, self.event_writer, clock)
        self.keys = Keys(self.engine, clock)
        self.lists = Lists(self.engine, self.event_writer)
        self.prospects = Prospects(self.engine, self.event_writer, default_region)
        self.calls = Calls(self.engine, self.event_writer, default_region)
        self.activities = Activities(self.engine, self.event_writer)
        self.do_not_call = dnc.DoNotCall(self.engine, self.event_writer, default_region)
        self.events = Events(self.engine)
        self.webhook_endpoints = WebhookEndpoints(self.engine)
        self.erasures = Erasures(self.engine, self.event_writer)
        self.webhook_deliveries = WebhookDeliveries(self.engine)
        self.metrics = DialerMetrics(self.engine)
        self.settings = Settings(self.engine)
        self.idempotency = Idempotency(self.engine)
        self.provider_calls = ProviderCalls(self.engine)
        self.indexes_ready = False

    @property
    def throwaway(self) -> bool:
        return self._throwaway_dir is not None

    async def ensure_indexes(self, build_timeout: float = 600) -> None:
        """Create the tables and indexes (idempotent; done at open, so a check here)."""
        await self.engine.write(schema.create, timeout=build_timeout)
        self.indexes_ready = True

    @contextlib.asynccontextmanager
    async def bulk_load(self, defer_indexes: bool = True) -> AsyncIterator[None]:
        """Around a first load of history that nothing reads meanwhile (the demo's seeding):
        its writes record no events. With `defer_indexes` the secondary indexes of calls and
        activities are dropped, and built at the end from the sorted rows at once, which is
        faster than keeping seven indexes up to date row by row (`demo --calls 1000000`:
        docs/performance.md). Should the process die meanwhile, the next open builds them
        (schema.create)."""
        deferred = [name for name in schema.INDEXES if name.startswith(BULK_INDEXES)]

        def drop(conn: sqlite3.Connection) -> None:
            for name in deferred:
                conn.execute(f"DROP INDEX IF EXISTS {name}")
            conn.execute(f"PRAGMA cache_size=-{BULK_CACHE_KB}")

        if defer_indexes:
            await self.engine.write(drop)
        self.event_writer.enabled = False
        try:
            yield
        finally:
            self.event_writer.enabled = True
            if defer_indexes:
                await self.engine.write(schema.create, timeout=INDEX_BUILD_TIMEOUT)
                # A fresh writer connection, with the usual cache: closing this one hands back
                # what the load made it hold (its cache, the index builds' sorting).
                await self.engine.renew_writer()
                release_free_memory()

    @contextlib.asynccontextmanager
    async def heavy_writes(self) -> AsyncIterator[Callable[[], Awaitable[None]]]:
        """Around a long run of large write batches (the import): this process's writer gets a
        page cache of HEAVY_CACHE_KB and reads the file through a memory map meanwhile
        (HEAVY_MMAP_BYTES), and leaves checkpoints to a thread beside it
        (Engine.checkpoint_beside); at the end the write-ahead log is truncated (its size at
        the peak was the import's, not the database's), then a fresh connection as usual.
        Yields the pace of the caller's own Python work: Engine.statements_done."""

        ends: list[Callable[[], None]] = []

        def grow(conn: sqlite3.Connection) -> None:
            conn.execute(f"PRAGMA cache_size=-{HEAVY_CACHE_KB}")
            conn.execute(f"PRAGMA mmap_size={HEAVY_MMAP_BYTES}")
            ends.append(self.engine.checkpoint_beside(HEAVY_CHECKPOINT_EVERY))

        await self.engine.write(grow)
        try:
            yield self.engine.statements_done
        finally:
            for end in ends:
                end()
            # The log is at its peak (about four batches' pages): back to nothing on disk.
            await self.engine.truncate_log()
            await self.engine.renew_writer()
            release_free_memory()

    async def ping(self, timeout: float = 2.0) -> bool:
        try:
            async with asyncio.timeout(timeout):
                await self.engine.read(lambda conn: conn.execute("SELECT 1"))
        except Exception:
            return False
        return True

    async def readiness(self, timeout: float = 2.0) -> str | None:
        """None when the file can serve: no request has found it damaged, and the schema and
        the first row of every table read (a few pages: cheap at any size). Otherwise why not."""
        if self.engine.damage is None:
            try:
                async with asyncio.timeout(timeout):
                    await self.engine.read(opening.probe, quick=True)
            except StoreDamaged:
                pass
            except Exception:
                return "the database is not usable"
        return "the database is damaged" if self.engine.damage is not None else None

    async def sweep_expired(
        self, now: dt.datetime, batch: int = 1000, max_batches: int = 10
    ) -> int:
        """Delete expired Idempotency-Key records and provider call states in bounded batches;
        how many were deleted. (Rate-limit windows reuse their slots in the counters file;
        SQLite needs no leases.)"""
        deleted = 0
        for delete in (delete_expired_idempotency, delete_expired_provider_calls):
            for _ in range(max_batches):
                found = await self.engine.write(delete, now, batch)
                deleted += found
                if found < batch:
                    break
        return deleted

    async def sweep_tombstones(
        self, horizon: dt.datetime, batch: int = 1000, max_batches: int = 10
    ) -> int:
        """Delete tombstones of prospects and lists deleted before `horizon` in bounded
        batches (store/sqlite/tombstones.py); how many."""
        return await sweep_tombstones(self.engine, horizon, batch, max_batches)

    async def scrub(self, timeout: float = 30.0) -> bool | None:
        """Truncate the write-ahead log to nothing (Engine.scrub): with secure_delete on every
        connection, no deleted value survives in the file or its log afterwards. Whether it
        did within `timeout` seconds (readers holding snapshots can keep it from it)."""
        return await self.engine.scrub(timeout)

    async def documents(self, collection: str) -> list[dict]:
        """Every stored row of a table as a document (operators and tests; never a request)."""
        if collection not in schema.TABLES:
            raise ValueError(f"no table {collection}")

        def rows(conn):
            order = '"_id"' if "_id" in schema.TABLES[collection] else "1"
            return [
                schema.to_doc(row)
                for row in conn.execute(f"SELECT * FROM {collection} ORDER BY {order}")
            ]

        return await self.engine.read(rows)

    async def collections(self) -> list[str]:
        return list(schema.TABLES)

    async def drop(self) -> None:
        """Drop every table (their indexes go with them) and forget the rate-limit windows."""

        def drop(conn: sqlite3.Connection) -> None:
            for table in schema.TABLES:
                conn.execute(f"DROP TABLE IF EXISTS {table}")

        self.indexes_ready = False
        await self.engine.write(drop)
        await self.ratelimits.clear()

    async def close(self) -> None:
        """Close the connections (waiting for the work in flight, on a thread of its own: never
        on the event loop) and remove a throwaway file."""
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        self.engine.close()
        self.ratelimits.close()
        if self._throwaway_dir:
            shutil.rmtree(self._throwaway_dir, ignore_errors=True)


def open_sqlite(
    path: str | None,
    timeout: float = 5.0,
    default_region: str = "US",
    synchronous: str = "full",
    clock: Clock = SYSTEM_CLOCK,
) -> SQLiteStore:
    """The store in the SQLite file at `path`; None makes a throwaway file, removed at close
    (which syncs nothing to disk: `synchronous` does not apply to what is thrown away)."""
    if path is None:
        directory = tempfile.mkdtemp(prefix="workspace-api-")
        path = str(Path(directory) / "store.sqlite3")
        return SQLiteStore(
            path, timeout, default_region, directory, synchronous="normal", clock=clock
        )
    return SQLiteStore(
        Path(path).expanduser(), timeout, default_region, synchronous=synchronous, clock=clock
    )
