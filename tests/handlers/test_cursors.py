"""Cursor pagination and the sync order on GET /v1/lists, /v1/calls and /v1/prospects: keyset
walks that skip and repeat nothing while records arrive, cursors that carry their filters and
cannot be forged or moved between workspaces, and a syncer that ends with exactly the data."""

import asyncio
import datetime as dt
import random
import time
import uuid
from urllib.parse import quote, urlencode

import pytest

from server.config import load_config
from store.calls import call_document
from tests.helpers import Client, test_environ, wait_for

SETTLE = 2.0


@pytest.fixture
def config():
    return load_config(
        environ=test_environ(
            shared=True,
            WSAPI_SYNC_SETTLE_SECONDS=str(SETTLE),
            WSAPI_RATE_LIMIT_PER_MINUTE="1000000",
        )
    )


async def add_calls(
    store,
    ws,
    count: int,
    start: dt.datetime,
    step=dt.timedelta(minutes=1),
    updated: dt.datetime | None = None,
) -> list[str]:
    docs = [
        call_document(
            ws.id,
            user_id=ws.users[0]["id"],
            prospect_id=str(uuid.uuid4()),
            direction="outbound",
            disposition="no_answer",
            from_number="+1212",
            to_number="+1415",
            started_at=start + i * step,
            ended_at=start + i * step + dt.timedelta(seconds=30),
            updated_at=updated or start,
        )
        for i in range(count)
    ]
    await store.calls.insert_documents(ws.id, docs)
    return [doc["_id"] for doc in docs]


async def follow(api, path: str, key: str, limit: int = 1000) -> tuple[list[dict], dict]:
    """Every record reached from `path` by following nextCursor while hasMore; the last body."""
    seen, body = [], (await api.get(path)).json()
    while True:
        seen += body[key]
        if not body["hasMore"] or len(seen) > limit:
            return seen, body
        body = (await api.get(f"{path.split('?')[0]}?cursor={body['nextCursor']}")).json()


async def test_cursor_walk_equals_the_page_walk_with_its_envelope_and_link(api, store, ws_a):
    await add_calls(store, ws_a, 130, dt.datetime(2026, 3, 2, 9))
    first = await api.get("/v1/calls?pageSize=50")
    assert isinstance(first.json()["nextCursor"], str)
    second = await api.get(f"/v1/calls?cursor={first.json()['nextCursor']}&pageSize=100")
    body = second.json()
    assert set(body) == {"calls", "pageSize", "hasMore", "nextCursor"}
    assert (len(body["calls"]), body["hasMore"], body["nextCursor"]) == (80, False, None)
    assert "Link" not in second.headers
    by_pages = [
        c["id"] for p in (1, 2, 3) for c in (await api.get(f"/v1/calls?page={p}")).json()["calls"]
    ]
    assert [c["id"] for c in first.json()["calls"] + body["calls"]] == by_pages
    third = await api.get(f"/v1/calls?cursor={first.json()['nextCursor']}&pageSize=50")
    link = third.headers["Link"]
    assert link == (
        f'</v1/calls?cursor={quote(third.json()["nextCursor"])}&pageSize=50>; rel="next"'
    )


@pytest.mark.parametrize("resource", ["calls", "prospects", "lists"])
async def test_every_paginated_resource_takes_cursors(api, store, ws_a, resource):
    await add_calls(store, ws_a, 60, dt.datetime(2026, 3, 2, 9))
    owner = ws_a.users[0]["id"]
    for i in range(55):
        await store.lists.create(ws_a.id, f"L{i}", owner)
        await store.prospects.create(ws_a.id, {"email": f"p{i}@example.com"})
    seen, last = await follow(api, f"/v1/{resource}?pageSize=50", resource)
    total = (await api.get(f"/v1/{resource}")).json()["total"]
    assert len(seen) == len({r["id"] for r in seen}) == total and last["nextCursor"] is None


