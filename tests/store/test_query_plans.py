"""Every query the API sends to SQLite is served by an index: the statements of every endpoint
and filter are captured as they run (the writes with the events they record, the events feed,
the retention delete), and `EXPLAIN QUERY PLAN` of each shows no full scan of a workspace's
calls, prospects, memberships, activities, events or users, and no walk over all of a workspace's
rows outside a LIMITed page (docs/deployment.md's index table lists the indexes)."""

import datetime as dt
import re
import sqlite3
import uuid

import pytest

from demo.data import Scale
from demo.seeding import seed

pytestmark = pytest.mark.sqlite

BIG_TABLES = (
    "calls",
    "prospects",
    "memberships",
    "activities",
    "events",
    "users",
    "do_not_call",
)


@pytest.fixture
def statements(store, monkeypatch):
    """Every SQL statement the store runs from now on, with its parameters bound."""
    seen: list[str] = []
    original = store.engine._connection

    def connection():
        conn = original()
        conn.set_trace_callback(seen.append)
        return conn

    monkeypatch.setattr(store.engine, "_connection", connection)
    return seen


def plan(path, statement: str) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + statement)]
    finally:
        conn.close()


async def test_no_endpoint_scans_a_big_table(store, auth, app, origin, statements, monkeypatch):
    from handlers.exports import ExportHandler
    from tests.helpers import Client

    # Exports in batches of 20 of every seeded record: their keyset batches run too.
    monkeypatch.setattr(ExportHandler, "batch_size", 20)
    app.settings["config"] = app.settings["config"].replace(sync_settle_seconds=0)

    workspaces = await seed(store, auth, seed=5, scale=Scale(calls=300, prospects=60, timeline=50))
    api = Client(origin, workspaces[0]["apiKey"])
    users = (await api.get("/v1/users")).json()["users"]
    lists = (await api.get("/v1/lists")).json()["lists"]
    prospect = (await api.get("/v1/prospects?pageSize=100")).json()["prospects"][0]
    call = next(
        c for c in (await api.get("/v1/calls?pageSize=100")).json()["calls"] if c["hasRecording"]
    )
    user, list_id = users[0]["id"], lists[0]["id"]
    since = "2020-01-01T00:00:00Z"
    paths = [
        "/v1/lists",
        "/v1/lists?page=2",
        f"/v1/lists/{list_id}",
        "/v1/calls?pageSize=100&page=3",
        f"/v1/calls?userId={user}",
        f"/v1/calls?prospectId={prospect['id']}",
        f"/v1/calls?listId={list_id}",
        "/v1/calls?direction=inbound",
        "/v1/calls?disposition=connected",
        f"/v1/calls?createdFrom={since}&createdTo=2099-01-01",
        f"/v1/calls?updatedSince={since}",
        f"/v1/calls?userId={user}&direction=outbound&disposition=voicemail",
        "/v1/prospects?page=2",
        f"/v1/prospects?listId={list_id}",
        f"/v1/prospects?listId={list_id}&updatedSince={since}",
        f"/v1/prospects?email={prospect['email']}",
        f"/v1/prospects?phoneNumber={prospect['phoneNumber']}",
        f"/v1/prospects?updatedSince={since}",
        f"/v1/prospect-activities?prospectId={prospect['id']}",
        "/v1/exports/calls",
        f"/v1/exports/calls?userId={user}&direction=outbound&updatedSince={since}",
        f"/v1/exports/calls?listId={list_id}&createdFrom={since}",
        "/v1/exports/prospects",
        f"/v1/exports/prospects?listId={list_id}&updatedSince={since}",
        f"/v1/exports/prospects?email={prospect['email']}",
        f"/v1/exports/prospects?phoneNumber={prospect['phoneNumber']}",
        f"/v1/exports/calls?prospectId={prospect['id']}",
        "/v1/exports/lists",
        f"/v1/exports/lists?updatedSince={since}",
        f"/v1/lists?updatedSince={since}",
        f"/v1/lists?sort=updatedAt&updatedSince={since}",
        "/v1/exports/activities",
        f"/v1/exports/activities?updatedSince={since}",
        f"/v1/prospect-activities?email={prospect['email']}",
        "/v1/reporting/dialer-metrics?from=2026-01-01&to=2026-12-31",
        f"/v1/reporting/dialer-metrics?from=2026-01-01&to=2026-12-31&userId={user}",
        "/v1/reporting/dialer-metrics?from=2026-01-01&to=2026-12-31&timezone=Asia/Kathmandu",
    ]
    for path in paths:
        assert (await api.get(path)).code == 200, path
    created = (await api.post("/v1/lists", {"name": "Plans", "ownerUserId": user})).json()
    contacts = [
        {"email": prospect["email"], "jobTitle": "CTO"},
        {"phoneNumber": "+12125550199"},
        {"linkedinUrl": "linkedin.com/in/plans"},
        {"firstName": "Only a name"},
    ]
    for _ in range(2):
        response = await api.post(
            f"/v1/lists/{created['list']['id']}/contacts", {"contacts": contacts}
        )
        assert response.code == 200
    # The lists' changes: renamed, then members taken out (and one that is not a member).
    plans = f"/v1/lists/{created['list']['id']}"
    assert (await api.patch(plans, {"name": "Plans 2", "ownerUserId": user})).code == 200
    members = (await api.get(f"/v1/prospects?listId={created['list']['id']}")).json()
    removal = {"prospectIds": [members["prospects"][0]["id"], str(uuid.uuid4())]}
    assert (await api.post(f"{plans}/contacts/remove", removal)).json()["removed"] == 1
    assert await store.calls.recording_ref(workspaces[0]["id"], call["id"]) is not None
    # The dialer's writes: calls by id and by contact, with and without a SID, again (existing),
    # in a batch, changed, read back; activities.
    _, key = await auth.create(workspaces[0]["id"], "dialer", frozenset({"read", "ingest"}))
    dialer = Client(origin, key)
    recorded = {
        "userId": user,
        "prospectId": prospect["id"],
        "listId": list_id,
        "direction": "outbound",
        "disposition": "connected",
        "fromNumber": "+12125550142",
        "toNumber": "+14155550111",
        "startedAt": "2026-01-05T10:00:00Z",
        "answeredAt": "2026-01-05T10:00:09Z",
        "endedAt": "2026-01-05T10:03:09Z",
        "providerCallSid": "CA" + "1" * 32,
    }
    by_contact = {
        **{k: v for k, v in recorded.items() if k not in ("prospectId", "providerCallSid")},
        "prospect": {"email": prospect["email"], "linkedinUrl": "linkedin.com/in/other"},
    }
    for body in (recorded, recorded, by_contact):
        assert (await dialer.post("/v1/calls", body)).code in (200, 201)
    batch = {"calls": [recorded, by_contact, {**recorded, "providerCallSid": "CA" + "2" * 32}]}
    assert (await dialer.post("/v1/calls/batch", batch)).code == 200
    changed = (await dialer.post("/v1/calls", by_contact)).json()["call"]["id"]
    for change in ({"disposition": "voicemail", "meetingBooked": True}, {"notes": "n"}):
        assert (await dialer.patch(f"/v1/calls/{changed}", change)).code == 200
    assert (await dialer.get(f"/v1/calls/{changed}")).code == 200
    note = {
        "prospectId": prospect["id"],
        "type": "meeting_booked",
        "occurredAt": "2026-01-05T10:00:00Z",
        "userId": user,
        "callId": changed,
        "details": {"scheduledFor": None},
    }
    assert (await dialer.post("/v1/prospect-activities", note)).code == 201
    await store.calls.change(workspaces[0]["id"], call["id"], {"notes": "Plans"})
    # The users' writes and reads, with the events they record.
    _, key = await auth.create(workspaces[0]["id"], "admin", frozenset({"read", "admin"}))
    admin = Client(origin, key)
    body = {"email": "plans@users.example", "firstName": "Plan", "lastName": "S"}
    made = (await admin.post("/v1/users", body)).json()["user"]["id"]
    assert (await admin.post("/v1/users", body)).code == 409
    change = {"email": "Plans2@users.example", "lastName": "Lans"}
    assert (await admin.patch(f"/v1/users/{made}", change)).code == 200
    assert (await admin.fetch(f"/v1/users/{made}", "DELETE")).code == 204
    assert (await admin.fetch(f"/v1/users/{made}", "DELETE")).code == 204
    assert (await admin.get(f"/v1/users/{made}")).code == 200
    # The do-not-call list: entries that touch prospects, an upload that meets them, the
    # prospects that may be dialled, the list's pages and lookups, a removal.
    entries = [{"phoneNumber": prospect["phoneNumber"]}, {"email": "Plans@dnc.example"}]
    added = await api.post("/v1/do-not-call", {"entries": entries, "reason": "Plans"})
    assert added.code == 200
    response = await api.post(f"/v1/lists/{created['list']['id']}/contacts", {"contacts": contacts})
    assert response.json()["suppressedContacts"] == 1
    for path in (
        "/v1/do-not-call",
        f"/v1/do-not-call?phoneNumber={prospect['phoneNumber']}",
        "/v1/do-not-call?email=plans%40dnc.example",
        "/v1/prospects?doNotCall=false",
        "/v1/prospects?doNotCall=true&page=2",
    ):
        assert (await api.get(path)).code == 200, path
    entry = added.json()["results"][0]["entry"]["id"]
    assert (await api.fetch(f"/v1/do-not-call/{entry}", "DELETE")).code == 204
    # A prospect read, changed (its identifiers too) and deleted, the walks that carry
    # tombstones, and the tombstone sweep.
    recent = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).date()
    assert (await api.get(f"/v1/prospects/{prospect['id']}")).code == 200
    change = {"email": "plans.changed@example.com", "jobTitle": None, "ownerUserId": user}
    assert (await api.patch(f"/v1/prospects/{prospect['id']}", change)).code == 200
    assert (await api.fetch(f"/v1/prospects/{prospect['id']}", "DELETE")).code == 204
    assert (await api.fetch(f"/v1/prospects/{prospect['id']}", "DELETE")).code == 204
    for path in (
        "/v1/prospects?sort=updatedAt&includeDeleted=true",
        f"/v1/prospects?sort=updatedAt&includeDeleted=true&updatedSince={recent}",
        "/v1/lists?sort=updatedAt&includeDeleted=true",
    ):
        assert (await api.get(path)).code == 200, path
    await store.sweep_tombstones(dt.datetime(2100, 1, 1))
    feed = await api.get("/v1/events?pageSize=5")
    assert feed.code == 200
    for path in (
        f"/v1/events?cursor={feed.json()['nextCursor']}",
        "/v1/events?type=prospect.created",
        "/v1/events?type=call.updated,list.updated,prospect.updated",
        f"/v1/events?since={(dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).date()}",
    ):
        assert (await api.get(path)).code == 200, path
    await store.events.delete_expired(dt.datetime(2020, 1, 1))
    # The recording retention sweep's claim of due calls, a postponement, a removal.
    workspace_id = workspaces[0]["id"]
    now = store.clock.now()
    due = await store.calls.claim_expired_recordings(
        workspace_id, dt.datetime(2100, 1, 1), now, dt.timedelta(minutes=10), 5
    )
    assert len(due) == 5
    await store.calls.postpone_recording(workspace_id, due[0], now + dt.timedelta(minutes=1))
    assert await store.calls.forget_recording(workspace_id, due[1]) is not None

    checked = 0
    for statement in statements:
        if not re.match(r"\s*(SELECT|UPDATE|DELETE|INSERT)", statement, re.IGNORECASE):
            continue
        # The one walk of a table in its own order: the retention delete, the oldest rows
        # first (events are written in the order of their instants), under a LIMIT.
        oldest_first = re.search(r"FROM events ORDER BY rowid LIMIT \d+\)", statement)
        for line in plan(store.path, statement):
            scans = re.match(rf"SCAN ({'|'.join(BIG_TABLES)})\b", line)
            assert not (scans and not oldest_first), (statement, line)
            # A search bounded by the workspace alone walks all of its rows: fine under a
            # LIMIT (a page in index order), a defect anywhere else.
            walks = re.match(
                rf"SEARCH ({'|'.join(BIG_TABLES)}|p|m) USING (COVERING )?INDEX "
                r"\w+ \(workspaceId=\?\)$",
                line,
            )
            assert not (walks and " LIMIT " not in statement), (statement, line)
        checked += 1
    assert checked > 50
