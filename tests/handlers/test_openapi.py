"""GET /v1/openapi.json: a valid OpenAPI 3.1 document assembled from schemas/, covering exactly
the routes the app serves, and agreeing with what the handlers validate and return."""

import copy
import json
import re

import pytest
from openapi_spec_validator import validate

from schemas import Schemas
from schemas.openapi import build_document, endpoint_files, operations
from schemas.problems import PROBLEMS
from schemas.route_check import route_mismatches, sample_url
from server.app import collect_handlers
from tests.helpers import Client


@pytest.fixture(scope="module")
def document():
    return build_document()


def schema_id(ref: str) -> str:
    """#/components/schemas/records.list -> /schemas/records/list.json"""
    folder, name = ref.rsplit("/", 1)[1].split(".", 1)
    return f"/schemas/{folder}/{name}.json"


def documented(document, method: str, path: str, status: int) -> dict:
    for full, m, op in operations(document):
        if (m, full) == (method, path):
            return op["responses"][str(status)]
    raise AssertionError(f"{method} {path} is not documented")


def test_document_is_valid_openapi_3_1(document):
    validate(document)
    assert document["openapi"].startswith("3.1")
    assert document["components"]["securitySchemes"]["bearerAuth"] == {
        **document["components"]["securitySchemes"]["bearerAuth"],
        "type": "http",
        "scheme": "bearer",
    }


def test_every_served_route_is_documented_and_every_documented_path_is_served(document):
    assert route_mismatches(document, collect_handlers(), endpoint_files(Schemas())) == []


def test_documented_parameters_and_bodies_are_what_the_handlers_validate(document):
    """route_mismatches compares each endpoint file's query/body ids with the handler's
    query_schemas/body_schemas; here the parameters in the document come from those files."""
    schemas = Schemas()
    for endpoint in endpoint_files(schemas):
        op = next(
            op
            for path, method, op in operations(document)
            if (method, path) == (endpoint["method"], endpoint["path"])
        )
        query = schemas.documents[endpoint.get("query", "/schemas/queries/none.json")]
        names = [p["name"] for p in op.get("parameters", []) if p.get("in") == "query"]
        assert names == list(query.get("properties", {})), endpoint["$id"]
        media_type = endpoint.get("bodyMediaType", "application/json")
        body = op.get("requestBody", {}).get("content", {}).get(media_type, {})
        if "body" in endpoint:
            assert schema_id(body["schema"]["$ref"]) == endpoint["body"]
        else:
            assert not body


def test_the_cross_check_reports_drift():
    schemas = Schemas()
    endpoints = endpoint_files(schemas)
    document = build_document(schemas)
    routes = collect_handlers()
    from handlers.lists import ListsHandler

    class Drifted(ListsHandler):
        query_schemas = {"GET": "/schemas/queries/none.json"}
        scopes = {"GET": "read", "HEAD": "read", "POST": "ingest", "DELETE": "write"}

        async def delete(self) -> None:
            pass

    class Extra(ListsHandler):
        pass

    drifted = [
        (p, Drifted, *rest) if p == r"/v1/lists" else (p, h, *rest) for p, h, *rest in routes
    ]
    drifted.insert(0, (r"/v1/extra", Extra))
    found = route_mismatches(document, drifted, endpoints)
    assert (
        "GET /v1/lists: documents query /schemas/queries/lists.json but Drifted validates "
        "/schemas/queries/none.json" in found
    )
    assert "POST /v1/lists: documents scope write but Drifted requires ingest" in found
    assert any(m.startswith("DELETE /v1/lists") and "not documented" in m for m in found)
    assert any(m.startswith("GET /v1/extra") and "not documented" in m for m in found)
    without = [r for r in routes if r[0] != r"/v1/users"]
    assert "GET /v1/users is documented but not served" in route_mismatches(
        document, without, endpoints
    )


