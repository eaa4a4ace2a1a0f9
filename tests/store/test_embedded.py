"""The embedded backend's performance fixes return exactly what mongomock returned before."""

import datetime as dt
import random

import pytest
from mongomock.collection import Cursor

from store import embedded
from store.database import open_store


def values(rng: random.Random):
    return rng.choice([
        rng.randint(-3, 3), rng.random(), f"s{rng.randint(0, 5)}", "É", None, True,
        dt.datetime(2026, 1, rng.randint(1, 3)), [rng.randint(0, 3), 1], [], {"a": 1},
    ])


@pytest.fixture(scope="module")
def collection():
    store = open_store("memory", "embedded")
    rng = random.Random(5)
    docs = []
    for i in range(300):
        doc = {"_id": i, "plain": f"k{rng.randint(0, 40)}", "when": dt.datetime(2026, 1, 1)
               + dt.timedelta(minutes=rng.randint(0, 50)), "n": rng.choice([1, 2, 2.5])}
        if i % 7:
            doc["mixed"] = values(rng)
        docs.append(doc)
    sync = store.db["things"].delegate
    sync.insert_many(docs)
    return sync


SORTS = [
    [("plain", 1)], [("plain", -1), ("_id", -1)], [("when", -1), ("_id", 1)], [("n", 1)],
    [("mixed", 1)], [("mixed", -1), ("plain", 1)], [("missing", 1), ("_id", -1)],
    [("$natural", -1)],
]


@pytest.mark.parametrize("sort", SORTS, ids=[str(s) for s in SORTS])
@pytest.mark.parametrize("skip,limit", [(0, 0), (10, 25), (290, 50), (0, -7)])
def test_sorted_pages_equal_the_original(collection, sort, skip, limit):
    patched = list(collection.find({"_id": {"$gte": 3}}).sort(sort).skip(skip).limit(limit))
    original = Cursor(collection, {"_id": {"$gte": 3}}, sort, None, skip, limit)
    expected = []
    while True:
        try:
            expected.append(embedded.ORIGINALS["next"](original))
        except StopIteration:
            break
    reference = list(embedded.ORIGINALS["get_dataset"](collection, {"_id": {"$gte": 3}}, sort,
                                                       None, dict))
    reference = reference[skip:][:abs(limit)] if limit else reference[skip:]
    assert patched == reference
    assert [d["_id"] for d in expected] == [d["_id"] for d in reference]
