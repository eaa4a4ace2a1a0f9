"""When each API key was last used (`lastUsedAt`, to the minute), without a database write per
request: authentication notes every use in memory (a set lookup), and the first use of a key in
each minute queues one write, which a background task of the process makes off the request's
path. So a key costs at most one write per minute per process, however busy it is.

The task starts with the first use of a key (on the serving process's event loop) and is
stopped on shutdown, writing what is still queued. A failed write is logged and dropped: the
key's next minute of use writes again, and lastUsedAt only ever moves forward
(store.contract.Keys.touch).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging

from store.contract import Keys
from store.errors import StoreError

log = logging.getLogger("workspace_api")

EPOCH = dt.datetime(1970, 1, 1)


class KeyUsage:
    def __init__(self, keys: Keys) -> None:
        self._keys = keys
        self._minute = -1  # the minute (since the epoch) of the keys in _noted
        self._noted: set[tuple[str, str]] = set()  # keys already queued in that minute
        self._pending: dict[tuple[str, str], int] = {}  # (workspace id, key id) -> minute
        self._wake = asyncio.Event()
        self._writing = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.writes = 0  # writes made (diagnostics and tests)

    def note(self, workspace_id: str, key_id: str, now: float) -> None:
        """A request used the key at `now` (seconds since the epoch); never waits."""
        minute = int(now // 60)
        if minute != self._minute:  # a new minute: every key may be written once again
            self._minute, self._noted = minute, set()
        key = (workspace_id, key_id)
        if key in self._noted:
            return
        self._noted.add(key)
        self._pending[key] = max(minute, self._pending.get(key, minute))
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        self._wake.set()

    async def flush(self) -> None:
        """Write every queued use now (after a write in progress has ended)."""
        async with self._writing:
            pending, self._pending = self._pending, {}
            for (workspace_id, key_id), minute in pending.items():
                try:
                    await self._keys.touch(
                        workspace_id, key_id, EPOCH + dt.timedelta(minutes=minute)
                    )
                    self.writes += 1
                except StoreError as exc:
                    log.warning("could not record a key's last use (%s)", type(exc).__name__)
                except Exception:
                    log.exception("could not record a key's last use")

    async def stop(self) -> None:
        """Stop the background task and write what is still queued (shutdown)."""
        if self._task is not None:
            async with self._writing:  # never cut a write short
                self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.flush()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await self.flush()