def test_a_malformed_endpoint_file_is_refused_with_its_name():
    schemas = Schemas()
    bad = copy.deepcopy(schemas.documents["/schemas/endpoints/get-users.json"])
    bad["responses"]["200"]["headerz"] = []
    schemas.documents["/schemas/endpoints/get-users.json"] = bad
    with pytest.raises(ValueError, match=r"get-users\.json: #/responses/200/headerz"):
        endpoint_files(schemas)
    bad = copy.deepcopy(schemas.documents["/schemas/endpoints/get-list.json"])
    bad["pathParameters"] = {}
    schemas.documents["/schemas/endpoints/get-list.json"] = bad
    with pytest.raises(ValueError, match="pathParameters"):
        endpoint_files(schemas)


def test_every_schema_file_is_a_component_with_refs_into_components(document):
    """Query files become parameters, so they are not components (unused components are
    lint warnings); every other schema file is one."""
    components = document["components"]["schemas"]
    for sid in Schemas().documents:
        name = sid.removeprefix("/schemas/").removesuffix(".json").replace("/", ".")
        if sid.startswith(("/schemas/endpoints/", "/schemas/meta/", "/schemas/queries/")):
            assert name not in components
            continue
        assert name in components
    text = str(components)
    assert "'/schemas/" not in text and "$id" not in text


def test_the_console_is_not_part_of_the_api_document(document):
    """Only the API (under /v1) and the health checks are operations: generated clients get
    no modules for the reference pages."""
    paths = {path for path, _, _ in operations(document)}
    assert paths == {p for p in paths if p.startswith("/v1/")} | {"/healthz", "/readyz"}
    assert not any(p.startswith("/reference") or p == "/" for p in paths)
    assert document["info"]["license"]["name"]


def walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def test_shapes_that_client_generators_understand(document):
    schemas = document["components"]["schemas"]
    # No allOf next to properties of its own, no if/then, no anyOf except "T or null".
    for node in walk(schemas):
        assert "if" not in node and "then" not in node
        if "allOf" in node:
            assert "properties" not in node and "required" not in node, node.get("title")
        for option in node.get("anyOf", []):
            assert option == {"type": "null"} or "$ref" in option, node.get("title")
    # Paged envelopes: one object each, records typed (the records of lists and prospects, or
    # with includeDeleted=true their tombstones: a oneOf of two references).
    for name, records in [("calls", "call"), ("lists", "list"), ("prospects", "prospect")]:
        page = schemas[f"responses.{name}-page"]
        assert "allOf" not in page and page["type"] == "object"
        typed = {"$ref": f"#/components/schemas/records.{records}"}
        tombstone = {"$ref": "#/components/schemas/records.tombstone"}
        items = page["properties"][name]["items"]
        assert items == (typed if name == "calls" else {"oneOf": [typed, tombstone]})
        assert {"pageSize", "hasMore", "nextCursor", name} == set(page["required"])
        assert {"total", "page"} <= set(page["properties"])  # page-number requests only
    # One Contact object: eight optional strings; the non-blank rule in words and x- keyword.
    contact = schemas["requests.contact"]
    assert "anyOf" not in contact and "required" not in contact
    assert len(contact["properties"]) == 8
    assert all(p["type"] == "string" for p in contact["properties"].values())
    assert contact["x-atLeastOneNonBlank"] is True and "non-blank" in contact["description"]
    # Metrics rows have their own schemas: the figures plus the row's own fields. (Inline:
    # as components, Schemathesis takes the rows for objects a workspace owns and reads the
    # echoed userId filter as another workspace's object.)
    metrics = schemas["responses.dialer-metrics"]["properties"]
    assert metrics["totals"]["$ref"] == "#/components/schemas/records.dialer-metrics"
    for name, own in [("byUser", {"userId"}), ("byDay", {"date", "startsAt", "endsAt"})]:
        row = metrics[name]["items"]
        assert row["title"] and row["unevaluatedProperties"] is False
        assert row["allOf"][0]["$ref"] == "#/components/schemas/records.dialer-metrics"
        assert set(row["allOf"][1]["properties"]) == own == set(row["allOf"][1]["required"])
    # Activity: oneOf with a `type` discriminator whose mapping names every variant.
    activity = schemas["records.activity"]
    assert activity["discriminator"]["propertyName"] == "type"
    assert sorted(v["$ref"] for v in activity["oneOf"]) == sorted(
        activity["discriminator"]["mapping"].values()
    )
    for tag, ref in activity["discriminator"]["mapping"].items():
        variant = schemas[ref.rsplit("/", 1)[1]]
        assert variant["allOf"][1]["properties"]["type"]["const"] == tag
    # The recording is binary for 200 and 206.
    op = documented(document, "GET", "/v1/calls/{id}/recording", 200)
    for status in (200, 206):
        media = documented(document, "GET", "/v1/calls/{id}/recording", status)["content"]
        assert media["audio/mpeg"]["schema"]["format"] == "binary"
    assert op["content"]["audio/mpeg"]["schema"]["contentMediaType"] == "audio/mpeg"


