"""Every index of the MongoDB backend (store/mongo/indexes.py) exists after start-up, with its
keys and options (on the wire tier: created over the wire by the real driver, and accepted by the
server). The SQLite indexes are checked through the query plans (test_query_plans.py)."""

import pytest

from store.mongo.indexes import EXPIRY, INDEXES
from tests.wire import limit

pytestmark = pytest.mark.mongodb


async def test_every_index_is_created_with_its_keys_and_options(store):
    for collection, models in INDEXES.items():
        found = await store.db[collection].index_information()
        for model in models:
            spec = model.document
            index = found.get(spec["name"])
            assert index is not None, (collection, spec["name"], sorted(found))
            assert [(k, int(v)) for k, v in index["key"]] == list(spec["key"].items())
            assert bool(index.get("unique")) == bool(spec.get("unique")), spec["name"]


async def test_every_expiry_time_is_indexed(store):
    """The expiry sweep's index: a TTL index where the server keeps them, else a plain one."""
    for collection, field in EXPIRY.items():
        found = await store.db[collection].index_information()
        on_field = [index for index in found.values() if index["key"] == [(field, 1)]]
        assert len(on_field) == 1, (collection, found)
        assert ("expireAfterSeconds" in on_field[0]) == store.ttl_indexes, on_field


async def test_expiry_times_have_ttl_indexes_where_the_server_keeps_them(store):
    if not store.ttl_indexes:
        pytest.skip(limit("ttl") or "server limit: the server keeps no TTL indexes")
    for collection, field in EXPIRY.items():
        ttl = (await store.db[collection].index_information())["ttl"]
        assert ttl["key"] == [(field, 1)] and ttl["expireAfterSeconds"] == 0


async def test_creating_the_indexes_again_changes_nothing(store):
    names = [*INDEXES, *EXPIRY]
    before = {name: await store.db[name].index_information() for name in names}
    await store.ensure_indexes()
    assert {name: await store.db[name].index_information() for name in names} == before
