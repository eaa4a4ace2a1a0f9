"""POST /v1/lists, GET /v1/lists, GET /v1/lists/{id}."""

import datetime as dt
import re
import uuid

import pytest

from schemas import Schemas

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


async def test_create_list(api, ws_a):
    owner = ws_a.users[1]["id"]
    before = dt.datetime.now(dt.UTC)
    response = await api.post("/v1/lists", {"name": "  Q1 Leads ", "ownerUserId": owner})
    assert response.code == 201
    created = response.json()["list"]
    assert set(response.json()) == {"list"}
    assert created["name"] == "Q1 Leads"
    assert created["source"] == "CSV"
    assert created["ownerUserId"] == owner
    assert created["prospectsCount"] == 0
    assert uuid.UUID(created["id"]).version == 4
    assert TIMESTAMP.match(created["createdAt"]) and created["createdAt"] == created["updatedAt"]
    created_at = dt.datetime.fromisoformat(created["createdAt"])
    assert abs((created_at - before).total_seconds()) < 5
    assert Schemas().errors("/schemas/records/list.json", created) == []
    assert response.headers["Location"] == f"/v1/lists/{created['id']}"
    fetched = await api.get(response.headers["Location"])
    assert fetched.code == 200 and fetched.json() == {"list": created}


async def test_owner_id_is_accepted_in_upper_case(api, ws_a):
    owner = ws_a.users[0]["id"]
    response = await api.post("/v1/lists", {"name": "x", "ownerUserId": owner.upper()})
    assert response.code == 201
    assert response.json()["list"]["ownerUserId"] == owner


INVALID_BODIES = {
    "missing name": ({"ownerUserId": "OWNER"}, "#/name"),
    "empty name": ({"name": "", "ownerUserId": "OWNER"}, "#/name"),
    "blank name": ({"name": "   ", "ownerUserId": "OWNER"}, "#/name"),
    "name not a string": ({"name": 5, "ownerUserId": "OWNER"}, "#/name"),
    "name too long": ({"name": "x" * 201, "ownerUserId": "OWNER"}, "#/name"),
    "missing owner": ({"name": "x"}, "#/ownerUserId"),
    "owner not a uuid": ({"name": "x", "ownerUserId": "not-a-uuid"}, "#/ownerUserId"),
    "owner null": ({"name": "x", "ownerUserId": None}, "#/ownerUserId"),
    "workspaceId sent": (
        {"name": "x", "ownerUserId": "OWNER", "workspaceId": "w"},
        "#/workspaceId",
    ),
    "unknown field": ({"name": "x", "ownerUserId": "OWNER", "color": "red"}, "#/color"),
    "array body": ([], "#"),
}


@pytest.mark.parametrize("body,pointer", INVALID_BODIES.values(), ids=INVALID_BODIES.keys())
async def test_invalid_create_is_400_and_writes_nothing(api, ws_a, body, pointer):
    if isinstance(body, dict) and body.get("ownerUserId") == "OWNER":
        body["ownerUserId"] = ws_a.users[0]["id"]
    response = await api.post("/v1/lists", body)
    assert response.code == 400
    problem = response.json()
    assert problem["code"] == "invalid_request"
    assert pointer in [e["pointer"] for e in problem["errors"]]
    assert (await api.get("/v1/lists")).json()["total"] == 0


@pytest.mark.parametrize(
    "body,content_type,status",
    [
        (b"{not json", "application/json", 400),
        (b'{"name": "a", "name": "b"}', "application/json", 400),
        (b'{"name": NaN}', "application/json", 400),
        (b"", "application/json", 400),
        (b'{"name": "x"}', "text/plain", 415),
        (b'{"name": "x"}', None, 415),
    ],
)
async def test_malformed_bodies(api, body, content_type, status):
    headers = {"Content-Type": content_type} if content_type else {}
    response = await api.fetch("/v1/lists", "POST", body=body, headers=headers)
    assert response.code == status


async def test_unusable_owner_is_422_with_one_body_for_every_reason(api, ws_a, ws_b):
    reasons = {
        "unknown": str(uuid.uuid4()),
        "deleted": ws_a.deleted_user["id"],
        "other workspace": ws_b.users[0]["id"],
    }
    bodies = []
    for owner in reasons.values():
        response = await api.post("/v1/lists", {"name": "x", "ownerUserId": owner})
        assert response.code == 422
        problem = response.json()
        assert problem["code"] == "invalid_reference"
        problem.pop("requestId")
        bodies.append(problem)
    assert bodies[0] == bodies[1] == bodies[2]
    assert (await api.get("/v1/lists")).json()["total"] == 0


