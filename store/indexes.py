"""Every index of the service, each prefixed by workspaceId, created idempotently at start-up.

The README's index table documents which query each one serves.
"""

from __future__ import annotations

from pymongo import ASCENDING as ASC
from pymongo import DESCENDING as DESC
from pymongo import IndexModel

INDEXES: dict[str, list[IndexModel]] = {
    "users": [
        IndexModel([("workspaceId", ASC), ("deletedAt", ASC), ("createdAt", ASC), ("_id", ASC)],
                   name="ws_active_created"),
    ],
    "api_keys": [
        IndexModel([("workspaceId", ASC), ("createdAt", ASC)], name="ws_created"),
    ],
    "lists": [
        IndexModel([("workspaceId", ASC), ("createdAt", DESC), ("_id", DESC)], name="ws_newest"),
    ],
    "prospects": [
        IndexModel([("workspaceId", ASC), ("dedupeKey", ASC)], name="ws_dedupe", unique=True),
        IndexModel([("workspaceId", ASC), ("emailNorm", ASC)], name="ws_email"),
        IndexModel([("workspaceId", ASC), ("phoneE164", ASC)], name="ws_phone"),
        IndexModel([("workspaceId", ASC), ("listIds", ASC)], name="ws_lists"),
        IndexModel([("workspaceId", ASC), ("createdAt", DESC), ("_id", DESC)], name="ws_newest"),
    ],
}


async def ensure_indexes(db) -> None:
    for collection, models in INDEXES.items():
        await db[collection].create_indexes(models)
