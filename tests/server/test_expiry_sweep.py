"""The expiry sweep as `serve` runs it: a background task of the serving process that deletes
expired Idempotency-Key records (and, on MongoDB, rate-limit windows and leases) while the
live ones stay. A real process against this tier's database (on the embedded tier a SQLite
file of the test's own)."""

from __future__ import annotations

import asyncio
import datetime as dt
import time

from handlers.idempotency import LOCK, TTL
from server.config import load_config
from server.services import open_services
from store.clock import utcnow
from tests.helpers import serving, test_environ


async def test_serve_sweeps_expired_records_in_the_background(tmp_path):
    environ = test_environ(WSAPI_EXPIRY_SWEEP_SECONDS="0.2")
    if environ["MONGODB_URI"] == "memory":  # a file that the test and `serve` share
        environ.update(MONGODB_URI="", WSAPI_SQLITE_PATH=str(tmp_path / "db.sqlite3"))
    store, _ = await open_services(load_config(environ=environ))
    try:
        now = utcnow()
        await store.idempotency.begin("ws-a", "live", "print", now, LOCK, TTL)
        for i in range(3):
            await store.idempotency.begin("ws-a", f"old-{i}", "print", now - 2 * TTL, LOCK, TTL)
        mongodb = store.backend == "mongodb"
        if mongodb:
            minute = dt.timedelta(minutes=1)
            await store.ratelimits.hit("ws-a", now - 3 * minute, now - minute)
            await store.ratelimits.hit("ws-a", now, now + 2 * minute)
            await store.prospects.leases.try_acquire("ws-a", "short", ttl=0.001)
            await store.prospects.leases.try_acquire("ws-a", "long", ttl=600)

        async def left() -> dict[str, int]:
            names = ["idempotency", "rate_limits", "leases"] if mongodb else ["idempotency"]
            return {name: len(await store.documents(name)) for name in names}

        assert (await left())["idempotency"] == 4
        with serving(tmp_path, env=environ) as (_origin, log):
            deadline = time.monotonic() + 30
            expected = {name: 1 for name in await left()}  # the live record of each collection
            while (found := await left()) != expected:
                assert time.monotonic() < deadline, (found, log.read_text()[-3000:])
                await asyncio.sleep(0.1)
        assert [doc["key"] for doc in await store.documents("idempotency")] == ["live"]
    finally:
        if store.backend == "mongodb":
            await store.drop()
        await store.close()
