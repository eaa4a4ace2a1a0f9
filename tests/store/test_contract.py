"""The store contract (store/contract/): both backends offer exactly what it declares.

mypy checks that every declared method exists on both backends with a compatible signature
(`open_store`'s return type). What it cannot check is the other direction: a public method
that one backend grew and the contract does not declare, which callers could come to depend
on. These tests compare the backends' classes with the contract, on every tier (no database is
contacted), and check `drop` on the tier's own store.
"""

from __future__ import annotations

import inspect
import typing

from store import contract
from store.database import open_store
from store.sqlite.ratecounts import SharedCounters

# Methods a store calls on its own parts for its life cycle, never part of the contract.
LIFE_CYCLE = {SharedCounters: {"close", "clear"}}


def methods(cls: type) -> set[str]:
    """The public methods (plain, async, generator or context manager) defined by `cls` or the
    parts it is made of (its bases in the store, such as store/sqlite/prospect_changes.py)."""
    parts = [c for c in cls.__mro__ if c.__module__.startswith("store.")]
    return {
        name
        for part in parts
        for name, value in vars(part).items()
        if not name.startswith("_") and inspect.isfunction(inspect.unwrap(value))
    } - LIFE_CYCLE.get(cls, set())


def declared_in(protocol: type) -> set[str]:
    """The methods a contract Protocol declares, with those of the Protocols it is made of
    (a family whole: its request path, its seeding, its hooks)."""
    return set().union(
        *(methods(cls) for cls in protocol.__mro__ if cls.__module__.startswith("store.contract"))
    )


def properties(cls: type) -> set[str]:
    return {
        name
        for base in cls.__mro__
        if base.__module__.startswith("store.contract")
        for name, value in vars(base).items()
        if isinstance(value, property)
    }


FAMILIES = sorted(
    properties(contract.Store) - {"backend", "embedded", "process_private", "indexes_ready"}
)


def declared_of(family: str) -> set[str]:
    return declared_in(protocol_of(family))


def protocol_of(family: str) -> type:
    """The Protocol a family of the store follows (the return type of its property)."""
    return typing.get_type_hints(getattr(contract.Store, family).fget)["return"]


async def both_backends(tmp_path) -> list:
    """A store of each backend, made without touching a database (MongoDB connects lazily)."""
    return [
        open_store("sqlite", "contract", sqlite_path=str(tmp_path / "contract.sqlite3")),
        open_store("mongodb://127.0.0.1:9/", "contract", timeout_seconds=0.1),
    ]


async def test_every_family_has_the_same_methods_on_both_backends(tmp_path):
    stores = await both_backends(tmp_path)
    try:
        assert {store.backend for store in stores} == {"sqlite", "mongodb"}
        for family in FAMILIES:
            declared = declared_of(family)
            assert declared, family
            for store in stores:
                assert methods(type(getattr(store, family))) == declared, (store.backend, family)
    finally:
        for store in stores:
            await store.close()


async def test_both_stores_have_the_methods_the_contract_declares(tmp_path):
    stores = await both_backends(tmp_path)
    try:
        declared = declared_in(contract.Store)
        for store in stores:
            assert methods(type(store)) == declared, store.backend
            for name in ("backend", "embedded", "process_private", "indexes_ready", *FAMILIES):
                assert hasattr(store, name), (store.backend, name)
    finally:
        for store in stores:
            await store.close()


async def test_drop_leaves_an_empty_store_that_ensure_indexes_makes_usable(store, ws_a):
    assert await store.workspaces.get(ws_a.id) is not None
    await store.drop()
    assert not store.indexes_ready
    await store.ensure_indexes()
    assert store.indexes_ready
    for collection in await store.collections():
        assert await store.documents(collection) == [], collection
    assert await store.workspaces.get(ws_a.id) is None
    created = await store.workspaces.create("After the drop")
    assert await store.workspaces.get(created["id"]) == created