def test_examples_are_valid_for_their_schemas(document):
    schemas = Schemas()
    for endpoint in endpoint_files(schemas):
        if "bodyExample" in endpoint:
            assert schemas.errors(endpoint["body"], endpoint["bodyExample"]) == [], endpoint["$id"]


def test_the_at_least_one_non_blank_rule_is_enforced_by_the_validators():
    schemas = Schemas()
    upload = "/schemas/requests/contacts-upload.json"
    assert schemas.errors(upload, {"contacts": [{"email": "a@b.c", "firstName": " "}]}) == []
    for blank in ({}, {"firstName": "  "}, {"email": "", "jobTitle": "\t"}):
        assert schemas.errors(upload, {"contacts": [{"email": "a@b.c"}, blank]}) == [
            {
                "pointer": "#/contacts/1",
                "detail": "must contain at least one supported field with a non-blank value",
            }
        ]


def test_problem_responses_match_the_problem_table(document):
    for path, method, op in operations(document):
        for status, response in op["responses"].items():
            for code in response.get("x-problem-codes", []):
                assert str(PROBLEMS[code][0]) == status, (method, path, code)
                if method != "HEAD":
                    schema = response["content"]["application/problem+json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/records.problem"}
            if status == "401":
                assert "WWW-Authenticate" in response["headers"]
            if status in ("429", "503"):
                assert "Retry-After" in response["headers"]
        assert "X-Request-Id" in op["responses"][min(op["responses"])]["headers"]
        if op.get("security") != []:
            assert {"401", "429"} <= set(op["responses"]), (method, path)


async def test_served_without_auth_and_equal_to_the_assembled_document(anon, document):
    response = await anon.get("/v1/openapi.json")
    assert response.code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    assert response.json() == document
    assert (await anon.get("/v1/openapi.json?x=1")).code == 400


async def test_documented_response_schemas_match_real_responses(origin, auth, ws_a, document):
    """Parameterless GETs, and the list flow, validated against their documented schemas."""
    schemas = Schemas()
    every = frozenset({"read", "write", "ingest", "admin"})
    _, key = await auth.create(ws_a.id, "every scope", every)
    api = Client(origin, key)

    def check(response, method, path, status):
        assert response.code == status, response
        spec = documented(document, method, path, status)
        (media,) = spec["content"]
        assert response.headers["Content-Type"].startswith(media)
        ref = spec["content"][media]["schema"].get("$ref")
        if media == "application/x-ndjson":  # an export: the schema of each line
            line_ref = spec["content"][media]["schema"]["x-ndjson-line"]["$ref"]
            for line in response.body.splitlines():
                assert schemas.errors(schema_id(line_ref), json.loads(line)) == [], (method, path)
        elif ref:
            assert schemas.errors(schema_id(ref), response.json()) == [], (method, path)
        for header in spec["headers"]:
            if header == "Idempotent-Replayed":  # only on replays (tests/handlers/test_idempotency)
                continue
            if header == "Content-Encoding":  # only with gzip (tests/handlers/test_exports.py)
                continue
            assert header in response.headers, (method, path, header)

    checked = set()
    for path, method, op in operations(document):
        if method != "GET" or "{" in path or op.get("x-try-it") is False:
            continue
        response = await api.get(path)
        if response.code == 400:  # needs parameters the query schema cannot require alone
            check(response, "GET", path, 400)
            continue
        check(response, "GET", path, 200)
        checked.add(path)
    assert {"/v1/users", "/v1/lists", "/v1/openapi.json", "/v1/provider/pending-calls"} <= checked

    users = (await api.get("/v1/users")).json()["users"]
    created = await api.post("/v1/lists", {"name": "Docs", "ownerUserId": users[0]["id"]})
    check(created, "POST", "/v1/lists", 201)
    list_id = created.json()["list"]["id"]
    check(await api.get(f"/v1/lists/{list_id}"), "GET", "/v1/lists/{listId}", 200)
    uploaded = await api.post(f"/v1/lists/{list_id}/contacts", {"contacts": [{"email": "a@b.c"}]})
    check(uploaded, "POST", "/v1/lists/{listId}/contacts", 200)
    check(
        await api.get(f"/v1/lists/{'0' * 8}-0000-4000-8000-{'0' * 12}"),
        "GET",
        "/v1/lists/{listId}",
        404,
    )
    check(await api.get("/v1/users", key="wrong"), "GET", "/v1/users", 401)


