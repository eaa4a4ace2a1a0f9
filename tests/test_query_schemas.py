"""Query validation that remembers valid parameter values (schemas.Schemas.query_errors)
answers exactly what validating the whole query answers, whatever was seen before."""

import itertools
import random

from schemas import Schemas

VALUES = {
    "page": [1, 3, 0, -2, "x", 10**40],
    "pageSize": [50, 100, 101, 0, "ten"],
    "sort": ["-createdAt", "updatedAt", "name"],
    "direction": ["inbound", "outbound", "sideways"],
    "userId": ["4f0c2a4e-9a53-4d3b-8d5e-0c9f1d2e3a4b", "not-a-uuid"],
    "createdFrom": ["2026-11-01", "x" * 41],
    "cursor": ["c" * 60, "c" * 300, ""],
    "colour": ["blue"],
    "shade": ["dark"],
}


def test_remembered_values_give_the_same_errors_as_the_whole_query():
    schemas, fresh = Schemas(), Schemas()
    rng = random.Random(5)
    names = list(VALUES)
    checked = 0
    for _ in range(3000):
        chosen = rng.sample(names, rng.randrange(0, 5))
        query = {name: rng.choice(VALUES[name]) for name in chosen}
        for schema in ("/schemas/queries/calls.json", "/schemas/queries/prospects.json"):
            assert schemas.query_errors(schema, query) == fresh.errors(schema, query), query
            checked += 1
    assert checked == 6000
    # Every single-parameter query, valid or not, after all of the above.
    for name, values in VALUES.items():
        for value in values:
            query = {name: value}
            assert schemas.query_errors("/schemas/queries/calls.json", query) == fresh.errors(
                "/schemas/queries/calls.json", query
            )


def test_a_schema_that_relates_parameters_is_always_validated_whole():
    schemas = Schemas()
    metrics = "/schemas/queries/dialer-metrics.json"
    assert metrics not in schemas._flat  # `from` and `to` are required
    for values in itertools.islice(itertools.product(["2026-11-01", None], repeat=2), 4):
        query = {k: v for k, v in zip(("from", "to"), values, strict=True) if v}
        assert schemas.query_errors(metrics, query) == schemas.errors(metrics, query)