async def test_cursor_carries_filters_and_sort_and_refuses_changes(api, store, ws_a):
    await add_calls(store, ws_a, 70, dt.datetime(2026, 3, 2, 9))
    user = ws_a.users[0]["id"]
    body = (await api.get(f"/v1/calls?userId={user}&direction=outbound")).json()
    cursor = body["nextCursor"]
    same = await api.get(f"/v1/calls?cursor={cursor}&userId={user.upper()}&direction=outbound")
    omitted = await api.get(f"/v1/calls?cursor={cursor}")
    assert same.code == omitted.code == 200 and same.json() == omitted.json()
    for query, parameter in (
        (f"userId={ws_a.users[1]['id']}", "userId"),
        ("direction=inbound", "direction"),
        ("sort=updatedAt", "sort"),
        ("page=2", "page"),
    ):
        response = await api.get(f"/v1/calls?cursor={cursor}&{query}")
        assert response.code == 400, query
        assert response.json()["errors"][0]["pointer"] == f"#/query/{parameter}"


async def test_forged_moved_and_foreign_cursors_are_invalid_cursor(api, api_b, store, ws_a):
    await add_calls(store, ws_a, 60, dt.datetime(2026, 3, 2, 9))
    cursor = (await api.get("/v1/calls")).json()["nextCursor"]
    flipped = cursor[:5] + ("A" if cursor[5] != "A" else "B") + cursor[6:]
    for client, path in (
        (api, f"/v1/calls?cursor={flipped}"),
        (api, f"/v1/calls?cursor={cursor[:-2]}"),
        (api, "/v1/calls?cursor=bm90LWEtY3Vyc29y.AAAA"),
        (api, f"/v1/prospects?cursor={cursor}"),  # another resource's
        (api_b, f"/v1/calls?cursor={cursor}"),
    ):  # another workspace's
        response = await client.get(path)
        assert response.code == 400, path
        problem = response.json()
        assert problem["code"] == "invalid_cursor"
        assert problem["type"] == "/reference/problems#invalid_cursor"
    assert (await api.get("/v1/calls?cursor=not%20a%20cursor")).code == 400


async def test_newest_first_cursors_skip_and_repeat_nothing_while_records_arrive(api, store, ws_a):
    before = await add_calls(store, ws_a, 150, dt.datetime(2026, 3, 2, 9))
    body = (await api.get("/v1/calls")).json()
    seen = [c["id"] for c in body["calls"]]
    minute = 0
    while body["hasMore"]:
        minute += 1  # newer calls land on top between pages (and one inside the walk's range)
        await add_calls(store, ws_a, 7, dt.datetime(2026, 3, 3, 9, minute))
        body = (await api.get(f"/v1/calls?cursor={body['nextCursor']}")).json()
        seen += [c["id"] for c in body["calls"]]
    assert len(seen) == len(set(seen)) and set(before) <= set(seen)
    assert set(seen) == set(before)  # the newer ones sit above the first page


async def test_sync_order_settles_never_ends_and_shows_changes_again(api, store, ws_a, clock):
    old = clock.now() - dt.timedelta(hours=1)
    ids = await add_calls(store, ws_a, 3, dt.datetime(2026, 3, 2, 9), updated=old)
    fresh = await add_calls(store, ws_a, 1, dt.datetime(2026, 3, 2, 10), updated=clock.now())
    body = (await api.get("/v1/calls?sort=updatedAt")).json()
    assert [c["id"] for c in body["calls"]] == sorted(ids)  # the fresh one has not settled
    assert body["hasMore"] is False and body["total"] == 3 and body["nextCursor"]
    caught_up = (await api.get(f"/v1/calls?cursor={body['nextCursor']}")).json()
    assert caught_up["calls"] == [] and caught_up["hasMore"] is False
    assert caught_up["nextCursor"] == body["nextCursor"]  # where to resume
    changed = await store.calls.change(ws_a.id, ids[0], {"notes": "Changed"})
    clock.advance(SETTLE + 0.1)
    later = (await api.get(f"/v1/calls?cursor={caught_up['nextCursor']}")).json()
    assert [c["id"] for c in later["calls"]] == [fresh[0], ids[0]]
    assert later["calls"][1]["notes"] == "Changed" == changed["notes"]
    assert later["nextCursor"]


