"""Key scopes, route by route: every authenticated route and method of the application against a
key of each scope. A method the key's scopes allow is served (whatever the handler then says);
any other is 403 `insufficient_scope` with `WWW-Authenticate: Bearer error="insufficient_scope"`
and the scope it needs (RFC 6750), changes nothing, is counted against the rate limit, and is
refused before its body is read.

SCOPE_TABLE must name every authenticated route and every method it serves, with the scope the
method needs (test_every_route_and_method_is_in_the_table fails otherwise): whoever adds an
endpoint adds its row here, and states its scope twice, in its handler and in this table.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import uuid

import pytest

from handlers.base import ANY_SCOPE, APIHandler
from server.app import collect_handlers
from server.ratelimit import RateLimiter
from tests.helpers import Client, FakeClock, add_call

pytestmark = pytest.mark.long

TODAY = dt.date(2026, 11, 21)
METRICS = f"from={TODAY - dt.timedelta(days=7)}&to={TODAY}"

# route pattern -> method -> (the scope it needs, path, JSON body or None). {list} is a list of
# the workspace, {user} one of its active users, {call} one of its calls, {prospect} one of its
# prospects, {random} a fresh UUID.
CALL = {
    "userId": "{user}",
    "prospectId": "{prospect}",
    "direction": "outbound",
    "disposition": "busy",
    "fromNumber": "+12125550142",
    "toNumber": "+14155550111",
    "startedAt": "2026-01-05T10:00:00Z",
    "endedAt": "2026-01-05T10:00:09Z",
}
SCOPE_TABLE: dict[str, dict[str, tuple[str, str, object]]] = {
    r"/v1/do-not-call": {
        "GET": ("read", "/v1/do-not-call", None),
        "HEAD": ("read", "/v1/do-not-call", None),
        "POST": ("write", "/v1/do-not-call", {"entries": [{"phoneNumber": "+14155550199"}]}),
    },
    r"/v1/do-not-call/([^/]+)": {
        "DELETE": ("write", "/v1/do-not-call/{random}", None),
    },
    r"/v1/api-key": {
        "GET": (ANY_SCOPE, "/v1/api-key", None),
        "HEAD": (ANY_SCOPE, "/v1/api-key", None),
    },
    r"/v1/users": {
        "GET": ("read", "/v1/users", None),
        "HEAD": ("read", "/v1/users", None),
        "POST": (
            "admin",
            "/v1/users",
            {"email": "scoped@a.example", "firstName": "Sco", "lastName": "Ped"},
        ),
    },
    r"/v1/users/([^/]+)": {
        "GET": ("read", "/v1/users/{user}", None),
        "HEAD": ("read", "/v1/users/{user}", None),
        "PATCH": ("admin", "/v1/users/{user}", {"lastName": "Scoped"}),
        "DELETE": ("admin", "/v1/users/{user}", None),
    },
    r"/v1/lists": {
        "GET": ("read", "/v1/lists", None),
        "HEAD": ("read", "/v1/lists", None),
        "POST": ("write", "/v1/lists", {"name": "Scoped", "ownerUserId": "{user}"}),
    },
    r"/v1/lists/([^/]+)": {
        "GET": ("read", "/v1/lists/{list}", None),
        "HEAD": ("read", "/v1/lists/{list}", None),
        "PATCH": ("write", "/v1/lists/{list}", {"name": "Scoped"}),
        "DELETE": ("write", "/v1/lists/{list}", None),
    },
    r"/v1/lists/([^/]+)/contacts": {
        "POST": ("write", "/v1/lists/{list}/contacts", {"contacts": [{"email": "s@a.example"}]}),
    },
    r"/v1/lists/([^/]+)/contacts/remove": {
        "POST": ("write", "/v1/lists/{list}/contacts/remove", {"prospectIds": ["{prospect}"]}),
    },
    r"/v1/prospects/([^/]+)": {
        "GET": ("read", "/v1/prospects/{prospect}", None),
        "HEAD": ("read", "/v1/prospects/{prospect}", None),
        "PATCH": ("write", "/v1/prospects/{prospect}", {"jobTitle": "Scoped"}),
        "DELETE": ("write", "/v1/prospects/{prospect}", None),
    },
    r"/v1/calls": {
        "GET": ("read", "/v1/calls", None),
        "HEAD": ("read", "/v1/calls", None),
        "POST": ("ingest", "/v1/calls", CALL),
    },
    r"/v1/calls/batch": {
        "POST": ("ingest", "/v1/calls/batch", {"calls": [CALL]}),
    },
    r"/v1/calls/([^/]+)": {
        "GET": ("read", "/v1/calls/{call}", None),
        "HEAD": ("read", "/v1/calls/{call}", None),
        "PATCH": ("ingest", "/v1/calls/{call}", {"notes": "scoped"}),
    },
    r"/v1/calls/([^/]+)/recording": {
        "GET": ("read", "/v1/calls/{call}/recording", None),
        "HEAD": ("read", "/v1/calls/{call}/recording", None),
    },
    r"/v1/provider/pending-calls": {
        "GET": ("ingest", "/v1/provider/pending-calls", None),
        "HEAD": ("ingest", "/v1/provider/pending-calls", None),
    },
    r"/v1/provider/pending-calls/([^/]+)/resolve": {
        "POST": (
            "ingest",
            "/v1/provider/pending-calls/CA0123456789abcdef0123456789abcdef/resolve",
            {"userId": "{user}"},
        ),
    },
    r"/v1/prospects": {
        "GET": ("read", "/v1/prospects", None),
        "HEAD": ("read", "/v1/prospects", None),
    },
    r"/v1/prospect-activities": {
        "GET": ("read", "/v1/prospect-activities?prospectId={random}", None),
        "HEAD": ("read", "/v1/prospect-activities?prospectId={random}", None),
        "POST": (
            "ingest",
            "/v1/prospect-activities",
            {
                "prospectId": "{prospect}",
                "type": "note",
                "occurredAt": "2026-01-05T10:00:00Z",
                "details": {"text": "scoped"},
            },
        ),
    },
    r"/v1/events": {
        "GET": ("read", "/v1/events", None),
        "HEAD": ("read", "/v1/events", None),
    },
    r"/v1/exports/calls": {
        "GET": ("read", "/v1/exports/calls", None),
        "HEAD": ("read", "/v1/exports/calls", None),
    },
    r"/v1/exports/prospects": {
        "GET": ("read", "/v1/exports/prospects", None),
        "HEAD": ("read", "/v1/exports/prospects", None),
    },
    r"/v1/exports/lists": {
        "GET": ("read", "/v1/exports/lists", None),
        "HEAD": ("read", "/v1/exports/lists", None),
    },
    r"/v1/exports/activities": {
        "GET": ("read", "/v1/exports/activities", None),
        "HEAD": ("read", "/v1/exports/activities", None),
    },
    r"/v1/webhook-endpoints": {
        "GET": ("read", "/v1/webhook-endpoints", None),
        "HEAD": ("read", "/v1/webhook-endpoints", None),
        "POST": ("write", "/v1/webhook-endpoints", {"url": "https://93.184.215.14/hook"}),
    },
    r"/v1/webhook-endpoints/([^/]+)": {
        "GET": ("read", "/v1/webhook-endpoints/{random}", None),
        "HEAD": ("read", "/v1/webhook-endpoints/{random}", None),
        "PATCH": ("write", "/v1/webhook-endpoints/{random}", {"description": "scoped"}),
        "DELETE": ("write", "/v1/webhook-endpoints/{random}", None),
    },
    r"/v1/webhook-endpoints/([^/]+)/rotate-secret": {
        "POST": ("write", "/v1/webhook-endpoints/{random}/rotate-secret", None),
    },
    r"/v1/webhook-endpoints/([^/]+)/deliveries": {
        "GET": ("read", "/v1/webhook-endpoints/{random}/deliveries", None),
        "HEAD": ("read", "/v1/webhook-endpoints/{random}/deliveries", None),
    },
    r"/v1/webhook-endpoints/([^/]+)/recover": {
        "POST": (
            "write",
            "/v1/webhook-endpoints/{random}/recover",
            {"since": "2099-01-01T00:00:00Z"},
        ),
    },
    r"/v1/erasures": {
        "GET": ("admin", "/v1/erasures", None),
        "HEAD": ("admin", "/v1/erasures", None),
        "POST": ("admin", "/v1/erasures", {"email": "scoped@a.example"}),
    },
    r"/v1/erasures/([^/]+)": {
        "GET": ("admin", "/v1/erasures/{random}", None),
        "HEAD": ("admin", "/v1/erasures/{random}", None),
    },
    r"/v1/reporting/dialer-metrics": {
        "GET": ("read", f"/v1/reporting/dialer-metrics?{METRICS}", None),
        "HEAD": ("read", f"/v1/reporting/dialer-metrics?{METRICS}", None),
    },
}

KEYS = {
    "read": frozenset({"read"}),
    "write": frozenset({"write"}),
    "ingest": frozenset({"ingest"}),
    "admin": frozenset({"admin"}),
    "read,write,ingest": frozenset({"read", "write", "ingest"}),
}
# Tables and collections a refused request may change: its rate-limit count (MongoDB keeps it
# in the database) and the key's lastUsedAt.
BOOKKEEPING = {"rate_limits", "api_keys", "settings"}
RATE_STATE = re.compile(r'^"workspace";r=(\d+);t=\d+$')


def allowed(needed: str, scopes: frozenset[str]) -> bool:
    return needed == ANY_SCOPE or needed in scopes


CASES = [
    pytest.param(pattern, method, id=f"{method} {pattern}")
    for pattern, methods in SCOPE_TABLE.items()
    for method in methods
]


@pytest.fixture
def rate_clock():
    return FakeClock(1_800_000_000.0)  # frozen: every request of a test falls in one window


@pytest.fixture
def app_services(store, rate_clock):
    return {"rate_limiter": RateLimiter(store.ratelimits, 10_000, clock=rate_clock)}


async def snapshot(store) -> dict:
    names = [name for name in await store.collections() if name not in BOOKKEEPING]
    found = await asyncio.gather(*(store.documents(name) for name in names))
    return {name: sorted(map(repr, docs)) for name, docs in zip(names, found, strict=True)}


def remaining(response) -> int:
    match = RATE_STATE.match(response.headers["RateLimit"])
    assert match, response.headers.get("RateLimit")
    return int(match.group(1))


@pytest.mark.parametrize("pattern,method", CASES)
async def test_each_scope_against_each_route(origin, store, auth, ws_a, new_list, pattern, method):
    """The route's method with a key of each scope, on one workspace's data: the refused keys
    first, each checked to change nothing, then the allowed ones (which may change it)."""
    needed, path, body = SCOPE_TABLE[pattern][method]
    listing = await new_list("Scopes")
    values = {
        "list": listing["id"],
        "user": ws_a.users[0]["id"],
        "call": await add_call(store, ws_a, None),
        "prospect": (await store.prospects.create(ws_a.id, {"email": "s@a.example"}))["id"],
        "random": str(uuid.uuid4()),
    }
    for name, value in values.items():
        path = path.replace("{" + name + "}", value)
        if body is not None:
            body = filled(body, name, value)
    refused = [name for name, scopes in KEYS.items() if not allowed(needed, scopes)]
    served = [name for name, scopes in KEYS.items() if allowed(needed, scopes)]
    # What a refused request must leave as it was (an allowed one may change it).
    before_state = await snapshot(store) if refused else None
    for key_name in [*refused, *served]:
        scopes = KEYS[key_name]
        _, key = await auth.create(ws_a.id, f"scoped {key_name}", scopes)
        client = Client(origin, key)
        before = remaining(await client.get("/v1/api-key"))

        kwargs = {"json_body": body} if body is not None else {}
        response = await client.fetch(path, method, **kwargs)

        assert remaining(response) == before - 1, ("every request counts, refused or not", key_name)
        if allowed(needed, scopes):
            assert response.code != 403, (key_name, response)
            assert "insufficient_scope" not in response.headers.get("WWW-Authenticate", "")
            continue
        assert response.code == 403, (key_name, response)
        assert response.headers["WWW-Authenticate"] == (
            f'Bearer realm="workspace-api", error="insufficient_scope", scope="{needed}"'
        )
        if method != "HEAD":
            problem = response.json()
            assert problem["code"] == "insufficient_scope"
            assert f"`{needed}`" in problem["detail"]
            assert key not in response.body.decode()
        assert await snapshot(store) == before_state, ("a refused request changed data", key_name)


def filled(body, name: str, value: str):
    """The body with {name} replaced by value in its strings."""
    if isinstance(body, dict):
        return {k: filled(v, name, value) for k, v in body.items()}
    if isinstance(body, list):
        return [filled(v, name, value) for v in body]
    if isinstance(body, str):
        return body.replace("{" + name + "}", value)
    return body


def test_every_route_and_method_is_in_the_table():
    """Built from the application's routes: a route or method missing from SCOPE_TABLE, or a
    handler whose scope differs from the table's, fails here."""
    public = set()
    for route in collect_handlers()[:-1]:
        pattern, handler = route[0], route[1]
        if not (issubclass(handler, APIHandler) and handler.auth_required):
            public.add(pattern)
            continue
        assert pattern in SCOPE_TABLE, f"{pattern} is missing from tests/test_scopes.py"
        served = set(handler.allowed_methods())
        assert served == set(SCOPE_TABLE[pattern]), f"{pattern}: list exactly {sorted(served)}"
        for method in served:
            assert handler.scopes[method] == SCOPE_TABLE[pattern][method][0], (
                f"{method} {pattern}: {handler.__name__} needs {handler.scopes[method]}, "
                f"the table says {SCOPE_TABLE[pattern][method][0]}"
            )
    assert not public & set(SCOPE_TABLE)