async def seed_lists(store, workspace_id, owner, count, same_time=False):
    base = dt.datetime(2026, 1, 1)
    for i in range(count):
        created = base if same_time else base + dt.timedelta(minutes=i)
        await store.lists.create(workspace_id, f"list {i}", owner, created_at=created)


async def test_pages_newest_first_with_envelope_and_links(api, store, ws_a):
    await seed_lists(store, ws_a.id, ws_a.users[0]["id"], 120)
    first = await api.get("/v1/lists")
    body = first.json()
    assert set(body) == {"lists", "total", "page", "pageSize", "hasMore", "nextCursor"}
    assert (body["total"], body["page"], body["pageSize"], body["hasMore"]) == (120, 1, 50, True)
    assert [x["name"] for x in body["lists"][:3]] == ["list 119", "list 118", "list 117"]
    links = first.headers["Link"]
    assert '</v1/lists?page=2&pageSize=50>; rel="next"' in links
    assert '</v1/lists?page=1&pageSize=50>; rel="first"' in links
    assert '</v1/lists?page=3&pageSize=50>; rel="last"' in links
    assert 'rel="prev"' not in links
    last = (await api.get("/v1/lists?page=2&pageSize=100")).json()
    assert (last["page"], last["pageSize"], last["hasMore"], len(last["lists"])) == (
        2,
        100,
        False,
        20,
    )
    assert last["lists"][-1]["name"] == "list 0"
    schemas = Schemas()
    assert all(schemas.errors("/schemas/records/list.json", x) == [] for x in last["lists"])


async def test_walking_pages_returns_each_list_once_even_with_equal_timestamps(api, store, ws_a):
    await seed_lists(store, ws_a.id, ws_a.users[0]["id"], 75, same_time=True)
    seen = []
    page = 1
    while True:
        body = (await api.get(f"/v1/lists?page={page}")).json()
        seen += [x["id"] for x in body["lists"]]
        if not body["hasMore"]:
            break
        page += 1
    assert len(seen) == len(set(seen)) == 75
    assert seen == sorted(seen, reverse=True)  # ties broken by id


async def test_page_past_the_end_is_empty(api, store, ws_a):
    await seed_lists(store, ws_a.id, ws_a.users[0]["id"], 3)
    body = (await api.get("/v1/lists?page=99")).json()
    assert body["lists"] == [] and body["hasMore"] is False and body["total"] == 3
    huge = (await api.get("/v1/lists?page=99999999999999999")).json()
    assert huge["lists"] == []


BAD_QUERIES = [
    "page=0",
    "page=-1",
    "page=abc",
    "page=1.5",
    "page=",
    "pageSize=10",
    "pageSize=0",
    "pageSize=51",
    "pageSize=abc",
    "pageSize=100&pageSize=50",
    "foo=bar",
    "workspaceId=x",
]


@pytest.mark.parametrize("query", BAD_QUERIES)
async def test_bad_paging_parameters_are_400(api, query):
    response = await api.get(f"/v1/lists?{query}")
    assert response.code == 400
    error = response.json()["errors"][0]
    assert error["parameter"] == query.split("=")[0]
    assert error["pointer"] == "#/query/" + error["parameter"]


async def test_lists_are_isolated_between_workspaces(api, api_b, ws_a, ws_b):
    created = (
        await api.post("/v1/lists", {"name": "mine", "ownerUserId": ws_a.users[0]["id"]})
    ).json()["list"]
    other = (await api_b.get("/v1/lists")).json()
    assert other["total"] == 0
    foreign = await api_b.get(f"/v1/lists/{created['id']}")
    missing = await api_b.get(f"/v1/lists/{uuid.uuid4()}")
    assert foreign.code == missing.code == 404
    assert {**foreign.json(), "requestId": ""} == {**missing.json(), "requestId": ""}


async def test_head_takes_the_get_query_parameters(api, store, ws_a):
    await seed_lists(store, ws_a.id, ws_a.users[0]["id"], 3)
    head = await api.fetch("/v1/lists?page=1&pageSize=100", "HEAD")
    assert head.code == 200 and head.body == b"" and "Link" in head.headers
    assert (await api.fetch("/v1/lists?pageSize=7", "HEAD")).code == 400