async def test_a_syncer_ends_with_exactly_the_data_while_writers_run(
    api, store, ws_a, new_list, clock
):
    """Writers create calls and prospects, fill prospect fields and add prospects to lists at
    full speed, one of them holding a write back for longer than a page takes; a syncer follows
    sort=updatedAt cursors all along. After one settle period without writes its copy equals
    the database: nothing missing, nothing stale."""
    rng = random.Random(3)
    stop = asyncio.Event()
    lists = [await new_list(f"Sync {i}") for i in range(3)]
    rounds = {"held": 0, "synced": 0}  # held writes landed, syncer rounds made

    async def write_calls():
        while not stop.is_set():
            await add_calls(
                store,
                ws_a,
                rng.randint(1, 5),
                clock.now() - dt.timedelta(minutes=5),
                updated=clock.now(),
            )

    async def write_contacts():
        n = 0
        while not stop.is_set():
            n += 1
            contacts = [
                {
                    "email": f"c{rng.randint(0, 60)}@example.com",
                    rng.choice(["firstName", "jobTitle", "companyName"]): f"v{n}",
                }
                for _ in range(rng.randint(1, 8))
            ]
            target = rng.choice(lists)["id"]
            assert (
                await api.post(f"/v1/lists/{target}/contacts", {"contacts": contacts})
            ).code == 200

    async def held_back():  # stamped now, lands SETTLE * 0.6 later (a slow network, a stall)
        while not stop.is_set():
            docs = [
                call_document(
                    ws_a.id,
                    user_id=ws_a.users[0]["id"],
                    prospect_id=str(uuid.uuid4()),
                    direction="inbound",
                    disposition="connected",
                    from_number="+1",
                    to_number="+2",
                    started_at=clock.now(),
                    ended_at=clock.now(),
                    updated_at=clock.now(),
                )
            ]
            await asyncio.sleep(SETTLE * 0.6)
            await store.calls.insert_documents(ws_a.id, docs)
            rounds["held"] += 1

    copies = {"calls": {}, "prospects": {}, "lists": {}}
    cursors = {name: None for name in copies}

    async def poll() -> bool:
        """One round over the three resources; True when all are caught up."""
        done = True
        for name, copy in copies.items():
            path = (
                f"/v1/{name}?cursor={cursors[name]}"
                if cursors[name]
                else f"/v1/{name}?sort=updatedAt&pageSize=100"
            )
            response = await api.get(path)
            assert response.code == 200, response
            body = response.json()
            copy.update((record["id"], record) for record in body[name])
            cursors[name] = body["nextCursor"]
            done = done and not body["hasMore"]
        return done

    async def syncer():
        while not stop.is_set():
            await poll()
            rounds["synced"] += 1
            await asyncio.sleep(0.05)

    tasks = [asyncio.ensure_future(t()) for t in (write_calls, write_contacts, held_back, syncer)]
    # The writes go on until three held-back writes have landed behind the syncer's rounds.
    await wait_for(
        lambda: (rounds["held"] >= 3 and rounds["synced"] >= 20) or any(t.done() for t in tasks),
        timeout=60,
        what="three held-back writes while the syncer follows",
    )
    stop.set()
    await asyncio.gather(*tasks)
    clock.advance(SETTLE + 0.2)  # one settle period without writes
    deadline = time.monotonic() + 30
    while not await poll():  # a page of each resource per round, until all are caught up
        assert time.monotonic() < deadline, "the syncer never caught up"
    for name, copy in copies.items():
        truth = {}
        page = 1
        while True:
            body = (await api.get(f"/v1/{name}?pageSize=100&page={page}")).json()
            truth.update((record["id"], record) for record in body[name])
            if not body["hasMore"]:
                break
            page += 1
        missing = truth.keys() - copy.keys()
        stale = [i for i in truth if i in copy and copy[i] != truth[i]]
        assert (name, len(missing), len(stale)) == (name, 0, 0)
        assert copy.keys() == truth.keys() and truth