def test_a_handler_serving_a_method_without_a_scope_is_refused_when_defined():
    with pytest.raises(TypeError, match="serves POST without a scope"):

        class Careless(APIHandler):
            async def post(self) -> None:
                pass

    with pytest.raises(TypeError, match="unknown scope 'owner'"):

        class Grand(APIHandler):
            scopes = {"GET": "read", "HEAD": "read", "PATCH": "owner"}

            async def patch(self) -> None:
                pass


async def test_a_refused_write_is_refused_before_its_body_is_read(origin, auth, ws_a):
    _, key = await auth.create(ws_a.id, "reader", frozenset({"read"}))
    client = Client(origin, key)
    for body, content_type in [(b"{not json", "application/json"), (b"<x/>", "text/xml")]:
        response = await client.fetch(
            "/v1/lists", "POST", body=body, headers={"Content-Type": content_type}
        )
        assert response.code == 403
        assert response.json()["code"] == "insufficient_scope"


async def test_a_write_only_key_writes_and_cannot_read(origin, auth, ws_a):
    """A scope with write but without read is allowed (a dialer that only records calls is the
    ingest twin of this)."""
    _, key = await auth.create(ws_a.id, "writer", frozenset({"write"}))
    client = Client(origin, key)
    created = await client.post("/v1/lists", {"name": "W", "ownerUserId": ws_a.users[0]["id"]})
    assert created.code == 201
    response = await client.get(created.headers["Location"])
    assert response.code == 403
    assert 'scope="read"' in response.headers["WWW-Authenticate"]
    assert "this key has write" in response.json()["detail"]


async def test_the_rate_limit_comes_before_the_scope(app, origin, store, auth, ws_a):
    """A refused request uses quota like any other, and once the quota is used up the answer
    is 429 whatever the scope."""
    app.settings["rate_limiter"].limit = 3
    _, key = await auth.create(ws_a.id, "reader", frozenset({"read"}))
    client = Client(origin, key)
    statuses = []
    for _ in range(4):
        response = await client.post("/v1/lists", {"name": "x", "ownerUserId": ws_a.users[0]["id"]})
        statuses.append(response.code)
    assert statuses == [403, 403, 403, 429]
    assert (await client.get("/v1/users")).code == 429  # the refused ones used the quota up
