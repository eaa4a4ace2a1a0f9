"""`includeDeleted=true` on the sync walks of /v1/prospects and /v1/lists: tombstones
`{"id", "deletedAt", "updatedAt"}` in the sync order (store/tombstones.py), and 410
`sync_expired` once a walk could have missed one.

Tombstones are kept `tombstone_retention_days`. A walk that starts at `updatedSince` misses
none when that instant is inside the horizon; a walk resumed by a cursor misses none when the
cursor was issued inside it (everything settled before its issue was returned to the client
then). So the cursors of such a walk carry the instant they were issued at (`issuedAt`, one of
the cursor's filters, never a request parameter), and an older one, or an older
`updatedSince`, is 410. `includeDeleted` belongs to the cursor like every filter.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from handlers.base import APIError, APIHandler
from handlers.params import problem

INCLUDE = "includeDeleted"
ISSUED = "issuedAt"
Prepare = Callable[[str, dict, bool], dict]


def include_deleted(query: dict) -> bool | None:
    """The request's `includeDeleted` as a filter value: True, or None when absent or false."""
    return True if query.get(INCLUDE) == "true" else None


def deleted_walk(handler: APIHandler) -> Prepare:
    """serve_page's `prepare`: with `includeDeleted`, only the sync order, never past the
    tombstones' horizon, and each new cursor stamped with its issue instant."""

    def prepare(sort: str, filters: dict, resumed: bool) -> dict:
        if not filters.get(INCLUDE):
            return filters
        if sort != "updatedAt":
            raise problem(INCLUDE, "is only for the sync order: add sort=updatedAt")
        now = handler.now()
        days = handler.settings["config"].tombstone_retention_days
        horizon = now - dt.timedelta(days=days)
        if resumed:
            issued, where = filters.get(ISSUED), "cursor"
            expired = not isinstance(issued, dt.datetime) or issued < horizon
        else:
            since, where = filters.get("updatedSince"), "updatedSince"
            expired = since is not None and since < horizon
        if expired:
            raise APIError(
                "sync_expired",
                f"{where} is older than the {days:g} days deletions are kept: a deletion after "
                "it may be gone. Start a full resync: walk again without updatedSince and "
                "remove the records the walk no longer returns",
                [{"parameter": where, "pointer": f"#/query/{where}", "detail": "has expired"}],
            )
        return {**filters, ISSUED: now}

    return prepare


def split(filters: dict) -> tuple[dict, bool]:
    """The store's filters (without the walk's own) and whether tombstones are wanted."""
    rest = {name: value for name, value in filters.items() if name not in (INCLUDE, ISSUED)}
    return rest, bool(filters.get(INCLUDE))