def cursor_endpoints() -> list[str]:
    """A URL of every GET the application serves whose query takes the shared cursor
    parameter, read from the routes and their handlers' query schemas (so new ones are in)."""
    from handlers.base import CURSOR_PARAMETER
    from schemas import Schemas
    from schemas.route_check import sample_url
    from server.app import collect_handlers

    schemas = Schemas()
    found = []
    for route in collect_handlers()[:-1]:
        schema_id = getattr(route[1], "query_schemas", {}).get("GET")
        query = schemas.documents[schema_id] if schema_id else {}
        properties = query.get("properties", {})
        if any(p.get("$ref") == CURSOR_PARAMETER for p in properties.values()):
            url = sample_url(route[0].replace("([^/]+)", "{id}"))
            # Required parameters get their documented example, so that only the cursor is wrong.
            required = {
                name: schemas.resolve(properties[name]).get("examples", [""])[0]
                for name in query.get("required", [])
            }
            found.append(f"{url}?{urlencode(required)}&" if required else f"{url}?")
    return found


CURSOR_ENDPOINTS = cursor_endpoints()
MALFORMED = {
    "garbage": "garbage",
    "spaces": "not%20a%20cursor",
    "three parts": "a.b.c",
    "dots only": "..",
    "empty": "",
    "non-ascii": "%C3%A9t%C3%A9.AAAA",
    "control character": "abc%00.def",
    "base64 padding": "YWJj.YWJj%3D%3D",
    "too long": "A" * 1100 + ".AAAA",
    "right shape, not base64 of a cursor": "abc.def",
}


def test_the_cursor_endpoints_are_found():
    assert {"/v1/calls?", "/v1/lists?", "/v1/prospects?"} <= set(CURSOR_ENDPOINTS)


def test_every_cursor_parameter_is_the_shared_one():
    """A query parameter named like a cursor uses schemas/parameters/cursor.json, so that a
    malformed one is `invalid_cursor` everywhere (handlers.base checks that parameter)."""
    from handlers.base import CURSOR_PARAMETER
    from schemas import Schemas

    for schema_id, schema in Schemas().documents.items():
        if not schema_id.startswith("/schemas/queries/"):
            continue
        for name, prop in schema.get("properties", {}).items():
            if "cursor" in name.lower():
                assert prop.get("$ref") == CURSOR_PARAMETER, f"{schema_id}: {name}"


@pytest.mark.parametrize("path", CURSOR_ENDPOINTS)
async def test_a_malformed_cursor_is_invalid_cursor_like_an_altered_one(
    api, store, ws_a, path, auth, origin
):
    await add_calls(store, ws_a, 3, dt.datetime(2026, 3, 2, 9))
    made = (await api.get("/v1/calls?pageSize=50")).json()["nextCursor"] or (
        await api.get("/v1/calls?sort=updatedAt")
    ).json()["nextCursor"]
    if path.startswith("/v1/erasures"):  # the erasure requests are read with the admin scope
        _, key = await auth.create(ws_a.id, "admin", frozenset({"read", "admin"}))
        api = Client(origin, key)
    flipped = made[:5] + ("A" if made[5] != "A" else "B") + made[6:]
    altered = (await api.get(f"{path}cursor={flipped}")).json()
    assert altered["code"] == "invalid_cursor"
    for name, cursor in MALFORMED.items():
        response = await api.get(f"{path}cursor={cursor}")
        assert response.code == 400, (path, name)
        problem = response.json()
        assert problem["code"] == "invalid_cursor", (path, name, problem)
        assert set(problem) == set(altered)
        assert (problem["type"], problem["title"]) == (altered["type"], altered["title"])
        [error] = problem["errors"]
        assert (error["parameter"], error["pointer"]) == ("cursor", "#/query/cursor")
        assert error["detail"] in ("the cursor is malformed", altered["errors"][0]["detail"]), name
        assert (
            problem["detail"].startswith("cursor: ")
            and "start again without a cursor" in (problem["detail"])
        )
        assert cursor[:20] not in problem["detail"] or name == "empty"


async def test_other_parameters_keep_their_errors_beside_a_malformed_cursor(api):
    response = await api.get("/v1/calls?cursor=garbage&pageSize=7")
    problem = response.json()
    assert response.code == 400 and problem["code"] == "invalid_request"
    assert {e["parameter"] for e in problem["errors"]} == {"cursor", "pageSize"}
    assert (await api.get("/v1/calls?pageSize=7")).json()["code"] == "invalid_request"
    response = await api.get("/v1/calls?page=2&cursor=abc.def")
    assert response.json()["code"] == "invalid_request"
    assert response.json()["errors"][0]["parameter"] == "page"
