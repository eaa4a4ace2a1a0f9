"""Database round-trip counting for the bench server.

On MongoDB every collection the store holds is wrapped in a proxy that counts each operation
that reaches the database; one call is one round trip (`find`/`aggregate` count once for their
first batch: larger results would add getMore batches, and none of the counted requests reads
that many). On SQLite every unit of work handed to the database threads (`engine.read` or
`engine.write`, one transaction each) counts once, named after the function it runs.
"""

from __future__ import annotations

from collections import Counter

OPERATIONS = frozenset(
    {
        "find",
        "find_one",
        "find_one_and_update",
        "find_one_and_replace",
        "find_one_and_delete",
        "insert_one",
        "insert_many",
        "update_one",
        "update_many",
        "replace_one",
        "delete_one",
        "delete_many",
        "bulk_write",
        "count_documents",
        "estimated_document_count",
        "aggregate",
        "distinct",
        "watch",
    }
)


class CountingCollection:
    """A collection that counts its operations per collection name into `counts`."""

    def __init__(self, collection, counts: Counter):
        self._collection = collection
        self._counts = counts
        self._name = collection.name

    def __getattr__(self, name: str):
        attr = getattr(self._collection, name)
        if name not in OPERATIONS or not callable(attr):
            return attr
        counts, key = self._counts, f"{self._name}.{name}"

        def counted(*args, **kwargs):
            counts[key] += 1
            return attr(*args, **kwargs)

        return counted

    def __getitem__(self, name: str):
        return self._collection[name]


def is_collection(value) -> bool:
    from pymongo.asynchronous.collection import AsyncCollection

    return isinstance(value, AsyncCollection)


def install_sqlite(store, counts: Counter) -> Counter:
    engine = store.engine
    for kind in ("read", "write"):
        original = getattr(engine, kind)

        def counted(fn, *args, _original=original, _kind=kind, **kwargs):
            counts[f"sqlite.{_kind}.{getattr(fn, '__name__', 'unit')}"] += 1
            return _original(fn, *args, **kwargs)

        setattr(engine, kind, counted)
    return counts


def install(store) -> Counter:
    """Wrap every collection held by the store's collection families (and by the families
    they hold in turn, e.g. the activities inside calls), or the SQLite engine's units of
    work; returns the shared counter."""
    counts: Counter = Counter()
    if getattr(store, "backend", "") == "sqlite":
        return install_sqlite(store, counts)
    seen: set[int] = {id(store.db), id(store.client)}

    def walk(holder, depth: int) -> None:
        if id(holder) in seen or depth > 3 or not hasattr(holder, "__dict__"):
            return
        seen.add(id(holder))
        for attr, value in list(vars(holder).items()):
            if is_collection(value):
                setattr(holder, attr, CountingCollection(value, counts))
            elif not isinstance(value, str | int | float | bool | bytes | type(None)):
                walk(value, depth + 1)

    walk(store, 0)
    return counts
