"""Every index of the MongoDB backend (store/mongo/indexes.py) exists after start-up, with its
keys and options (on the wire tier: created over the wire by the real driver, and accepted by the
server). The SQLite indexes are checked through the query plans (test_query_plans.py)."""

import pytest

from store.mongo.indexes import INDEXES

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
            if "expireAfterSeconds" in spec:
                assert index["expireAfterSeconds"] == spec["expireAfterSeconds"]


async def test_creating_the_indexes_again_changes_nothing(store):
    before = {name: await store.db[name].index_information() for name in INDEXES}
    await store.ensure_indexes()
    assert {name: await store.db[name].index_information() for name in INDEXES} == before
