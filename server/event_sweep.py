"""The event sweep: a background task of every serving process that keeps the events feed whole
and bounded, through the store:

- every `interval` seconds it records the events of changes whose writer died before it
  recorded them (`store.events.recover`: on MongoDB, markers older than `grace`; on SQLite
  there are none, as events are written in the change's own transaction). Until then the
  workspace's feed waits just before such a change, so the grace is what a crash costs a
  reader: long enough that no live write is taken for a dead one (every database operation
  ends within `db_timeout_seconds`, and a write path makes four);
- every `retention_interval` seconds it deletes the events older than `event_retention_days`
  (and DELETE_MARGIN: the API stops serving them first), in bounded batches.

With several processes or hosts each one sweeps: recovery takes turns through a lease, and
a second retention sweep finds less to delete, nothing more.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import random
import time

from server.background import Background, cancelling
from server.config import Config
from store.clock import Clock
from store.contract import Store
from store.errors import StoreError
from store.events import DELETE_MARGIN

log = logging.getLogger("workspace_api")

WRITE_STEPS = 4  # database operations of a write path on MongoDB: the change, read, insert, pull


class EventSweeper(Background):
    def __init__(
        self,
        store: Store,
        retention: dt.timedelta,
        grace: dt.timedelta,
        interval: float,
        retention_interval: float,
        clock: Clock | None = None,
    ) -> None:
        self.store = store
        self.clock = clock or store.clock
        self.retention = retention
        self.grace = grace
        self.interval = interval
        self.retention_interval = retention_interval

    @classmethod
    def from_config(cls, store: Store, config: Config) -> EventSweeper:
        return cls(
            store,
            retention=dt.timedelta(days=config.event_retention_days),
            grace=dt.timedelta(seconds=WRITE_STEPS * config.db_timeout_seconds),
            interval=config.db_timeout_seconds,
            retention_interval=config.expiry_sweep_seconds,
        )

    async def recover(self) -> int:
        """Record the events of changes left without them; how many."""
        return await self.store.events.recover(self.clock.now() - self.grace)

    async def delete_expired(self) -> int:
        """Delete events past their retention; how many."""
        return await self.store.events.delete_expired(
            self.clock.now() - self.retention - DELETE_MARGIN
        )

    async def _run(self) -> None:
        deleted_at = time.monotonic()
        while not cancelling():
            # Jittered, so that the processes sharing a database do not all sweep at once.
            await asyncio.sleep(self.interval * random.uniform(0.8, 1.2))
            if not self.store.indexes_ready:
                continue
            try:
                recorded = await self.recover()
                if recorded:
                    log.info("event sweep recorded %d events of interrupted writes", recorded)
                if time.monotonic() - deleted_at >= self.retention_interval:
                    deleted_at = time.monotonic()
                    if deleted := await self.delete_expired():
                        log.debug("event sweep deleted %d expired events", deleted)
            except StoreError as exc:
                log.warning("event sweep failed (%s); next in %g s", exc, self.interval)
            except Exception:
                log.exception("event sweep failed; next in %g s", self.interval)
