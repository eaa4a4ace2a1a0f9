"""A tombstone (store/tombstones.py) is absent from every ordinary read on both backends: pages
and their totals, filters, GET by id, a list's prospects, exports, matching on upload, and the
references of recorded calls and activities (422 as for an unknown id). The tombstones here are
written straight into the store, in the form every delete leaves."""

import datetime as dt
import json
import uuid

from store.tombstones import PROSPECT_CLEARED, dedupe_key

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)


def iso(value: dt.datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


async def tombstone(store, workspace_id: str, table: str, record_id: str) -> None:
    """Leave `record_id` of `table` (prospects, lists) as its delete does."""
    at = store.clock.now()
    if store.embedded:
        from store.sqlite.paging import bump
        from store.sqlite.schema import ms

        def write(conn):
            cleared = ""
            if table == "prospects":
                cleared = "".join(f', "{name}" = NULL' for name in PROSPECT_CLEARED)
                cleared += ", listIds = '[]', dedupeKey = ?3"
                conn.execute(
                    "UPDATE lists SET prospectsCount = prospectsCount - 1 WHERE workspaceId = ? "
                    "AND _id IN (SELECT listId FROM memberships WHERE workspaceId = ? "
                    "AND prospectId = ?)",
                    (workspace_id, workspace_id, record_id),
                )
                conn.execute(
                    "DELETE FROM memberships WHERE workspaceId = ? AND prospectId = ?",
                    (workspace_id, record_id),
                )
            conn.execute(
                f"UPDATE {table} SET deletedAt = ?1, updatedAt = ?1{cleared} "
                'WHERE "_id" = ?2 AND workspaceId = ?4',
                (ms(at), record_id, dedupe_key(record_id), workspace_id)
                if table == "prospects"
                else (ms(at), record_id, None, workspace_id),
            )
            bump(conn, workspace_id, table, -1)

        await store.engine.write(write)
    else:
        change: dict = {"$set": {"deletedAt": at, "updatedAt": at}}
        if table == "prospects":
            change["$set"].update({"listIds": [], "dedupeKey": dedupe_key(record_id)})
            change["$unset"] = dict.fromkeys(PROSPECT_CLEARED, "")
        await store.db[table].update_one({"_id": record_id, "workspaceId": workspace_id}, change)


async def test_tombstones_are_absent_from_every_ordinary_read(
    app, api, dialer, store, ws_a, new_list
):
    app.settings["config"] = app.settings["config"].replace(sync_settle_seconds=0)
    kept, gone_list = await new_list("Kept"), await new_list("Gone")
    contacts = [
        {"email": "ada@example.com", "phoneNumber": "+12125550101", "firstName": "Ada"},
        {"email": "bob@example.com", "firstName": "Bob"},
    ]
    uploaded = await api.post(f"/v1/lists/{kept['id']}/contacts", {"contacts": contacts})
    assert uploaded.code == 200, uploaded
    ada, bob = (r["prospectId"] for r in uploaded.json()["results"])
    await tombstone(store, ws_a.id, "prospects", ada)
    await tombstone(store, ws_a.id, "lists", gone_list["id"])

    def ids(response, key):
        assert response.code == 200, response
        return [r["id"] for r in response.json()[key]]

    for path in (
        "/v1/prospects",
        "/v1/prospects?sort=updatedAt",
        f"/v1/prospects?listId={kept['id']}",
        f"/v1/prospects?listId={kept['id']}&sort=updatedAt",
        "/v1/prospects?updatedSince=2020-01-01T00:00:00Z",
    ):
        found = ids(await api.get(path), "prospects")
        assert found == [bob], path
    page = (await api.get("/v1/prospects")).json()
    assert page["total"] == 1
    for path in ("/v1/prospects?email=ada@example.com", "/v1/prospects?phoneNumber=+12125550101"):
        assert ids(await api.get(path), "prospects") == [], path
    assert ids(await api.get("/v1/lists"), "lists") == [kept["id"]]
    assert (await api.get("/v1/lists")).json()["total"] == 1
    assert ids(await api.get("/v1/lists?sort=updatedAt"), "lists") == [kept["id"]]
    assert (await api.get(f"/v1/lists/{gone_list['id']}")).code == 404
    assert (await api.get(f"/v1/lists/{kept['id']}")).code == 200
    assert (await api.get(f"/v1/prospect-activities?prospectId={ada}")).code == 404
    assert (await api.get("/v1/prospect-activities?email=ada@example.com")).code == 404
    for resource, expected in (("prospects", [bob]), ("lists", [kept["id"]])):
        response = await api.get(f"/v1/exports/{resource}")
        assert response.code == 200, response
        lines = [json.loads(line) for line in response.body.decode().splitlines() if line]
        assert [r["id"] for r in lines] == expected, resource
        assert all("deletedAt" not in r for r in lines)

    # The references of recorded calls and activities: unknown, 422.
    started = NOW - dt.timedelta(minutes=30)
    call = {
        "userId": ws_a.users[0]["id"],
        "prospectId": bob,
        "direction": "outbound",
        "disposition": "connected",
        "fromNumber": "+12125550142",
        "toNumber": "(415) 555-0111",
        "startedAt": iso(started),
        "answeredAt": iso(started + dt.timedelta(seconds=12)),
        "endedAt": iso(started + dt.timedelta(seconds=252)),
    }
    for change in ({"prospectId": ada}, {"listId": gone_list["id"]}):
        response = await dialer.post("/v1/calls", {**call, **change})
        assert response.code == 422, response
        assert response.json()["code"] == "invalid_reference"
    assert (await dialer.post("/v1/calls", {**call, "listId": kept["id"]})).code == 201
    note = {
        "prospectId": ada,
        "type": "meeting_booked",
        "occurredAt": iso(NOW),
        "details": {"scheduledFor": None},
    }
    response = await dialer.post("/v1/prospect-activities", note)
    assert response.code == 422 and response.json()["code"] == "invalid_reference", response
    assert (await dialer.post("/v1/prospect-activities", {**note, "prospectId": bob})).code == 201

    # Matching: the same person uploaded again is a new prospect, not the tombstone.
    again = await api.post(f"/v1/lists/{kept['id']}/contacts", {"contacts": contacts[:1]})
    assert again.code == 200, again
    result = again.json()["results"][0]
    assert result["outcome"] == "created" and result["prospectId"] not in (ada, bob)
    assert again.json()["totalProspects"] == 2
    fresh = ids(await api.get("/v1/prospects?email=ada@example.com"), "prospects")
    assert fresh == [result["prospectId"]]
    matched = await dialer.post(
        "/v1/calls",
        {
            **{k: v for k, v in call.items() if k != "prospectId"},
            "prospect": {"email": "ada@example.com"},
        },
    )
    assert matched.code == 201, matched
    assert matched.json()["call"]["prospectId"] == result["prospectId"]
    assert str(uuid.UUID(result["prospectId"])) == result["prospectId"]
