"""The expiry sweep: a background task of every serving process that deletes expired
Idempotency-Key records, rate-limit windows and leases through the store
(`store.sweep_expired`, bounded batches on an indexed expiry time) every
`expiry_sweep_seconds`, and the tombstones of prospects and lists deleted more than
`tombstone_retention_days` ago (`store.sweep_tombstones`, on the same clock).

Expiry must not rest on TTL indexes alone: some MongoDB-compatible servers have none (FerretDB)
and SQLite never had them. The API's answers do not wait for it (an expired record is treated
as absent where it is read); the sweep keeps the collections from growing without end. With
several processes or hosts each one sweeps: a second sweep finds less to delete, nothing more.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import random

from server.background import Background, cancelling
from store.clock import Clock
from store.contract import Store
from store.errors import StoreError

log = logging.getLogger("workspace_api")


class ExpirySweeper(Background):
    def __init__(
        self,
        store: Store,
        interval: float,
        batch: int = 1000,
        clock: Clock | None = None,
        retention_days: float = 30.0,
    ) -> None:
        self.store = store
        self.clock = clock or store.clock
        self.interval = interval
        self.batch = batch
        self.retention = dt.timedelta(days=retention_days)  # of tombstones

    async def sweep(self) -> int:
        """One sweep now; how many records it deleted."""
        now = self.clock.now()
        expired = await self.store.sweep_expired(now, self.batch)
        return expired + await self.store.sweep_tombstones(now - self.retention, self.batch)

    async def _run(self) -> None:
        while not cancelling():
            # Jittered, so that the processes sharing a database do not all sweep at once.
            await asyncio.sleep(self.interval * random.uniform(0.8, 1.2))
            if not self.store.indexes_ready:  # the expiry indexes are not there yet
                continue
            try:
                deleted = await self.sweep()
            except StoreError as exc:
                log.warning("expiry sweep failed (%s); next in %g s", exc, self.interval)
                continue
            except Exception:
                log.exception("expiry sweep failed; next in %g s", self.interval)
                continue
            if deleted:
                log.debug("expiry sweep deleted %d expired records", deleted)
