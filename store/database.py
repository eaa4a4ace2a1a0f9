"""Opening the store: one interface, two backends.

`MONGODB_URI=mongodb://...` selects MongoDB through PyMongo's async API (store/mongo: production
at scale); anything else selects SQLite (store/sqlite: the embedded default), in the file at
`sqlite_path`, or in a throwaway file for `MONGODB_URI=memory`. Both backends follow the store
contract (store/contract/: `store.calls`, `store.prospects`, ... with the same methods), which
mypy checks here, and raise store.errors.
"""

from __future__ import annotations

from store.clock import SYSTEM_CLOCK, Clock
from store.contract import Store
from store.errors import StoreBusy, StoreError, StoreUnavailable, StoreUnusable

__all__ = [
    "StoreBusy",
    "StoreError",
    "StoreUnavailable",
    "StoreUnusable",
    "is_mongodb",
    "open_store",
]


def is_mongodb(uri: str) -> bool:
    return uri.startswith(("mongodb://", "mongodb+srv://"))


def open_store(
    uri: str,
    database: str,
    timeout_seconds: float = 5.0,
    default_region: str = "US",
    sqlite_path: str | None = None,
    sqlite_synchronous: str = "full",
    clock: Clock = SYSTEM_CLOCK,
) -> Store:
    """The store of `uri`; `clock` is where all its instants come from (store.clock)."""
    if is_mongodb(uri):
        from store.mongo import open_mongo

        return open_mongo(uri, database, timeout_seconds, default_region, clock)
    from store.sqlite import open_sqlite

    return open_sqlite(
        None if uri == "memory" else sqlite_path,
        timeout_seconds,
        default_region,
        sqlite_synchronous,
        clock,
    )
