"""Deletions in the sync walks over real HTTP: `sort=updatedAt&includeDeleted=true` on
/v1/prospects and /v1/lists carries tombstones in the sync order, 410 `sync_expired` past
`tombstone_retention_days`, the retention sweep on the injected clock, and the exports' hand-off
to such a walk."""

import datetime as dt
import json
from urllib.parse import parse_qs, urlsplit

import pytest

from server.expiry import ExpirySweeper
from tests.store.test_tombstone_reads import tombstone

DAY = 86_400.0


@pytest.fixture
def settled(app):
    """Sync pages without the settle delay (the test moves the clock instead)."""
    app.settings["config"] = app.settings["config"].replace(sync_settle_seconds=0)


async def upload(api, list_id: str, *emails: str) -> list[str]:
    contacts = [{"email": email} for email in emails]
    response = await api.post(f"/v1/lists/{list_id}/contacts", {"contacts": contacts})
    assert response.code == 200, response
    return [r["prospectId"] for r in response.json()["results"]]


async def walk(api, path: str) -> tuple[list[dict], str]:
    """Every item of a sync walk from `path` on, and the cursor to resume from."""
    items: list[dict] = []
    while True:
        response = await api.get(path)
        assert response.code == 200, response
        body = response.json()
        items += body[urlsplit(path).path.rsplit("/", 1)[1]]
        base = urlsplit(path).path
        path = f"{base}?cursor={body['nextCursor']}"
        if not body["hasMore"]:
            return items, body["nextCursor"]


async def test_prospect_tombstones_come_in_the_sync_order_only_when_asked(
    api, new_list, clock, settled
):
    listing = await new_list()
    ada, bob, cyd = await upload(api, listing["id"], "a@x.io", "b@x.io", "c@x.io")
    clock.advance(1)
    assert (await api.fetch(f"/v1/prospects/{ada}", "DELETE")).code == 204
    clock.advance(1)
    assert (await api.patch(f"/v1/prospects/{cyd}", {"jobTitle": "CTO"})).code == 200
    clock.advance(1)

    items, cursor = await walk(api, "/v1/prospects?sort=updatedAt&includeDeleted=true")
    assert [item["id"] for item in items] == [bob, ada, cyd]  # ada by its deletion instant
    gone = items[1]
    assert set(gone) == {"id", "deletedAt", "updatedAt"} and gone["deletedAt"] == gone["updatedAt"]
    plain, _ = await walk(api, "/v1/prospects?sort=updatedAt")
    assert [item["id"] for item in plain] == [bob, cyd]
    # A later poll with the walk's cursor: the deletion made since, and nothing else.
    assert (await api.fetch(f"/v1/prospects/{bob}", "DELETE")).code == 204
    clock.advance(1)
    later, _ = await walk(api, f"/v1/prospects?cursor={cursor}")
    assert [(item["id"], set(item)) for item in later] == [(bob, {"id", "deletedAt", "updatedAt"})]
    # updatedSince works with it too.
    since = gone["deletedAt"]
    items, _ = await walk(
        api, f"/v1/prospects?sort=updatedAt&includeDeleted=true&updatedSince={since}"
    )
    assert [item["id"] for item in items] == [ada, cyd, bob]


async def test_list_tombstones_come_in_the_sync_order_only_when_asked(
    api, new_list, store, ws_a, clock, settled
):
    kept, gone = await new_list("Kept"), await new_list("Gone")
    clock.advance(1)
    await tombstone(store, ws_a.id, "lists", gone["id"])
    clock.advance(1)
    items, _ = await walk(api, "/v1/lists?sort=updatedAt&includeDeleted=true")
    assert [item["id"] for item in items] == [kept["id"], gone["id"]]
    assert set(items[1]) == {"id", "deletedAt", "updatedAt"}
    plain, _ = await walk(api, "/v1/lists?sort=updatedAt&includeDeleted=false")
    assert [item["id"] for item in plain] == [kept["id"]]


@pytest.mark.parametrize("resource", ["prospects", "lists"])
@pytest.mark.parametrize(
    "query", ["includeDeleted=true", "includeDeleted=true&sort=-createdAt", "includeDeleted=yes"]
)
async def test_include_deleted_is_only_for_the_sync_order(api, resource, query):
    response = await api.get(f"/v1/{resource}?{query}")
    assert response.code == 400, response
    assert response.json()["errors"][0]["pointer"] == "#/query/includeDeleted"


