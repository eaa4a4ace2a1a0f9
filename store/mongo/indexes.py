"""Every index of the service, each prefixed by workspaceId, created idempotently at start-up.

The README's index table documents which query each one serves. The exceptions to the
prefix rule are the TTL indexes (rate-limit counters, Idempotency-Key records): MongoDB's TTL
indexes are single-field. Idempotency records are found by `_id` (workspace and key).
"""

from __future__ import annotations

from pymongo import ASCENDING as ASC
from pymongo import DESCENDING as DESC
from pymongo import IndexModel
from pymongo.asynchronous.database import AsyncDatabase

INDEXES: dict[str, list[IndexModel]] = {
    "users": [
        IndexModel(
            [("workspaceId", ASC), ("deletedAt", ASC), ("createdAt", ASC), ("_id", ASC)],
            name="ws_active_created",
        ),
    ],
    "api_keys": [
        IndexModel([("workspaceId", ASC), ("createdAt", ASC)], name="ws_created"),
    ],
    "lists": [
        IndexModel([("workspaceId", ASC), ("createdAt", DESC), ("_id", DESC)], name="ws_newest"),
        IndexModel([("workspaceId", ASC), ("updatedAt", ASC), ("_id", ASC)], name="ws_updated_id"),
    ],
    "prospects": [
        IndexModel([("workspaceId", ASC), ("dedupeKey", ASC)], name="ws_dedupe", unique=True),
        IndexModel([("workspaceId", ASC), ("emailNorm", ASC)], name="ws_email"),
        IndexModel([("workspaceId", ASC), ("phoneE164", ASC)], name="ws_phone"),
        IndexModel([("workspaceId", ASC), ("createdAt", DESC), ("_id", DESC)], name="ws_newest"),
        IndexModel(
            [("workspaceId", ASC), ("listIds", ASC), ("createdAt", DESC), ("_id", DESC)],
            name="ws_list_newest",
        ),
        IndexModel(
            [("workspaceId", ASC), ("listIds", ASC), ("updatedAt", ASC), ("_id", ASC)],
            name="ws_list_updated_id",
        ),
        IndexModel([("workspaceId", ASC), ("updatedAt", ASC), ("_id", ASC)], name="ws_updated_id"),
    ],
    "calls": [
        IndexModel([("workspaceId", ASC), ("createdAt", DESC), ("_id", DESC)], name="ws_newest"),
        IndexModel(
            [("workspaceId", ASC), ("userId", ASC), ("createdAt", DESC), ("_id", DESC)],
            name="ws_user_newest",
        ),
        IndexModel(
            [("workspaceId", ASC), ("prospectId", ASC), ("createdAt", DESC), ("_id", DESC)],
            name="ws_prospect_newest",
        ),
        IndexModel(
            [("workspaceId", ASC), ("listId", ASC), ("createdAt", DESC), ("_id", DESC)],
            name="ws_list_newest",
        ),
        IndexModel(
            [("workspaceId", ASC), ("disposition", ASC), ("createdAt", DESC), ("_id", DESC)],
            name="ws_disposition_newest",
        ),
        IndexModel(
            [("workspaceId", ASC), ("direction", ASC), ("createdAt", DESC), ("_id", DESC)],
            name="ws_direction_newest",
        ),
        IndexModel([("workspaceId", ASC), ("updatedAt", ASC), ("_id", ASC)], name="ws_updated_id"),
    ],
    "activities": [
        IndexModel(
            [("workspaceId", ASC), ("prospectId", ASC), ("occurredAt", DESC), ("_id", DESC)],
            name="ws_prospect_timeline",
        ),
    ],
    "idempotency": [
        IndexModel([("expiresAt", ASC)], name="ttl", expireAfterSeconds=0),
    ],
    "rate_limits": [
        IndexModel([("workspaceId", ASC), ("windowStart", ASC)], name="ws_window", unique=True),
        IndexModel([("expireAt", ASC)], name="ttl", expireAfterSeconds=0),
    ],
}


async def ensure_indexes(db: AsyncDatabase) -> None:
    for collection, models in INDEXES.items():
        await db[collection].create_indexes(models)
