"""Leases: short, workspace-scoped mutual exclusion across every process sharing the database.

A lease is one document whose `_id` names it. Taking it is a single atomic upsert that matches
only an absent or expired lease; while someone else holds it, the upsert collides on `_id` and
fails. A holder that dies simply lets its lease expire after `ttl`. Expiry compares the taker's
clock with the holder's, so hosts sharing a database should keep their clocks in sync (NTP).

Turns are first come, first served. A waiter that finds the lease taken writes itself on the
lease as its next holder (`next`: who, since when it has waited, and until when the claim holds
unless renewed), replacing a claim only when it has waited longer or the claim lapsed; a taker
other than the claimant finds the lease closed to it until the claimant took its turn. Without
this, a holder that releases and takes the lease straight back (back-to-back uploads) would
starve every waiter that polls. A waiter that gives up withdraws its claim; one that dies (or
is cancelled) lets it lapse after `CLAIM` seconds.
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
CLAIM = 1.0  # seconds a waiter's claim on the next turn holds unless renewed (every poll)
LONGEST_PAUSE = 0.05  # a waiter polls at least this often


def _lease(workspace_id: str, name: str) -> dict:
    """The filter that finds lease `name` of the workspace."""
    return {"_id": f"{workspace_id}:{name}", "workspaceId": workspace_id}


def _open_to(waiter: str | None, now: dt.datetime) -> dict:
    """The lease's next turn is free for `waiter`: nobody claimed it, or `waiter` did, or the
    claim lapsed."""
    mine = [{"next.by": waiter}] if waiter else []
    return {"$or": [{"next": {"$exists": False}}, *mine, {"next.until": {"$lte": now}}]}


@translate_errors
class Leases:
    def __init__(self, db: AsyncDatabase) -> None:
        self.col = db["leases"]

    async def try_acquire(
        self, workspace_id: str, name: str, ttl: float, waiter: str | None = None
    ) -> str | None:
        """A token when the lease was free (or expired), its next turn unclaimed or claimed by
        `waiter`, and is now ours; else None."""
        token, now = new_id(), utcnow()
        try:
            await self.col.update_one(
                {
                    **_lease(workspace_id, name),
                    "expiresAt": {"$lte": now},
                    **_open_to(waiter, now),
                },
                {
                    "$set": {"token": token, "expiresAt": now + dt.timedelta(seconds=ttl)},
                    "$unset": {"next": ""},
                },
                upsert=True,
            )
        except DuplicateKeyError:
            return None
        return token

    async def claim_next(
        self, workspace_id: str, name: str, waiter: str, since: dt.datetime
    ) -> None:
        """Claim (or renew the claim on) the lease's next turn for `waiter`, waiting since
        `since`, unless an earlier waiter holds the claim."""
        now = utcnow()
        free = _open_to(waiter, now)["$or"]
        await self.col.update_one(
            {**_lease(workspace_id, name), "$or": [*free, {"next.since": {"$gt": since}}]},
            {
                "$set": {
                    "next": {
                        "by": waiter,
                        "since": since,
                        "until": now + dt.timedelta(seconds=CLAIM),
                    }
                }
            },
        )

    async def taken(self, workspace_id: str, name: str) -> bool:
        """Whether someone holds the lease now (it exists and has not expired)."""
        found = await self.col.find_one(_lease(workspace_id, name), {"expiresAt": 1})
        return found is not None and found["expiresAt"] > utcnow()

    async def release(self, workspace_id: str, name: str, token: str) -> None:
        """Give the lease up: the record goes, or, when a waiter claimed the next turn, stays
        expired with the claim on it."""
        lease = {**_lease(workspace_id, name), "token": token}
        gone = await self.col.delete_one({**lease, "next": {"$exists": False}})
        if gone.deleted_count == 0:
            await self.col.update_one(
                lease, {"$set": {"expiresAt": utcnow()}, "$unset": {"token": ""}}
            )

    @contextlib.asynccontextmanager
    async def held(
        self, workspace_id: str, name: str, ttl: float = 30.0, wait: float = 10.0
    ) -> AsyncIterator[None]:
        """Hold lease `name` of the workspace for the block; waits up to `wait` seconds, in
        turn with the other waiters (first come, first served)."""
        deadline, pause = time.monotonic() + wait, 0.005
        waiter, since = new_id(), utcnow()
        while (token := await self.try_acquire(workspace_id, name, ttl, waiter)) is None:
            if time.monotonic() >= deadline:
                await self.col.update_one(  # the next waiter need not wait for it to lapse
                    {**_lease(workspace_id, name), "next.by": waiter}, {"$unset": {"next": ""}}
                )
                raise StoreBusy(f"lease {name} stayed taken for {wait} s")
            await self.claim_next(workspace_id, name, waiter, since)
            await asyncio.sleep(pause)
            pause = min(pause * 2, LONGEST_PAUSE)
        try:
            yield
        finally:
            try:
                await self.release(workspace_id, name, token)
            except Exception:  # the work is done; an unreleased lease expires after `ttl`
                log.warning(
                    "could not release lease %s of workspace %s", name, workspace_id, exc_info=True
                )
