"""A task the API process runs beside its requests (the sweeps), started with the app and
stopped with it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from typing import Self

from store.contract import Store
from store.errors import StoreError

log = logging.getLogger("workspace_api")


def cancelling() -> bool:
    """Whether the running task has been asked to stop (Task.cancel), even when a library it
    awaited swallowed the CancelledError or turned it into an error of its own (some database
    driver versions do): loops that run until cancelled test it, so that a stop is never lost."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class Background:
    """Subclasses define `_run`, a loop that runs until cancelled (`while not cancelling()`)."""

    _task: asyncio.Task[None] | None = None

    def start(self) -> Self:
        self._task = asyncio.ensure_future(self._run())
        return self

    async def stop(self) -> None:
        """Cancel the loop and wait until it has ended (idempotent)."""
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def _run(self) -> None:
        raise NotImplementedError


class KickedWork(Background):
    """Work claimed through the store, which any process sharing the database can do (the
    lists' purges, the erasures): `drain` does what is waiting. A request that leaves work
    kicks the process that answered it (`kick`), so it starts at once; otherwise each process
    looks every `interval` seconds, jittered, so that the processes sharing a database do not
    all look at once. Subclasses define `drain` and name their work in `what` (log lines)."""

    what = "background work"

    def __init__(self, store: Store, interval: float) -> None:
        self.store = store
        self.interval = interval
        self._kicked = asyncio.Event()

    def kick(self) -> None:
        """Look for work now; nothing when the task is not running."""
        self._kicked.set()

    async def drain(self) -> int:
        raise NotImplementedError

    async def _run(self) -> None:
        while not cancelling():
            self._kicked.clear()
            try:
                if self.store.indexes_ready:
                    await self.drain()
            except StoreError as exc:
                log.warning("%s failed (%s); next in %g s", self.what, exc, self.interval)
            except Exception:
                log.exception("%s failed; next in %g s", self.what, self.interval)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.interval * random.uniform(0.8, 1.2)):
                    await self._kicked.wait()
