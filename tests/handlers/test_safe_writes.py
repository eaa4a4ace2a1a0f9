"""Nothing half-written: bad strings are refused before any write, and an upload that fails
part-way (the database failing at each of its steps in turn) answers 503 and its retry, with or
without the same Idempotency-Key, completes it exactly."""

import asyncio

import pytest

from tests.helpers import Client

FIELDS = (
    "firstName",
    "lastName",
    "phoneNumber",
    "email",
    "companyName",
    "companyDomain",
    "jobTitle",
    "linkedinUrl",
)


async def snapshot(store, workspace_id) -> dict:
    return {
        name: [d for d in await store.documents(name) if d.get("workspaceId") == workspace_id]
        for name in ("lists", "prospects", "activities")
    }


@pytest.mark.parametrize("field", FIELDS)
async def test_a_lone_surrogate_in_any_contact_field_is_400_and_writes_nothing(
    api, store, ws_a, new_list, field
):
    listing = await new_list()
    before = await snapshot(store, ws_a.id)
    body = (
        '{"contacts": [{"email": "fine@example.com", "firstName": "Fine"}, '
        f'{{"{field}": "a\\ud800"}}]}}'
    )
    response = await api.fetch(
        f"/v1/lists/{listing['id']}/contacts",
        "POST",
        body=body,
        headers={"Content-Type": "application/json"},
    )
    assert response.code == 400
    assert response.json()["errors"][0]["pointer"] == f"#/contacts/1/{field}"
    assert await snapshot(store, ws_a.id) == before


@pytest.mark.parametrize(
    "body",
    [
        '{"name": "\\udfff", "ownerUserId": "%s"}',
        '{"name": "ok", "ownerUserId": "%s", "\\ud800": 1}',
    ],
)
async def test_a_lone_surrogate_in_a_list_is_400_and_writes_nothing(api, store, ws_a, body):
    before = await snapshot(store, ws_a.id)
    response = await api.fetch(
        "/v1/lists",
        "POST",
        body=body % ws_a.users[0]["id"],
        headers={"Content-Type": "application/json"},
    )
    assert response.code == 400 and response.json()["errors"][0]["pointer"].startswith("#")
    assert await snapshot(store, ws_a.id) == before


async def test_a_surrogate_pair_is_text_and_accepted(api, new_list):
    listing = await new_list()
    response = await api.fetch(
        f"/v1/lists/{listing['id']}/contacts",
        "POST",
        body='{"contacts": [{"firstName": "\\ud83d\\ude00"}]}',
        headers={"Content-Type": "application/json"},
    )
    assert response.code == 200


class SQLiteFaults:
    """Fails the database at the n-th check of a running write (every 50 VM steps)."""

    def __init__(self, store):
        self.engine, self.n, self.seen = store.engine, None, 0
        store.engine.progress_steps = 50
        store.engine.fault = self.check

    def check(self) -> bool:
        self.seen += 1
        return self.n is not None and self.seen == self.n

    def arm(self, n: int) -> None:
        self.n, self.seen = n, 0

    def disarm(self) -> None:
        self.n = None


class MongoFaults:
    """Fails the n-th database operation of the test's database, whatever the collection (a
    dropped connection)."""

    METHODS = (
        "find",
        "find_one",
        "bulk_write",
        "update_one",
        "insert_one",
        "insert_many",
        "count_documents",
        "find_one_and_update",
        "find_one_and_replace",
        "delete_one",
    )

    def __init__(self, store, monkeypatch):
        import pymongo.errors
        from pymongo.asynchronous.collection import AsyncCollection

        self.n, self.seen = None, 0
        database = store.db.name
        for name in self.METHODS:
            original = getattr(AsyncCollection, name)

            def failing(collection, *args, _original=original, **kwargs):
                if collection.database.name == database:
                    self.seen += 1
                    if self.n is not None and self.seen == self.n:
                        raise pymongo.errors.AutoReconnect("injected: connection dropped")
                return _original(collection, *args, **kwargs)

            monkeypatch.setattr(AsyncCollection, name, failing)

    def arm(self, n: int) -> None:
        self.n, self.seen = n, 0

    def disarm(self) -> None:
        self.n = None


async def members_of(store, workspace_id: str, list_id: str) -> int:
    return sum(
        1
        for p in await store.documents("prospects")
        if p["workspaceId"] == workspace_id and list_id in p.get("listIds", [])
    )


async def counts_read(api, list_id: str) -> list[int]:
    """The list's prospectsCount as GET /v1/lists/{id} and GET /v1/lists show it."""
    one = (await api.get(f"/v1/lists/{list_id}")).json()["list"]["prospectsCount"]
    listed = (await api.get("/v1/lists?pageSize=100")).json()["lists"]
    return [one, *(x["prospectsCount"] for x in listed if x["id"] == list_id)]


async def retried(api, path: str, body: dict, headers: dict):
    """POST again as a client that honours Retry-After on 409 (a key being freed)."""
    for _ in range(10):
        retry = await api.post(path, body, headers=headers)
        if retry.code != 409:
            return retry
        await asyncio.sleep(float(retry.headers["Retry-After"]) / 4)
    return retry


