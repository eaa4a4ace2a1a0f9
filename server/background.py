"""A task the API process runs beside its requests (the sweeps), started with the app and
stopped with it."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Self


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
