"""The schemas say what the server enforces wherever JSON Schema can: each request here is
refused by the server (400) and by the JSON Schema the OpenAPI document is assembled from, so a
client generated from the document, or a fuzzer, learns the rule before sending."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from schemas import Schemas
from tests.handlers.test_body_text import CONTACT, api, call  # noqa: F401 (the fixture)

SCHEMAS = Schemas()
RECORDING = "RE" + "b" * 32


def body_cases(user: str, list_id: str):
    no_duration = {k: v for k, v in call(user).items() if k != "recordingDurationSeconds"}
    no_sid = {k: v for k, v in call(user).items() if k != "recordingSid"}
    return [
        ("POST", "/v1/calls", "/schemas/requests/call-create.json", no_duration),
        ("POST", "/v1/calls", "/schemas/requests/call-create.json", no_sid),
        ("POST", "/v1/calls", "/schemas/requests/call-create.json", call(user, prospect={})),
        (
            "POST",
            "/v1/calls",
            "/schemas/requests/call-create.json",
            call(user, prospect={"firstName": " ", "email": "\u3000"}),
        ),
        (
            "POST",
            f"/v1/lists/{list_id}/contacts",
            "/schemas/requests/contacts-upload.json",
            {"contacts": [{}]},
        ),
        (
            "POST",
            f"/v1/lists/{list_id}/contacts",
            "/schemas/requests/contacts-upload.json",
            {"contacts": [CONTACT, {"lastName": "\t"}]},
        ),
    ]


async def test_body_rules_are_in_the_schema(api, ws_a):  # noqa: F811
    user = ws_a.users[0]["id"]
    listing = (await api.post("/v1/lists", {"name": "L", "ownerUserId": user})).json()["list"]
    for method, path, schema, body in body_cases(user, listing["id"]):
        response = await api.fetch(path, method, json_body=body)
        assert response.code == 400, (path, body, response)
        assert SCHEMAS.errors(schema, body), (schema, body)


QUERIES = [
    ("/v1/calls", "/schemas/queries/calls.json", {"createdFrom": "2026-13-01"}),
    ("/v1/calls", "/schemas/queries/calls.json", {"createdTo": "2026-01-01T24:00:00Z"}),
    ("/v1/calls", "/schemas/queries/calls.json", {"updatedSince": "0000-01-01"}),
    ("/v1/prospects", "/schemas/queries/prospects.json", {"updatedSince": "2026-01-01T10:00"}),
    ("/v1/events", "/schemas/queries/events.json", {"since": "yesterday"}),
    ("/v1/events", "/schemas/queries/events.json", {"since": "2026-01-01T10:00:00+25:00"}),
    (
        "/v1/reporting/dialer-metrics",
        "/schemas/queries/dialer-metrics.json",
        {"from": "1899-12-31", "to": "1900-01-01"},
    ),
    (
        "/v1/reporting/dialer-metrics",
        "/schemas/queries/dialer-metrics.json",
        {"from": "2026-01-01", "to": "2026-01-02", "timezone": "Not a zone!"},
    ),
]


@pytest.mark.parametrize(("path", "schema", "query"), QUERIES)
async def test_parameter_rules_are_in_the_schema(api, path, schema, query):  # noqa: F811
    text = "&".join(f"{k}={quote(v, safe='')}" for k, v in query.items())
    response = await api.get(f"{path}?{text}")
    assert response.code == 400, response
    assert SCHEMAS.errors(schema, query), query