@pytest.fixture
def faults(store, auth, monkeypatch):
    # A key's lastUsedAt is written by a background task (server/keyuse.py) whose failure no
    # request sees; the faults are meant for the requests' own database steps.
    monkeypatch.setattr(auth.usage, "note", lambda *args: None)
    if store.backend == "sqlite":
        return SQLiteFaults(store)
    return MongoFaults(store, monkeypatch)


@pytest.mark.parametrize("same_key", [False, True])
async def test_an_upload_failing_at_each_step_answers_503_and_its_retry_completes_it(
    api, store, ws_a, new_list, faults, same_key
):
    existing = await new_list("Existing")
    seeded = await api.post(
        f"/v1/lists/{existing['id']}/contacts", {"contacts": [{"email": "known@example.com"}]}
    )
    known = seeded.json()["results"][0]["prospectId"]
    failures, step = 0, 0
    while True:
        step += 1
        listing = await new_list(f"Step {step}")
        contacts = [
            {"email": f"s{step}-a@example.com", "firstName": "A"},
            {"phoneNumber": f"+1415555{step:04d}", "lastName": "B"},
            {"email": "known@example.com", "jobTitle": f"Title {step}"},
        ]
        path = f"/v1/lists/{listing['id']}/contacts"
        headers = {"Idempotency-Key": f"step-{step}"}
        faults.arm(step)
        response = await api.post(path, {"contacts": contacts}, headers=headers)
        faults.disarm()
        if response.code == 200:
            break  # the fault came after the last step: every step has been failed once
        assert response.code == 503 and response.headers["Retry-After"], response
        failures += 1
        # Read without retrying: the count is exact whatever the upload left behind.
        members = await members_of(store, ws_a.id, listing["id"])
        assert await counts_read(api, listing["id"]) == [members, members], step
        retry = await retried(api, path, {"contacts": contacts}, headers if same_key else {})
        assert retry.code == 200, (step, retry)
        assert "Idempotent-Replayed" not in retry.headers
        result = retry.json()
        assert result["totalProspects"] == 3 and result["results"][2]["prospectId"] == known
        prospects = [
            p
            for p in await store.documents("prospects")
            if p["workspaceId"] == ws_a.id and listing["id"] in p["listIds"]
        ]
        assert len(prospects) == 3 and all(
            p["listIds"].count(listing["id"]) == 1 for p in prospects
        )
        assert {p["_id"] for p in prospects} == {r["prospectId"] for r in result["results"]}
        added = [
            a
            for a in await store.documents("activities")
            if a["type"] == "list_added" and a["details"]["listId"] == listing["id"]
        ]
        assert sorted(a["prospectId"] for a in added) == sorted(p["_id"] for p in prospects)
        assert (await api.get(f"/v1/lists/{listing['id']}")).json()["list"]["prospectsCount"] == 3
        assert step < 400
    assert failures >= 2  # the upload has several steps, and each was failed
    emails = [
        p.get("emailNorm")
        for p in await store.documents("prospects")
        if p["workspaceId"] == ws_a.id and p.get("emailNorm")
    ]
    assert len(emails) == len(set(emails))  # no duplicate prospect anywhere
    found = [p for p in await store.documents("prospects") if p["_id"] == known]
    assert found[0]["jobTitle"] == "Title 1"  # filled once, by the first completed upload


async def test_a_list_creation_failing_at_each_step_is_created_once_by_its_retry(
    api, store, ws_a, faults
):
    """POST /v1/lists with an Idempotency-Key, the database failing at each of its steps in
    turn (the key's claim, the owner check, the insert, the stored response, freeing the
    key): 503, and its retry with the same key answers 201 with one list, the same one a
    replay then shows."""
    owner = ws_a.users[0]["id"]
    failures, step = 0, 0
    while True:
        step += 1
        body = {"name": f"Step {step}", "ownerUserId": owner}
        headers = {"Idempotency-Key": f"list-{step}"}
        faults.arm(step)
        response = await api.post("/v1/lists", body, headers=headers)
        faults.disarm()
        if response.code == 201:
            break  # the fault came after the last step: every step has been failed once
        assert response.code == 503 and response.headers["Retry-After"], response
        failures += 1
        retry = await retried(api, "/v1/lists", body, headers)
        assert retry.code == 201, (step, retry)
        created = [
            doc
            for doc in await store.documents("lists")
            if doc["workspaceId"] == ws_a.id and doc["name"] == body["name"]
        ]
        assert [doc["_id"] for doc in created] == [retry.json()["list"]["id"]], step
        replay = await api.post("/v1/lists", body, headers=headers)
        assert replay.code == 201 and replay.headers["Idempotent-Replayed"] == "true"
        assert replay.body == retry.body
        assert step < 100
    assert failures >= 3  # claim, owner check, insert (and more on MongoDB)


