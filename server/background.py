"""A task the API process runs beside its requests (the sweeps), started with the app and
stopped with it."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Self


class Background:
    """Subclasses define `_run`, a loop that runs until cancelled."""

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
