"""docs/deployment.md's index tables cannot drift from the index definitions: every index of
store/sqlite/schema.py and store/mongo/indexes.py is named with its fields (and whether it is
unique, partial or expires records), none is missing and none is extra; the same for the
SQLite tables whose composite primary key the page lists."""

from __future__ import annotations

import re

from store.mongo.indexes import EXPIRY as MONGO_EXPIRY
from store.mongo.indexes import INDEXES as MONGO_INDEXES
from store.sqlite.schema import INDEXES as SQLITE_INDEXES
from store.sqlite.schema import TABLES
from tests.docs.markdown import read, section, tables

DOC = "docs/deployment.md"


def documented(heading: str, place: str) -> dict[tuple[str, str], tuple[str, ...]]:
    """(table or collection, index name) -> (fields..., then "partial", "unique", "TTL")."""
    [table, *_] = tables(section(read(DOC), heading))
    found = {}
    for row in table:
        spec = row["Fields"]
        fields = re.fullmatch(r"`([^`]+)`(.*)", spec)
        assert fields, f"{row}: the fields in backticks, then unique, partial or TTL"
        flags = tuple(sorted(fields.group(2).split()))
        assert set(flags) <= {"unique", "partial", "TTL"}, row
        for owner in row[place].split(", "):  # one row may name several tables alike
            key = (owner, row["Index"])
            assert key not in found, f"{key} twice"
            found[key] = (*[f.strip() for f in fields.group(1).split(",")], *flags)
    return found


def sqlite_defined() -> dict[tuple[str, str], tuple[str, ...]]:
    defined = {}
    for name, spec in SQLITE_INDEXES.items():
        unique = spec.startswith("UNIQUE ")
        parsed = re.fullmatch(r"(\w+) \(([^)]*)\)( WHERE .+)?", spec.removeprefix("UNIQUE "))
        assert parsed, spec
        table, columns, partial = parsed.groups()
        fields = [re.sub(r" DESC$", " desc", c.strip()) for c in columns.split(",")]
        flags = sorted((["unique"] if unique else []) + (["partial"] if partial else []))
        defined[(table, name)] = (*fields, *flags)
    return defined


def mongo_defined() -> dict[tuple[str, str], tuple[str, ...]]:
    defined = {}
    for collection, models in MONGO_INDEXES.items():
        for model in models:
            document = model.document
            fields = [f"{k} desc" if d == -1 else k for k, d in document["key"].items()]
            flags = sorted(
                (["unique"] if document.get("unique") else [])
                + (["partial"] if "partialFilterExpression" in document else [])
                + (["TTL"] if "expireAfterSeconds" in document else [])
            )
            defined[(collection, document["name"])] = (*fields, *flags)
    for collection, field in MONGO_EXPIRY.items():  # TTL, or a plain index where refused
        defined[(collection, "ttl")] = (field, "TTL")
    return defined


def test_the_sqlite_table_lists_every_index_with_its_fields():
    assert documented("### SQLite", "Table") == sqlite_defined()


def test_the_mongodb_table_lists_every_index_with_its_fields():
    assert documented("### MongoDB", "Collection") == mongo_defined()


def test_the_primary_keys_listed_are_the_tables_primary_keys():
    tabled = tables(section(read(DOC), "### SQLite"))
    [keys] = [t for t in tabled if t and "Primary key" in t[0]]
    for row in keys:
        declared = re.search(r"PRIMARY KEY \(([^)]*)\)", TABLES[row["Table"]])
        assert declared, row["Table"]
        assert row["Primary key"].strip("`") == declared.group(1), row["Table"]


def test_every_index_says_what_it_serves():
    for heading in ("### SQLite", "### MongoDB"):
        [table, *_] = tables(section(read(DOC), heading))
        for row in table:
            assert len(row["Serves"].split()) >= 2, row
