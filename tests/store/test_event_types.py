"""One event-type list: store.events.TYPES is the source, and every schema that names event
types (the event record, the events query, the webhook endpoint requests and records, the
webhook attempt record) names exactly those, in that order. Adding a type to TYPES without its
schemas fails here."""

import json
import pathlib

import pytest

from store.events import TYPES

SCHEMAS = pathlib.Path(__file__).resolve().parents[2] / "schemas"
LISTED = list(TYPES)
# Schemas whose `path` (JSON keys) holds an `enum` of the event types.
ENUMS = {
    "requests/webhook-endpoint-create.json": ("properties", "eventTypes", "items"),
    "requests/webhook-endpoint-update.json": ("properties", "eventTypes", "items"),
    "records/webhook-endpoint.json": ("properties", "eventTypes", "items"),
    "records/webhook-endpoint-secret.json": ("properties", "eventTypes", "items"),
    "records/webhook-attempt.json": ("properties", "eventType"),
}


def load(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text())


def test_types_are_resource_dot_action():
    for name, (resource, action) in TYPES.items():
        assert name == f"{resource}.{action}"


@pytest.mark.parametrize("name", list(ENUMS))
def test_schema_enums_are_the_store_list(name):
    node = load(name)
    for key in ENUMS[name]:
        node = node[key]
    assert node["enum"] == LISTED


def test_the_event_record_has_one_schema_per_type():
    event = load("records/event.json")
    mapping = event["discriminator"]["mapping"]
    assert list(mapping) == LISTED
    assert [ref["$ref"] for ref in event["oneOf"]] == list(mapping.values())
    for kind, ref in mapping.items():
        assert ref == f"/schemas/records/event-{kind.replace('.', '-')}.json"
        one = load(ref.removeprefix("/schemas/"))
        assert one["properties"]["type"]["const"] == kind
    on_disk = sorted(p.name for p in (SCHEMAS / "records").glob("event-*.json"))
    assert on_disk == sorted(ref.rsplit("/", 1)[1] for ref in mapping.values())


def test_the_events_query_lists_the_types():
    described = load("queries/events.json")["properties"]["type"]["description"]
    assert described.endswith(", ".join(LISTED) + ".")
