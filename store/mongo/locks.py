"""Leases: short, workspace-scoped mutual exclusion across every process sharing the database.

A lease is one document whose `_id` names it. Taking it is a single atomic upsert that matches
only an absent or expired lease; while someone else holds it, the upsert collides on `_id` and
fails. A holder that dies simply lets its lease expire after `ttl`. Expiry compares the taker's
clock with the holder's, so hosts sharing a database should keep their clocks in sync (NTP).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import AsyncIterator

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from store.clock import new_id, utcnow
from store.errors import StoreBusy
from store.mongo.errors import translate_errors

log = logging.getLogger("workspace_api")

UPLOAD_LEASE = "contact-upload"  # the contact uploads of a workspace take turns through it


@translate_errors
class Leases:
    def __init__(self, db: AsyncDatabase) -> None:
        self.col = db["leases"]

    async def try_acquire(self, workspace_id: str, name: str, ttl: float) -> str | None:
        """A token when the lease was free (or expired) and is now ours, else None."""
        token, now = new_id(), utcnow()
        try:
            await self.col.update_one(
                {
                    "_id": f"{workspace_id}:{name}",
                    "workspaceId": workspace_id,
                    "expiresAt": {"$lte": now},
                },
                {"$set": {"token": token, "expiresAt": now + dt.timedelta(seconds=ttl)}},
                upsert=True,
            )
        except DuplicateKeyError:
            return None
        return token

    async def taken(self, workspace_id: str, name: str) -> bool:
        """Whether someone holds the lease now (it exists and has not expired)."""
        found = await self.col.find_one(
            {"_id": f"{workspace_id}:{name}", "workspaceId": workspace_id}, {"expiresAt": 1}
        )
        return found is not None and found["expiresAt"] > utcnow()

    async def release(self, workspace_id: str, name: str, token: str) -> None:
        await self.col.delete_one(
            {"_id": f"{workspace_id}:{name}", "workspaceId": workspace_id, "token": token}
        )

    @contextlib.asynccontextmanager
    async def held(
        self, workspace_id: str, name: str, ttl: float = 30.0, wait: float = 10.0
    ) -> AsyncIterator[None]:
        """Hold lease `name` of the workspace for the block; waits up to `wait` seconds."""
        deadline, pause = time.monotonic() + wait, 0.005
        while (token := await self.try_acquire(workspace_id, name, ttl)) is None:
            if time.monotonic() >= deadline:
                raise StoreBusy(f"lease {name} stayed taken for {wait} s")
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.1)
        try:
            yield
        finally:
            try:
                await self.release(workspace_id, name, token)
            except Exception:  # the work is done; an unreleased lease expires after `ttl`
                log.warning(
                    "could not release lease %s of workspace %s", name, workspace_id, exc_info=True
                )
