"""A large list's delete across a crash: `workspace-api serve` (a real process, purging in small
batches) is killed with SIGKILL while the members of a deleted list are losing it, several
batches done and several to go, and started again on the same database. Once its background
work has finished what the killed process left, no member is half changed (every one has lost
the list, and its membership with it), every member has exactly one `prospect.updated` with
its final state after the one `list.deleted`, and the counts are exact.

The database is this tier's: a SQLite file in tmp_path (embedded), or the wire tier's server.
"""

from __future__ import annotations

import asyncio
import time

from server.config import load_config
from server.services import open_services
from store.prospects import seeded_document
from tests.helpers import TEST_SECRET, Client, follow_events, make_workspace, test_environ
from tests.server.test_events_crash import Serve

BATCH = 25  # members per unit of work: a kill lands between two of them
ALSO_KEPT = 40  # members of the deleted list that are also members of a list that stays
OTHERS = 10  # prospects in no list
SETTLE = 1.0


def store_is_embedded(environ: dict) -> bool:
    return not environ["MONGODB_URI"].startswith("mongodb")


async def test_a_list_delete_killed_mid_way_completes_after_a_restart(tmp_path):
    base = test_environ()
    env = {
        "MONGODB_URI": base["MONGODB_URI"] if base["MONGODB_URI"] != "memory" else "",
        "WSAPI_SQLITE_PATH": str(tmp_path / "store.sqlite3"),
        "WSAPI_DATABASE": base["WSAPI_DATABASE"],
        "WSAPI_SECRET": TEST_SECRET,
        "WSAPI_SYNC_SETTLE_SECONDS": str(SETTLE),
        # The event sweep's grace (MongoDB) is 4 of these; FerretDB on a busy machine needs 5.
        "WSAPI_DB_TIMEOUT_SECONDS": "2" if store_is_embedded(base) else "5",
        "WSAPI_RATE_LIMIT_PER_MINUTE": "10000000",
        "WSAPI_LIST_PURGE_BATCH": str(BATCH),
        "WSAPI_LOG_LEVEL": "info",
    }
    store, auth = await open_services(load_config(environ=env))
    # 60 units of work; 12 on FerretDB, which scans a workspace's prospects for each unit's
    # members (its SQLite backend uses an index only for an _id: tests/wire.py's `scan`).
    members_count = 1500 if store.embedded else 300
    log = tmp_path / "serve.log"
    servers: list[Serve] = []
    try:
        ws = await make_workspace(store, auth, "Purge")
        owner = ws.users[0]["id"]
        doomed = await store.lists.create(ws.id, "Doomed", owner)
        kept = await store.lists.create(ws.id, "Kept", owner)
        docs = [
            seeded_document(
                ws.id,
                store.prospects.parse_contact({"email": f"m{i}@purge.example"}),
                owner,
                [doomed["id"], kept["id"]] if i < ALSO_KEPT else [doomed["id"]],
            )
            for i in range(members_count)
        ]
        docs += [
            seeded_document(ws.id, store.prospects.parse_contact({"email": f"o{i}@p.example"}))
            for i in range(OTHERS)
        ]
        async with store.bulk_load(defer_indexes=False):  # history: no events
            await store.prospects.insert_documents(ws.id, docs)
        await store.lists.set_count(ws.id, doomed["id"], members_count)
        await store.lists.set_count(ws.id, kept["id"], ALSO_KEPT)
        members = {doc["_id"] for doc in docs[:members_count]}

        server = Serve(log, env)
        servers.append(server)
        await asyncio.to_thread(server.wait_ready)
        api = Client(server.origin, ws.key, connections=4)
        response = await api.fetch(f"/v1/lists/{doomed['id']}", "DELETE")
        assert response.code == 204, response
        # Gone from every read at once, with its members' work still to do.
        assert (await api.get(f"/v1/lists/{doomed['id']}")).code == 404
        upload = {"contacts": [{"email": "late@purge.example"}]}
        assert (await api.post(f"/v1/lists/{doomed['id']}/contacts", upload)).code == 404
        assert (await api.get("/v1/lists")).json()["total"] == 1

        # Kill it once some batches are done and more than a few are left.
        deadline = time.monotonic() + 120
        while (
            left := await store.prospects.count_in_list(ws.id, doomed["id"])
        ) > members_count - 3 * BATCH:
            assert time.monotonic() < deadline, "the purge did not start"
            await asyncio.sleep(0.005 if store.embedded else 0.1)
        await asyncio.to_thread(server.kill)
        left = await store.prospects.count_in_list(ws.id, doomed["id"])
        assert 0 < left < members_count - 2 * BATCH, f"the kill did not land mid-way: {left} left"

        server = Serve(log, env)
        servers.append(server)
        await asyncio.to_thread(server.wait_ready)
        api = Client(server.origin, ws.key, connections=4)
        deadline = time.monotonic() + 180
        while await store.prospects.count_in_list(ws.id, doomed["id"]) > 0:
            assert time.monotonic() < deadline, "the purge did not finish after the restart"
            await asyncio.sleep(0.2)

        # Every member: the list gone from listIds, the other list kept.
        prospects: dict[str, dict] = {}
        cursor = ""
        total = (await api.get("/v1/prospects?page=1&pageSize=100")).json()["total"]
        while True:
            page = (await api.get(f"/v1/prospects?pageSize=100{cursor}")).json()
            prospects |= {p["id"]: p for p in page["prospects"]}
            if not page["hasMore"]:
                break
            cursor = f"&cursor={page['nextCursor']}"
        assert len(prospects) == members_count + OTHERS == total
        assert all(doomed["id"] not in p["listIds"] for p in prospects.values())
        assert sum(kept["id"] in p["listIds"] for p in prospects.values()) == ALSO_KEPT
        listed = (await api.get("/v1/lists")).json()
        assert [item["id"] for item in listed["lists"]] == [kept["id"]] and listed["total"] == 1
        assert listed["lists"][0]["prospectsCount"] == ALSO_KEPT
        in_kept = (await api.get(f"/v1/prospects?listId={kept['id']}&pageSize=100")).json()
        assert in_kept["total"] == ALSO_KEPT

        # Every event: one list.deleted, then exactly one prospect.updated per member, with
        # its final state (on MongoDB a batch cut short is recorded by the event sweep).
        wanted = "/v1/events?type=list.deleted,prospect.updated&pageSize=100"
        deadline = time.monotonic() + 120
        while True:
            events, _ = await follow_events(api, wanted)
            updated = [e for e in events if e["type"] == "prospect.updated"]
            if len(updated) >= members_count or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        assert [e["data"]["id"] for e in events if e["type"] == "list.deleted"] == [doomed["id"]]
        assert events[0]["type"] == "list.deleted"
        assert len(updated) == members_count
        assert {e["data"]["id"] for e in updated} == members
        assert all(e["data"] == prospects[e["data"]["id"]] for e in updated)
    finally:
        for each in servers:
            each.kill()
        if not store.embedded:
            await store.drop()
        await store.close()
