"""The lists' background work: a task of every serving process that carries out what a list's
delete leaves to do (its members lose it, in units of at most `list_purge_batch`) and, on
MongoDB, finishes a removal of contacts whose writer died (store.contract.lists `purge`).

The work is claimed through the store (SQLite: each unit one write transaction; MongoDB: a
lease on the list or the removal), so processes sharing a database share it, and a process
killed mid-way leaves the rest to the others or to itself after a restart. A DELETE kicks the
process that answered it, so the work starts at once; otherwise each process looks every
`interval` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random

from server.background import Background, cancelling
from store.contract import Store
from store.errors import StoreError

log = logging.getLogger("workspace_api")


class ListWork(Background):
    def __init__(self, store: Store, batch: int, interval: float = 5.0) -> None:
        self.store = store
        self.batch = batch
        self.interval = interval
        self._kicked = asyncio.Event()

    def kick(self) -> None:
        """Look for work now (a list was just deleted); nothing when the task is not running."""
        self._kicked.set()

    async def drain(self) -> int:
        """Do units until none is waiting; how much they did."""
        done = 0
        while not cancelling() and (did := await self.store.lists.purge(self.batch)):
            done += did
        return done

    async def _run(self) -> None:
        while not cancelling():
            self._kicked.clear()
            try:
                if self.store.indexes_ready:
                    await self.drain()
            except StoreError as exc:
                log.warning("list work failed (%s); next in %g s", exc, self.interval)
            except Exception:
                log.exception("list work failed; next in %g s", self.interval)
            # Jittered, so that the processes sharing a database do not all look at once.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.interval * random.uniform(0.8, 1.2)):
                    await self._kicked.wait()
