"""The Store: one motor database handle and the collection families built on it.

`open_store("memory", ...)` uses the embedded in-process mongomock-motor backend;
`open_store("mongodb://...", ...)` uses motor against a real MongoDB. Both expose the same
motor-shaped API, and nothing in store/ may rely on a quirk of the embedded one.
"""

from __future__ import annotations

import asyncio

import pymongo

from store.activities import Activities
from store.calls import Calls
from store.indexes import ensure_indexes
from store.keys import Keys
from store.lists import Lists
from store.metrics import DialerMetrics
from store.prospects import Prospects
from store.ratelimits import RateLimits
from store.users import Users
from store.workspaces import Workspaces


class StoreUnavailable(Exception):
    """The database did not answer in time; the request should be retried later."""


class Store:
    def __init__(self, db, client, embedded: bool, default_region: str = "US"):
        self.db = db
        self.client = client
        self.embedded = embedded
        self.workspaces = Workspaces(db)
        self.users = Users(db)
        self.keys = Keys(db)
        self.lists = Lists(db)
        self.prospects = Prospects(db, default_region)
        self.calls = Calls(db)
        self.activities = Activities(db)
        self.metrics = DialerMetrics(db)
        self.ratelimits = RateLimits(db)
        # False until ensure_indexes() has succeeded: the API answers 503 until then, because
        # the unique indexes are what keeps concurrent writes free of duplicates.
        self.indexes_ready = False

    async def ensure_indexes(self, build_timeout: float = 600) -> None:
        # The ping fails fast (timeoutMS) when the server is away; the index builds then get
        # longer, as a first build on a large collection may outlast the per-operation timeout.
        await self.db.command("ping")
        with pymongo.timeout(build_timeout):
            await ensure_indexes(self.db)
        self.indexes_ready = True

    async def ping(self, timeout: float = 2.0) -> bool:
        try:
            await asyncio.wait_for(self.db.command("ping"), timeout)
        except Exception:
            return False
        return True

    async def drop(self) -> None:
        await self.client.drop_database(self.db.name)

    def close(self) -> None:
        self.client.close()


def open_store(uri: str, database: str, timeout_seconds: float = 5.0,
               default_region: str = "US") -> Store:
    if uri == "memory":
        from mongomock_motor import AsyncMongoMockClient

        from store import embedded

        embedded.apply()

        client = AsyncMongoMockClient()
        return Store(client[database], client, True, default_region)
    from motor.motor_asyncio import AsyncIOMotorClient

    ms = int(timeout_seconds * 1000)
    client = AsyncIOMotorClient(
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
    return Store(client[database], client, False, default_region)