def test_sample_url_fills_parameters():
    assert (
        sample_url("/v1/lists/{listId}/contacts")
        == "/v1/lists/00000000-0000-4000-8000-000000000000/contacts"
    )


def test_the_problem_schema_lists_every_error_code():
    enum = Schemas().documents["/schemas/records/problem.json"]["properties"]["code"]["enum"]
    assert sorted(enum) == sorted(PROBLEMS)


def test_every_operation_says_the_scope_it_needs(document):
    """x-required-scope and the security requirement name the scope of the handler's table; a
    scoped operation documents 403 insufficient_scope with its challenge; GET /v1/api-key is
    open to every valid key; operations without a key have no security."""
    from handlers.base import ANY_SCOPE

    routes = collect_handlers()
    seen = set()
    for path, method, op in operations(document):
        handler = next(r[1] for r in routes if re.fullmatch(r[0], sample_url(path)))
        if op.get("security") == []:
            assert not handler.auth_required and "x-required-scope" not in op, (method, path)
            # Only the provider's signed callbacks refuse with 403, and never with a challenge.
            forbidden = op["responses"].get("403", {"x-problem-codes": ["invalid_signature"]})
            assert forbidden["x-problem-codes"] == ["invalid_signature"], (method, path)
            assert "WWW-Authenticate" not in forbidden.get("headers", {})
            continue
        needed = handler.scopes[method]
        if needed == ANY_SCOPE:
            assert "x-required-scope" not in op and "security" not in op, (method, path)
            assert "403" not in op["responses"]
            continue
        seen.add(needed)
        assert op["x-required-scope"] == needed, (method, path)
        assert op["security"] == [{"bearerAuth": [needed]}], (method, path)
        forbidden = op["responses"]["403"]
        assert forbidden["x-problem-codes"] == ["insufficient_scope"]
        assert "WWW-Authenticate" in forbidden["headers"]
    assert {"read", "write"} <= seen
    scheme = document["components"]["securitySchemes"]["bearerAuth"]["description"]
    assert all(scope in scheme for scope in ("`read`", "`write`", "`ingest`"))
    assert "insufficient_scope" in scheme


def test_an_authenticated_write_must_declare_its_scope():
    schemas = Schemas()
    bad = copy.deepcopy(schemas.documents["/schemas/endpoints/post-lists.json"])
    del bad["scope"]
    schemas.documents["/schemas/endpoints/post-lists.json"] = bad
    with pytest.raises(ValueError, match=r"post-lists\.json: an authenticated POST must declare"):
        endpoint_files(schemas)


def test_every_cursor_operation_documents_invalid_cursor(document):
    cursor_ops = 0
    for path, method, op in operations(document):
        names = {p.get("name") for p in op.get("parameters", [])}
        codes = op["responses"].get("400", {}).get("x-problem-codes", [])
        assert ("invalid_cursor" in codes) == ("cursor" in names), (method, path)
        cursor_ops += "cursor" in names
    assert cursor_ops >= 3
