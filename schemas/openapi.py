"""The OpenAPI 3.1 document, assembled from the files in schemas/ (one source of truth).

`schemas/endpoints/*.json` describe one operation each (shape: schemas/meta/endpoint.json);
every other schema file becomes a component, and `$ref`s by `$id` are rewritten to
`#/components/schemas/<folder>.<name>`. schemas/route_check.py cross-checks the document
against the routes the application serves and the schemas their handlers validate with.

The document describes the API and the health checks only: routes whose handler sets
`in_api_document = False` (the reference console's pages and assets) are not operations in it.
Its shapes are the ones client generators understand: flat object schemas, `allOf` only as a
list of whole parts, `oneOf` with a discriminator, binary bodies as `format: binary`.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable
from typing import Any

from schemas import Schemas
from schemas.problems import PROBLEMS

ENDPOINTS = "/schemas/endpoints/"
# Endpoint files describe operations and query files become parameters: neither is a component.
NOT_COMPONENTS = (ENDPOINTS, "/schemas/meta/", "/schemas/queries/")
ENDPOINT_META = "/schemas/meta/endpoint.json"
NO_QUERY = "/schemas/queries/none.json"
PROBLEM = "/schemas/records/problem.json"
CURSOR_PARAMETER = "/schemas/parameters/cursor.json"
ANY_SCOPE = "any"  # an operation any valid key may call (handlers.base.ANY_SCOPE)
UUID_SCHEMA = {"type": "string", "format": "uuid"}
LICENSE = {"name": "Proprietary", "identifier": "LicenseRef-Proprietary"}
STANDARD_PROBLEMS = ["invalid_request", "unauthorized", "rate_limited", "service_unavailable"]
METHODS = ("get", "head", "post", "put", "patch", "delete", "options")
TAGS = [
    (
        "Users",
        "Workspace users: the candidates for a list's ownerUserId, the callers behind calls; "
        "created, changed and deleted with a key of the `admin` scope.",
    ),
    (
        "Dialer lists",
        "Create dialer lists and upload contacts to them: GET /users, POST /lists, "
        "POST /lists/{listId}/contacts, GET /lists.",
    ),
    ("Calls", "Calls and their recordings."),
    (
        "Calls from the provider",
        "The telephony provider's signed status and recording callbacks, which record the calls "
        "your dialer places through it, and the calls kept aside for want of a user.",
    ),
    ("Prospects", "Prospects and their activity timelines."),
    ("Do not call", "The suppression list: numbers and emails no one is to be dialled at."),
    ("Erasure", "Requests to erase a person from every copy of their data the service keeps."),
    (
        "Exports",
        "Backfill in one request: every record of a resource as NDJSON, then the sync order "
        'from the export\'s `Link rel="next"`.',
    ),
    ("Events", "One feed of everything that changed in the workspace."),
    (
        "Webhooks",
        "The same events pushed to your servers, signed (Standard Webhooks) and retried: "
        "register endpoints, follow their deliveries, recover, rotate secrets. The payloads "
        "are the document's `webhooks`.",
    ),
    ("Reporting", "Dialer KPIs."),
    ("API key", "The key you call with: its scopes and expiry."),
    ("Service", "Health of the service (no API key needed)."),
    ("Reference", "The OpenAPI document of this API."),
]

DESCRIPTION = """\
Server-side HTTP API over a dialer workspace's calling data: calls, call recordings,
prospects, prospect activities, users, dialer lists and dialer KPIs.