@pytest.mark.parametrize("resource", ["prospects", "lists"])
async def test_past_the_retention_horizon_a_walk_with_tombstones_is_410(
    api, new_list, clock, settled, resource
):
    await upload(api, (await new_list())["id"], "a@x.io")
    clock.advance(1)
    now = clock.now()
    inside = (now - dt.timedelta(days=29, hours=23)).isoformat() + "Z"
    outside = (now - dt.timedelta(days=30, minutes=1)).isoformat() + "Z"
    base = f"/v1/{resource}?sort=updatedAt"
    assert (await api.get(f"{base}&includeDeleted=true&updatedSince={inside}")).code == 200
    expired = await api.get(f"{base}&includeDeleted=true&updatedSince={outside}")
    assert expired.code == 410, expired
    problem = expired.json()
    assert problem["code"] == "sync_expired"
    assert expired.headers["Content-Type"].startswith("application/problem+json")
    assert problem["errors"][0]["pointer"] == "#/query/updatedSince"
    # Without tombstones the same instant is an ordinary filter.
    assert (await api.get(f"{base}&updatedSince={outside}")).code == 200

    _, with_tombstones = await walk(api, f"{base}&includeDeleted=true")
    _, without = await walk(api, base)
    clock.advance(29 * DAY + 23 * 3600)  # a cursor of 29 days 23 hours ago still serves
    assert (await api.get(f"/v1/{resource}?cursor={with_tombstones}")).code == 200
    _, with_tombstones = await walk(api, f"/v1/{resource}?cursor={with_tombstones}")
    clock.advance(30 * DAY + 60)
    old = await api.get(f"/v1/{resource}?cursor={with_tombstones}")
    assert old.code == 410 and old.json()["code"] == "sync_expired", old
    assert old.json()["errors"][0]["pointer"] == "#/query/cursor"
    assert (await api.get(f"/v1/{resource}?cursor={without}")).code == 200


async def test_the_sweep_removes_tombstones_past_the_retention_on_the_clock(
    api, new_list, store, ws_a, clock, settled
):
    listing = await new_list()
    gone_list = await new_list("Gone")
    (ada,) = await upload(api, listing["id"], "a@x.io")
    assert (await api.fetch(f"/v1/prospects/{ada}", "DELETE")).code == 204
    await tombstone(store, ws_a.id, "lists", gone_list["id"])
    sweeper = ExpirySweeper(store, 60, clock=clock, retention_days=30)

    async def tombstones(resource: str) -> list[str]:
        items, _ = await walk(api, f"/v1/{resource}?sort=updatedAt&includeDeleted=true")
        return [item["id"] for item in items if "deletedAt" in item]

    clock.advance(29 * DAY + 23 * 3600)
    await sweeper.sweep()
    assert await tombstones("prospects") == [ada]
    assert await tombstones("lists") == [gone_list["id"]]
    assert (await api.fetch(f"/v1/prospects/{ada}", "DELETE")).code == 204  # still kept
    clock.advance(3600 + 1)
    assert await sweeper.sweep() >= 2
    assert await tombstones("prospects") == []
    assert await tombstones("lists") == []
    assert (await api.fetch(f"/v1/prospects/{ada}", "DELETE")).code == 404  # gone for good
    assert (await api.get(f"/v1/lists/{listing['id']}")).code == 200


@pytest.mark.parametrize("resource", ["prospects", "lists"])
async def test_the_exports_hand_off_to_a_walk_with_tombstones(
    api, new_list, store, ws_a, clock, settled, resource
):
    listing = await new_list()
    (ada,) = await upload(api, listing["id"], "a@x.io")
    clock.advance(1)
    response = await api.get(f"/v1/exports/{resource}")
    assert response.code == 200, response
    exported = [json.loads(line) for line in response.body.decode().splitlines()]
    target = ada if resource == "prospects" else listing["id"]
    assert target in [item["id"] for item in exported]
    [link] = [part for part in response.headers["Link"].split(", ") if 'rel="next"' in part]
    url = link[1 : link.index(">")]
    query = parse_qs(urlsplit(url).query)
    assert query["includeDeleted"] == ["true"] and query["sort"] == ["updatedAt"]
    # Deleted during the backfill: its tombstone is in the continuation.
    clock.advance(1)
    if resource == "prospects":
        assert (await api.fetch(f"/v1/prospects/{ada}", "DELETE")).code == 204
    else:
        await tombstone(store, ws_a.id, "lists", listing["id"])
    clock.advance(1)
    items, _ = await walk(api, url)
    assert [(item["id"], set(item)) for item in items] == [
        (target, {"id", "deletedAt", "updatedAt"})
    ]
