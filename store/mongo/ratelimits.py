"""Rate-limit counters: one document per (workspace, window), counted up atomically.

Every process and host that uses the same database shares these counters, so a workspace has
one limit however the service is scaled out. A TTL index on `expireAt` removes old windows.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pymongo import ReturnDocument
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from store.mongo.errors import translate_errors


@translate_errors
class RateLimits:
    def __init__(self, db: AsyncDatabase) -> None:
        self.col = db["rate_limits"]

    async def hit(
        self, workspace_id: str, window_start: dt.datetime, expire_at: dt.datetime
    ) -> int:
        """Count one request in the workspace's window; returns the window's count so far.

        One round trip: an upsert with $inc on the unique (workspaceId, windowStart) key.
        """
        query = {"workspaceId": workspace_id, "windowStart": window_start}
        update = {"$inc": {"count": 1}, "$setOnInsert": {"expireAt": expire_at}}
        # No projection (a small document): FerretDB 1.24 does not implement findAndModify's
        # `fields`.
        options: dict[str, Any] = dict(upsert=True, return_document=ReturnDocument.AFTER)
        try:
            doc = await self.col.find_one_and_update(query, update, **options)
        except DuplicateKeyError:
            # Two first hits of a window raced to insert it; the loser now finds it and counts.
            # (MongoDB >= 4.2 usually retries such an upsert itself.)
            doc = await self.col.find_one_and_update(query, update, **options)
        assert doc is not None  # an upsert returns the document, found or made
        return doc["count"]

    async def count(self, workspace_id: str, window_start: dt.datetime) -> int:
        """The window's count without counting a request (tests and diagnostics)."""
        doc = await self.col.find_one(
            {"workspaceId": workspace_id, "windowStart": window_start}, {"_id": 0, "count": 1}
        )
        return doc["count"] if doc else 0
