"""The MongoDB backend: one database handle of PyMongo's asyncio client (AsyncMongoClient) and
the collection families built on it. Production at scale: replica sets, sharding, many hosts
sharing one database. Driver errors leave it as store.errors (store/mongo/errors.py)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator, Awaitable, Callable

import pymongo
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from store.clock import SYSTEM_CLOCK, Clock
from store.mongo.activities import Activities, fill_stored_at
from store.mongo.calls import Calls
from store.mongo.dnc import DoNotCall
from store.mongo.erasures import Erasures
from store.mongo.errors import driver_errors, translate_errors
from store.mongo.events import Events, EventWriter
from store.mongo.expiry import sweep_expired
from store.mongo.idempotency import Idempotency
from store.mongo.indexes import ensure_indexes
from store.mongo.keys import Keys
from store.mongo.lists import Lists
from store.mongo.metrics import DialerMetrics, fill_metric_fields
from store.mongo.prospects import Prospects
from store.mongo.provider_calls import ProviderCalls
from store.mongo.ratelimits import RateLimits
from store.mongo.settings import Settings
from store.mongo.tombstones import GRACE as TOMBSTONE_GRACE
from store.mongo.tombstones import sweep_tombstones
from store.mongo.users import Users
from store.mongo.webhook_deliveries import WebhookDeliveries
from store.mongo.webhook_endpoints import WebhookEndpoints
from store.mongo.workspaces import Workspaces


async def _no_pause() -> None:
    return None


@translate_errors
class MongoStore:
    backend = "mongodb"
    embedded = False
    process_private = False

    def __init__(
        self,
        db: AsyncDatabase,
        client: AsyncMongoClient,
        default_region: str = "US",
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.db = db
        self.clock = clock
        self.client = client
        # Every write of the families below marks its documents and records its events through
        # this one writer (store/mongo/events.py).
        self.event_writer = EventWriter(db, clock)
        self.workspaces = Workspaces(db, clock)
        self.users = Users(db, self.event_writer, clock)
        self.keys = Keys(db, clock)
        self.lists = Lists(db, self.event_writer)
        self.prospects = Prospects(db, self.event_writer, default_region)
        self.calls = Calls(db, self.event_writer, default_region)
        self.activities = Activities(db, self.event_writer)
        self.do_not_call = DoNotCall(db, self.event_writer, default_region)
        self.events = Events(db, self.event_writer)
        self.webhook_endpoints = WebhookEndpoints(db)
        self.erasures = Erasures(db, self.event_writer, self.prospects)
        self.webhook_deliveries = WebhookDeliveries(db)
        self.metrics = DialerMetrics(db)
        self.ratelimits = RateLimits(db)
        self.idempotency = Idempotency(db)
        self.provider_calls = ProviderCalls(db)
        self.settings = Settings()
        # False until ensure_indexes() has succeeded: the API answers 503 until then, because
        # the unique indexes are what keeps concurrent writes free of duplicates.
        self.indexes_ready = False
        # Whether the server keeps TTL indexes (known once the indexes are ensured).
        self.ttl_indexes: bool | None = None

    async def ensure_indexes(self, build_timeout: float = 600) -> None:
        # The ping fails fast (timeoutMS) when the server is away; the index builds then get
        # longer, as a first build on a large collection may outlast the per-operation timeout.
        await self.db.command("ping")
        with pymongo.timeout(build_timeout):
            self.ttl_indexes = await ensure_indexes(self.db)
            await fill_stored_at(self.db)
        self.indexes_ready = True
        # Calls stored before they carried their metrics fields get them once, in small
        # batches; the API serves meanwhile (a report counts such calls one by one).
        await fill_metric_fields(self.db)

    async def sweep_expired(
        self, now: dt.datetime, batch: int = 1000, max_batches: int = 10
    ) -> int:
        """Delete expired Idempotency-Key records, rate-limit windows and leases in bounded
        batches (store/mongo/expiry.py); how many were deleted."""
        return await sweep_expired(self.db, now, batch, max_batches)

    async def sweep_tombstones(
        self, horizon: dt.datetime, batch: int = 1000, max_batches: int = 10
    ) -> int:
        """Finish deletes that stopped half-way, then delete tombstones of prospects and lists
        deleted before `horizon` in bounded batches (store/mongo/tombstones.py); how many
        tombstones were deleted."""
        # The prospects family's own repair, run here for want of a contract method: only
        # MongoDB has deletes that can stop half-way.
        await self.prospects._finish_deletes(self.clock.now() - TOMBSTONE_GRACE, batch)
        return await sweep_tombstones(self.db, horizon, batch, max_batches)

    @contextlib.asynccontextmanager
    async def bulk_load(self, defer_indexes: bool = True) -> AsyncIterator[None]:
        """Around a first load of history (the demo's seeding): its writes record no events.
        The indexes stay (`defer_indexes` is not used): the unique ones must stay in place
        while documents arrive."""
        self.event_writer.enabled = False
        try:
            yield
        finally:
            self.event_writer.enabled = True

    @contextlib.asynccontextmanager
    async def heavy_writes(self) -> AsyncIterator[Callable[[], Awaitable[None]]]:
        """Around a long run of large write batches: nothing to change on MongoDB, and no
        pace to keep (the driver's work is the caller's own)."""
        yield _no_pause

    async def ping(self, timeout: float = 2.0) -> bool:
        try:
            async with asyncio.timeout(timeout):
                await self.db.command("ping")
        except Exception:
            return False
        return True

    async def readiness(self, timeout: float = 2.0) -> str | None:
        """None when the server answers a ping within `timeout` seconds."""
        return None if await self.ping(timeout) else "the database is not reachable"

    async def scrub(self, timeout: float = 30.0) -> bool | None:
        """Nothing to do for bytes on MongoDB (None): an erasure's deletes removed or rewrote
        the documents themselves; what the server's storage engine keeps of them afterwards
        (WiredTiger's free space, the oplog, journal, backups) is beyond the driver's reach and
        documented, not claimed (docs/deployment.md)."""
        return None

    async def collections(self) -> list[str]:
        return await self.db.list_collection_names()

    async def drop(self) -> None:
        """Drop the database (every collection with its indexes)."""
        self.indexes_ready = False
        await self.client.drop_database(self.db.name)

    async def close(self) -> None:
        await self.client.close()

    async def documents(self, collection: str) -> list[dict]:
        """Every stored document of a collection (operators and tests; never a request)."""
        return await self.db[collection].find({}).sort("_id").to_list()


def open_mongo(
    uri: str,
    database: str,
    timeout_seconds: float = 5.0,
    default_region: str = "US",
    clock: Clock = SYSTEM_CLOCK,
) -> MongoStore:
    ms = int(timeout_seconds * 1000)
    with driver_errors():  # a malformed URI
        client: AsyncMongoClient = AsyncMongoClient(
            uri,
            # timeoutMS bounds every operation as a whole (selection, connection, server time), so
            # a request never waits longer than this on the database: it gets a 503 instead.
            timeoutMS=ms,
            serverSelectionTimeoutMS=ms,
            connectTimeoutMS=ms,
            socketTimeoutMS=max(ms, 30000),
            tz_aware=False,
            appname="workspace-data-api",
        )
    return MongoStore(client[database], client, default_region, clock)