Every request carries `Authorization: Bearer <API key>`; the key decides the workspace, and
its scopes what it may do: `read` (every GET and HEAD), `write` (the integrator's writes:
lists, contact uploads, webhook endpoints), `ingest` (the dialer's writes: calls, activities),
`admin` (the workspace's users: creating, changing and deleting them; erasure requests).
Each operation names the scope it needs (`x-required-scope`, and in its security
requirement); a request the key's scopes do not allow is 403 `insufficient_scope`. GET
/v1/api-key says which scopes a key has and when it expires.

Paginated lists take `page` and `pageSize` (50 or 100), are ordered newest first and carry a
`Link` header. Errors are RFC 9457 problem details whose `type` points at
/reference/problems#<code>.

Requests consume a per-workspace rate limit shared by every client of the workspace, including
the interactive reference at /reference, which sends its requests to this live system with real
workspace data."""

HEADERS = {
    "X-Request-Id": (
        "Id of this request, also in error bodies and the service's log. A client "
        "value of 1-128 characters of A-Z a-z 0-9 . _ : - is echoed.",
        {"type": "string"},
    ),
    "RateLimit-Policy": (
        "The workspace's rate-limit policy: quota `q` requests per window "
        '`w` seconds, e.g. `"workspace";q=600;w=60`.',
        {"type": "string"},
    ),
    "RateLimit": (
        "Requests `r` remaining in the current window and seconds `t` until it "
        'resets, e.g. `"workspace";r=598;t=42`.',
        {"type": "string"},
    ),
    "Retry-After": ("Seconds to wait before retrying.", {"type": "integer", "minimum": 0}),
    "WWW-Authenticate": (
        'The Bearer challenge (RFC 6750): on 401 `error="invalid_token"` for a key '
        "that is malformed, unknown, revoked or expired; on 403 "
        '`error="insufficient_scope"` with the `scope` the operation needs.',
        {"type": "string"},
    ),
    "Link": (
        "RFC 8288 links to the first, prev, next and last pages, relative URLs that keep "
        'the other query parameters, e.g. `</v1/lists?page=2&pageSize=50>; rel="next"`. On '
        'an export, `rel="next"` is the sync-order request that continues right after it, e.g. '
        '`</v1/calls?sort=updatedAt&cursor=...>; rel="next"`.',
        {"type": "string"},
    ),
    "Content-Encoding": (
        "`gzip` when the request's Accept-Encoding accepts gzip: the body is gzip-encoded.",
        {"type": "string", "enum": ["gzip"]},
    ),
    "Location": ("URL of the created resource.", {"type": "string"}),
    "Content-Range": (
        "Which bytes of the recording this is: `bytes <start>-<end>/<size>`; on "
        "416, `bytes */<size>` when the size is known.",
        {"type": "string"},
    ),
    "Content-Length": ("Number of bytes in the body.", {"type": "integer", "minimum": 0}),
    "Accept-Ranges": ("`bytes`: byte ranges may be requested.", {"type": "string"}),
    "ETag": ("Entity tag of the recording, for If-Range.", {"type": "string"}),
    "Content-Disposition": ("Suggested file name for saving the body.", {"type": "string"}),
    "Idempotent-Replayed": (
        "`true` when this is the stored response of an earlier request with the same "
        "Idempotency-Key (nothing was written this time).",
        {"type": "string", "enum": ["true"]},
    ),
}

REQUEST_HEADERS = {
    "Idempotency-Key": (
        "Makes the request safe to retry for 24 hours (draft-ietf-httpapi-idempotency-key-"
        "header), whatever happened to the first attempt: 1 to 255 printable ASCII "
        "characters, unique per request, e.g. a UUID. A retry with the same key, method, path "
        "and body gets the first response again (with `Idempotent-Replayed: true`) and writes "
        "nothing, or, when the first attempt never finished (a crash, a dropped database), "
        "performs the write once; the same key with another body or path is 422 "
        "`idempotency_key_reused`; while the first is still running, 409 "
        "`idempotency_key_in_use` with Retry-After. Responses of 500 and above are not kept, "
        "so their retry runs again (and writes once). Keys are per workspace.",
        {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[\\x20-\\x7e]+$"},
    ),
    "Range": (
        "A single byte range `bytes=<start>-<end>` (either end may be omitted; an end past "
        "the end, of any length, means the last byte); answered with 206, or 416 when it "
        "cannot be satisfied.",
        {"type": "string", "pattern": "^bytes=\\d*-\\d*$"},
    ),
    "X-Twilio-Signature": (
        "The provider's signature of the callback: base64 of the HMAC-SHA1, keyed by the "
        "provider account's auth token, of the URL it called (the service's public_base_url, "
        "path and query) followed by each form parameter, sorted by name, as name then value.",
        {"type": "string"},
    ),
    "If-Range": (
        "An ETag from an earlier response: the Range applies only while the recording "
        "is unchanged, otherwise the whole recording is sent.",
        {"type": "string"},
    ),
}


def component_name(schema_id: str) -> str:
    """/schemas/records/list.json -> records.list"""
    folder, name = schema_id.removeprefix("/schemas/").removesuffix(".json").split("/")
    return f"{folder}.{name}"


def rewrite(node: Any, base: str | None = None) -> Any:
    """A deep copy with $refs by $id (and local #/ refs of component `base`) pointing into
    #/components/schemas, and without $id/$schema (they would change the base URI)."""
    if isinstance(node, list):
        return [rewrite(item, base) for item in node]
    if not isinstance(node, dict):
        return copy.deepcopy(node)
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$id", "$schema"):
            continue
        if key == "discriminator" and isinstance(value, dict) and "mapping" in value:
            mapping = {k: rewrite({"$ref": v}, base)["$ref"] for k, v in value["mapping"].items()}
            result[key] = {**value, "mapping": mapping}
        elif key == "$ref" and isinstance(value, str):
            target, _, fragment = value.partition("#")
            if target.startswith("/schemas/"):
                value = f"#/components/schemas/{component_name(target)}" + fragment
            elif not target and base:
                value = f"#/components/schemas/{component_name(base)}" + fragment
            result[key] = value
        else:
            result[key] = rewrite(value, base)
    return result


def schema_ref(value: str | dict) -> dict:
    """A schema $id (string) as a $ref, or an inline schema rewritten."""
    if isinstance(value, str):
        return {"$ref": f"#/components/schemas/{component_name(value)}"}
    return rewrite(value)


def path_names(path: str) -> list[str]:
    return re.findall(r"\{([^}/]+)\}", path)


def endpoint_files(schemas: Schemas) -> list[dict]:
    """Every endpoint file, checked against the meta-schema and against the schema ids."""
    endpoints = []
    for sid, doc in schemas.documents.items():
        if not sid.startswith(ENDPOINTS):
            continue
        errors = schemas.errors(ENDPOINT_META, doc)
        if errors:
            raise ValueError(f"{sid}: {errors[0]['pointer']} {errors[0]['detail']}")
        for key in ("query", "body"):
            if key in doc and doc[key] not in schemas.documents:
                raise ValueError(f"{sid}: {key} {doc[key]} is not a schema file")
        if doc.get("auth", True) and doc["method"] != "GET" and "scope" not in doc:
            raise ValueError(f"{sid}: an authenticated {doc['method']} must declare its scope")
        if set(path_names(doc["path"])) != set(doc.get("pathParameters", {})):
            raise ValueError(f"{sid}: pathParameters must describe exactly {doc['path']}")
        unknown = [c for c in doc.get("problems", []) if c not in PROBLEMS]
        if unknown:
            raise ValueError(f"{sid}: unknown problem code {unknown[0]}")
        endpoints.append(doc)
    return endpoints


def parameters(endpoint: dict, schemas: Schemas) -> list[dict]:
    result = []
    for name, spec in endpoint.get("pathParameters", {}).items():
        result.append(
            {
                "name": name,
                "in": "path",
                "required": True,
                "description": spec["description"],
                "schema": rewrite(spec.get("schema", UUID_SCHEMA)),
            }
        )
    query = schemas.documents[endpoint.get("query", NO_QUERY)]
    for name, prop in query.get("properties", {}).items():
        target = schemas.resolve(prop)
        parameter = {
            "name": name,
            "in": "query",
            "required": name in query.get("required", []),
            "schema": rewrite(prop),
        }
        description = prop.get("description") or target.get("description")
        if description:
            parameter["description"] = description
        result.append(parameter)
    for name in endpoint.get("requestHeaders", []):
        result.append({"$ref": f"#/components/parameters/{name}"})
    return result


def response(spec: dict, auth: bool, head: bool = False) -> dict:
    names = ["X-Request-Id"] + (["RateLimit-Policy", "RateLimit"] if auth else [])
    names += [h for h in spec.get("headers", []) if h not in names]
    result = {
        "description": spec["description"],
        "headers": {h: {"$ref": f"#/components/headers/{h}"} for h in names},
    }
    if spec.get("content") and not head:
        result["content"] = {
            media: {"schema": schema_ref(schema)} for media, schema in spec["content"].items()
        }
    return result


def problem_responses(codes: list[str], auth: bool, head: bool) -> dict:
    result: dict[str, dict] = {}
    for code in codes:
        status, title, meaning = PROBLEMS[code]
        headers = {
            "401": ["WWW-Authenticate"],
            "403": [] if code == "invalid_signature" else ["WWW-Authenticate"],
            "429": ["Retry-After"],
            "503": ["Retry-After"],
            "416": ["Content-Range"],
        }.get(str(status), [])
        line = f"{title} (`{code}`): {meaning}"
        entry = result.get(str(status))
        if entry:  # two codes with one status: one response describing both
            entry["description"] += "\n\n" + line
            entry["x-problem-codes"].append(code)
            continue
        spec = {
            "description": line,
            "headers": headers,
            "content": {"application/problem+json": PROBLEM},
        }
        result[str(status)] = response(spec, auth and status != 401, head)
        result[str(status)]["x-problem-codes"] = [code]
    return result


def required_scope(endpoint: dict) -> str | None:
    """The scope an endpoint file's operation needs: None without a key, ANY_SCOPE for any
    valid key; a GET that declares none needs `read`."""
    if not endpoint.get("auth", True):
        return None
    return endpoint.get("scope", "read")


def takes_cursor(endpoint: dict, schemas: Schemas) -> bool:
    """Whether the operation's query has the shared cursor parameter (400 invalid_cursor)."""
    query = schemas.documents[endpoint.get("query", NO_QUERY)]
    return any(p.get("$ref") == CURSOR_PARAMETER for p in query.get("properties", {}).values())


def operation(endpoint: dict, schemas: Schemas, head: bool = False) -> dict:
    auth = endpoint.get("auth", True)
    scope = required_scope(endpoint)
    op = {
        "operationId": endpoint["operationId"] + ("Head" if head else ""),
        "tags": [endpoint["tag"]],
        "summary": endpoint["summary"],
        "description": endpoint["description"],
    }
    params = parameters(endpoint, schemas)
    if params:
        op["parameters"] = params
    if "body" in endpoint:
        media = {"schema": schema_ref(endpoint["body"])}
        if "bodyExample" in endpoint:
            media["example"] = endpoint["bodyExample"]
        media_type = endpoint.get("bodyMediaType", "application/json")
        op["requestBody"] = {"required": True, "content": {media_type: media}}
    responses = {
        status: response(spec, auth, head) for status, spec in endpoint["responses"].items()
    }
    codes = (STANDARD_PROBLEMS if auth else []) + endpoint.get("problems", [])
    if takes_cursor(endpoint, schemas):
        codes.insert(1, "invalid_cursor")
    if scope is not None and scope != ANY_SCOPE:
        codes.append("insufficient_scope")
    responses.update(problem_responses(list(dict.fromkeys(codes)), auth, head))
    op["responses"] = dict(sorted(responses.items()))
    if not auth:
        op["security"] = []
    elif scope != ANY_SCOPE:
        # OpenAPI 3.1 lets a requirement of any scheme list the roles it needs.
        op["security"] = [{"bearerAuth": [scope]}]
        op["x-required-scope"] = scope
    if endpoint.get("tryIt") is False:
        op["x-try-it"] = False
    return op


def build_document(schemas: Schemas | None = None) -> dict:
    """The OpenAPI 3.1 document of the service."""
    schemas = schemas or Schemas()
    paths: dict[str, dict] = {}
    for endpoint in endpoint_files(schemas):
        path = endpoint["path"]
        item = paths.setdefault(path, {})
        method = endpoint["method"].lower()
        if method in item:
            raise ValueError(f"{endpoint['$id']}: {endpoint['method']} {path} is documented twice")
        item[method] = operation(endpoint, schemas)
        if endpoint.get("head"):
            item["head"] = operation(endpoint, schemas, head=True)
    used_tags = {op["tags"][0] for item in paths.values() for m, op in item.items() if m in METHODS}
    tags = [{"name": n, "description": d} for n, d in TAGS if n in used_tags]
    tags += [{"name": n} for n in sorted(used_tags - {n for n, _ in TAGS})]
    components = {
        component_name(sid): rewrite(doc, sid)
        for sid, doc in schemas.documents.items()
        if not sid.startswith(NOT_COMPONENTS)
    }
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "Workspace Data API",
            "version": "1.0.0",
            "description": DESCRIPTION,
            "license": LICENSE,
        },
        # Full paths (/v1/users, /healthz) under the service's root: one base URL for clients.
        "servers": [{"url": "/", "description": "this service (the API is under /v1)"}],
        "security": [{"bearerAuth": []}],
        "tags": tags,
        "paths": dict(sorted(paths.items())),
        "webhooks": webhooks_section(schemas),
        "components": {
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "The workspace's API key: `Authorization: Bearer <API key>`. "
                    "Keys are for server-side use; never put one in a query string. A key "
                    "holds one or more scopes, and each operation's security requirement "
                    "lists the one it needs (also its `x-required-scope`): `read` for every "
                    "GET and HEAD, `write` for the integrator's writes (lists, contact "
                    "uploads, webhook endpoints), `ingest` for the dialer's writes (calls, "
                    "activities), `admin` for the users' writes. A request without it is 403 "
                    "`insufficient_scope` with "
                    '`WWW-Authenticate: Bearer error="insufficient_scope"` and the scope '
                    "needed; it changes nothing and counts against the rate limit. A key "
                    "past its expiry is 401 like a revoked one. GET /v1/api-key describes "
                    "the calling key.",
                }
            },
            "headers": {name: {"description": d, "schema": s} for name, (d, s) in HEADERS.items()},
            "parameters": {
                name: {
                    "name": name,
                    "in": "header",
                    "required": False,
                    "description": d,
                    "schema": s,
                }
                for name, (d, s) in REQUEST_HEADERS.items()
            },
            "schemas": dict(sorted(components.items())),
        },
    }