def dialer_call(ws, step: int, **more) -> dict:
    """A call of workspace `ws` by contact (a prospect to create), unique per step."""
    return {
        "userId": ws.users[0]["id"],
        "prospect": {"email": f"caller{step}@example.com", "firstName": "C"},
        "direction": "outbound",
        "disposition": "connected",
        "fromNumber": "+12125550142",
        "toNumber": f"+1415555{step:04d}",
        "startedAt": "2026-01-05T10:00:00Z",
        "answeredAt": "2026-01-05T10:00:09Z",
        "endedAt": "2026-01-05T10:03:09Z",
        **more,
    }


async def recorded_state(store, workspace_id: str, email: str) -> tuple:
    """The prospects, calls and `call` entries a step's write left behind."""
    prospects = [
        p
        for p in await store.documents("prospects")
        if p["workspaceId"] == workspace_id and p.get("emailNorm") == email
    ]
    ids = {p["_id"] for p in prospects}
    calls = [c for c in await store.documents("calls") if c.get("prospectId") in ids]
    entries = [
        a
        for a in await store.documents("activities")
        if a["type"] == "call" and a["prospectId"] in ids
    ]
    return prospects, calls, entries


@pytest.mark.parametrize("kind", ["single", "batch", "sid without key"])
async def test_a_call_recording_failing_at_each_step_is_recorded_once_by_its_retry(
    origin, store, auth, ws_a, faults, kind
):
    """POST /v1/calls (and /batch) with a contact to create, the database failing at each of
    its steps in turn: 503, and the retry (same Idempotency-Key, or the same providerCallSid
    without one) leaves one prospect, one call and one timeline entry, the totals and metrics
    counting it once."""
    _, key = await auth.create(ws_a.id, "dialer", frozenset({"read", "ingest"}))
    dialer = Client(origin, key)
    failures, step = 0, 0
    while True:
        step += 1
        email = f"caller{step}@example.com"
        sid = {"providerCallSid": f"CA{step:032x}"} if kind == "sid without key" else {}
        call = dialer_call(ws_a, step, **sid)
        path, body = (
            ("/v1/calls/batch", {"calls": [call]}) if kind == "batch" else ("/v1/calls", call)
        )
        headers = {} if sid else {"Idempotency-Key": f"call-{kind}-{step}"}
        faults.arm(step)
        response = await dialer.post(path, body, headers=headers)
        faults.disarm()
        if response.code in (200, 201):
            break  # the fault came after the last step
        assert response.code == 503 and response.headers["Retry-After"], response
        failures += 1
        retry = await retried(dialer, path, body, headers)
        expected = 200 if kind == "batch" else 201
        assert retry.code == expected or (sid and retry.code == 200), (step, retry)
        prospects, calls, entries = await recorded_state(store, ws_a.id, email)
        assert len(prospects) == len(calls) == len(entries) == 1, (step, calls, entries)
        shown = retry.json()
        call_id = shown["results"][0]["callId"] if kind == "batch" else shown["call"]["id"]
        assert calls[0]["_id"] == call_id and entries[0]["callId"] == call_id
        match = shown["results"][0]["prospectMatch"] if kind == "batch" else shown["prospectMatch"]
        assert match["prospectId"] == prospects[0]["_id"]
        assert step < 100
    assert failures >= 2
    total = (await dialer.get("/v1/calls")).json()["total"]
    assert total == len([c for c in await store.documents("calls") if c["workspaceId"] == ws_a.id])
    metrics = await dialer.get("/v1/reporting/dialer-metrics?from=2026-01-05&to=2026-01-05")
    assert metrics.json()["totals"]["dials"] == total


async def test_an_activity_failing_at_each_step_is_logged_once_by_its_retry(
    origin, store, auth, ws_a, faults
):
    _, key = await auth.create(ws_a.id, "dialer", frozenset({"read", "ingest"}))
    dialer = Client(origin, key)
    prospect = await store.prospects.create(ws_a.id, {"email": "p@example.com"})
    if store.backend == "sqlite":
        store.engine.progress_steps = 10  # a short unit: checked more often
    failures, step = 0, 0
    while True:
        step += 1
        body = {
            "prospectId": prospect["id"],
            "type": "note",
            "occurredAt": "2026-01-05T10:00:00Z",
            "details": {"text": f"note {step}"},
        }
        headers = {"Idempotency-Key": f"note-{step}"}
        faults.arm(step)
        response = await dialer.post("/v1/prospect-activities", body, headers=headers)
        faults.disarm()
        if response.code == 201:
            break
        assert response.code == 503, response
        failures += 1
        retry = await retried(dialer, "/v1/prospect-activities", body, headers)
        assert retry.code == 201, (step, retry, await store.documents("idempotency"))
        notes = [
            a
            for a in await store.documents("activities")
            if a["type"] == "note" and a["details"]["text"] == f"note {step}"
        ]
        assert [a["_id"] for a in notes] == [retry.json()["activity"]["id"]]
        assert step < 100
    assert failures >= 1
