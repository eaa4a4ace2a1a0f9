"""DELETE /v1/lists/{id} over HTTP, on a real port, with the lists' background work running in
small batches: the list is gone from every read at once and `list.deleted` is recorded; its
members stay, each losing the list from `listIds` with its `prospect.updated` once the work is
done; calls keep their listId; a second DELETE is 204, an unknown or other workspace's id 404."""

from __future__ import annotations

import uuid

import pytest

from server.config import load_config
from server.list_work import ListWork
from tests.handlers.test_list_changes import events_of, upload
from tests.helpers import test_environ
from tests.webhooks.receiver import until

BATCH = 3  # members per unit of the purge: a list of 7 takes three


@pytest.fixture
def config():
    """A short settle period: the feed shows events 0.3 s after they are recorded."""
    return load_config(environ=test_environ(shared=True, WSAPI_SYNC_SETTLE_SECONDS="0.3"))


@pytest.fixture
def list_work(io_loop, store):
    async def start() -> ListWork:
        return ListWork(store, BATCH, interval=0.2).start()

    work = io_loop.run_sync(start)
    yield work
    io_loop.run_sync(work.stop)


@pytest.fixture
def app_services(list_work):
    return {"list_work": list_work}


async def test_delete_hides_the_list_at_once_and_members_lose_it(api, dialer, ws_a, new_list):
    doomed, kept = await new_list("Doomed"), await new_list("Kept")
    ids = await upload(api, doomed["id"], 7)
    await upload(api, kept["id"], 2)  # p0 and p1 are members of both
    call = {
        "userId": ws_a.users[0]["id"],
        "prospectId": ids[0],
        "listId": doomed["id"],
        "direction": "outbound",
        "disposition": "connected",
        "fromNumber": "+12125550142",
        "toNumber": "+14155550111",
        "startedAt": "2026-01-05T10:00:00Z",
        "answeredAt": "2026-01-05T10:00:09Z",
        "endedAt": "2026-01-05T10:03:09Z",
    }
    recorded = await dialer.post("/v1/calls", call)
    assert recorded.code == 201, recorded
    path = f"/v1/lists/{doomed['id']}"

    response = await api.fetch(path, "DELETE")
    assert response.code == 204, response
    assert response.body == b""
    assert (await api.get(path)).code == 404
    assert doomed["id"] not in {item["id"] for item in (await api.get("/v1/lists")).json()["lists"]}
    assert (await api.get("/v1/lists")).json()["total"] == 1
    contacts = {"contacts": [{"email": "late@contacts.example"}]}
    assert (await api.post(f"{path}/contacts", contacts)).code == 404
    assert (await api.patch(path, {"name": "Back"})).code == 404
    assert (await api.post(f"{path}/contacts/remove", {"prospectIds": ids[:1]})).code == 404
    assert (await api.fetch(path, "DELETE")).code == 204  # its tombstone: deleted already

    async def left() -> bool:
        page = (await api.get("/v1/prospects?pageSize=100")).json()["prospects"]
        return all(doomed["id"] not in p["listIds"] for p in page) and len(page) == 7

    await until(left, what="every member losing the deleted list")
    prospects = {
        p["id"]: p for p in (await api.get("/v1/prospects?pageSize=100")).json()["prospects"]
    }
    assert set(prospects) == set(ids)
    assert prospects[ids[0]]["listIds"] == [kept["id"]] == prospects[ids[1]]["listIds"]
    assert all(prospects[i]["listIds"] == [] for i in ids[2:])
    assert (await api.get(f"/v1/lists/{kept['id']}")).json()["list"]["prospectsCount"] == 2
    again = await api.get(f"/v1/calls/{recorded.json()['call']['id']}")
    assert again.json()["call"]["listId"] == doomed["id"]

    deleted = await events_of(api, "list.deleted", 1)
    assert [event["data"]["id"] for event in deleted] == [doomed["id"]]
    assert set(deleted[0]["data"]) == {"id", "deletedAt"}
    updates = await events_of(api, "prospect.updated", 2 + 7)  # the second upload's, then these
    after = [e for e in updates if e["occurredAt"] >= deleted[0]["occurredAt"]]
    assert sorted(e["data"]["id"] for e in after) == sorted(ids)
    for event in after:
        assert event["data"] == prospects[event["data"]["id"]]


async def test_delete_of_an_unknown_or_other_workspaces_list_is_404(api, api_b, new_list):
    listing = await new_list()
    unknown = await api.fetch(f"/v1/lists/{uuid.uuid4()}", "DELETE")
    other = await api_b.fetch(f"/v1/lists/{listing['id']}", "DELETE")
    assert unknown.code == other.code == 404
    assert unknown.json()["detail"] == other.json()["detail"]
    assert (await api.get(f"/v1/lists/{listing['id']}")).json() == {"list": listing}


async def test_an_empty_list_is_deleted_and_its_name_can_be_used_again(api, new_list):
    listing = await new_list("Again")
    assert (await api.fetch(f"/v1/lists/{listing['id']}", "DELETE")).code == 204
    fresh = await new_list("Again")
    assert fresh["id"] != listing["id"]
    assert [item["id"] for item in (await api.get("/v1/lists")).json()["lists"]] == [fresh["id"]]