EVENT = "/schemas/records/event.json"
WEBHOOK_HEADERS = {
    "webhook-id": "The event's id: the same on every attempt and every recovery of the event, "
    "so deduplicate on it.",
    "webhook-timestamp": "Unix seconds of this attempt; reject a message far from your clock "
    "(a Standard Webhooks library allows 5 minutes).",
    "webhook-signature": '`v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` '
    "with the endpoint's secret (base64-decoded without its `whsec_` prefix); during the 24 "
    "hours after a rotation, one signature per valid secret, space-separated.",
}


def webhooks_section(schemas: Schemas) -> dict:
    """OpenAPI 3.1 `webhooks`: one POST per event type, its body the event's schema."""
    mapping = schemas.documents[EVENT]["discriminator"]["mapping"]
    section = {}
    for kind, schema_id in mapping.items():
        name = "".join(part.capitalize() for part in kind.split("."))
        section[kind] = {
            "post": {
                "operationId": f"on{name}",
                "tags": ["Webhooks"],
                "summary": f"{kind}, pushed to your endpoint",
                "description": f"What an endpoint subscribed to `{kind}` receives: a POST whose "
                "body is the event exactly as GET /events serves it, with the Standard Webhooks "
                "headers. Answer any 2xx within 15 seconds; anything else (redirects included) "
                "is retried on the schedule, and 410 Gone disables the endpoint. Delivery is at "
                "least once and in no guaranteed order: deduplicate on `webhook-id` and keep the "
                "record with the latest `data.updatedAt`.",
                "parameters": [
                    {
                        "name": header,
                        "in": "header",
                        "required": True,
                        "description": text,
                        "schema": {"type": "string"},
                    }
                    for header, text in WEBHOOK_HEADERS.items()
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": schema_ref(schema_id)}},
                },
                "responses": {
                    "200": {"description": "Any 2xx acknowledges the delivery."},
                    "410": {"description": "Gone: the endpoint is disabled at once."},
                },
                "security": [],
                "x-try-it": False,
            }
        }
    return section


def operations(document: dict) -> Iterable[tuple[str, str, dict]]:
    """(full path as served, METHOD, operation) for every operation of the document."""
    for path, item in document["paths"].items():
        for method, op in item.items():
            if method in METHODS:
                yield path, method.upper(), op
