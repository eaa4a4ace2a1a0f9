"""The proof that the events feed misses nothing: writers create and change calls, prospects,
lists, activities and users at full speed, and delete users, prospects and lists (contact
uploads, list creations, lists renamed and members taken out of them, prospects corrected and
deleted, lists filled and deleted with their members in them, the users' writes over HTTP,
the demo's live writer recording through the dialer's API, calls by contact and their changes,
notes changes, calls stamped now that land seconds later, and on MongoDB events
held back after their change landed), while a reader follows GET /v1/events from the start.
After the writes stop and one settle period passes, the reader has seen, for every record, an
event carrying its final state as its last event (`{"id", "deletedAt"}` for a deleted one, whose
timeline the reader drops with it), and a `*.created` event for every record: 0 missing,
0 stale. (tests/server/test_events_crash.py proves the same across a SIGKILL.)"""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import time
import uuid

import pytest

from demo.live import ApiRecorder, LiveWriter
from server.config import load_config
from store.calls import call_document
from tests.helpers import Client, test_environ

SETTLE = 1.0
HOLD = 3 * SETTLE  # how long a held-back write takes to land: well past the settle period
RESOURCES = ("calls", "prospects", "lists")
# How long the writers run at least; then until each has done its floor of work (`enough`). The
# wire tier's server (FerretDB) reads whole collections for most queries, so each write there
# takes several times longer: it gets a longer window.
WRITING = {"sqlite": 6.0, "mongodb": 10.0}


@pytest.fixture
def config():
    return load_config(
        environ=test_environ(
            WSAPI_SYNC_SETTLE_SECONDS=str(SETTLE), WSAPI_RATE_LIMIT_PER_MINUTE="10000000"
        )
    )


class Reader:
    """Follows the feed: per record (resource, id) the data of its last event, and which
    records had a `*.created` event."""

    def __init__(self, api: Client) -> None:
        self.api = api
        self.cursor: str | None = None
        self.last: dict[tuple[str, str], dict] = {}
        self.created: set[tuple[str, str]] = set()
        self.positions: list[tuple[str, str]] = []
        self.pages = 0

    async def poll(self) -> bool:
        """One page; True when caught up."""
        path = f"/v1/events?cursor={self.cursor}" if self.cursor else "/v1/events"
        response = await self.api.get(path)
        assert response.code == 200, response
        body = response.json()
        for event in body["events"]:
            resource, action = event["type"].split(".")
            key = (resource, event["data"]["id"])
            self.last[key] = event["data"]
            if event["type"] == "prospect.deleted":  # its timeline goes with it (docs/api.md)
                for gone in [k for k, v in self.last.items() if k[0] == "activity"]:
                    if self.last[gone].get("prospectId") == key[1]:
                        del self.last[gone]
            if action in ("created", "added"):  # a do-not-call entry is "added"
                self.created.add(key)
            self.positions.append((event["occurredAt"], event["id"]))
        self.cursor = body["nextCursor"]
        self.pages += 1
        return not body["hasMore"]

    async def follow(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            if await self.poll():
                await asyncio.sleep(0.05)


async def walk(api: Client, resource: str, query: str = "") -> dict[str, dict]:
    """Every record of a paginated resource, by cursor (nothing is written any more)."""
    found: dict[str, dict] = {}
    body = (await api.get(f"/v1/{resource}?pageSize=100{query}")).json()
    while True:
        found.update((record["id"], record) for record in body[resource])
        if not body["hasMore"]:
            return found
        body = (await api.get(f"/v1/{resource}?cursor={body['nextCursor']}")).json()


async def truth(api: Client, made: list[str], history: set[str]) -> dict[tuple[str, str], dict]:
    """Every record of the workspace as the API shows it now, activities with their
    prospectId (as their events carry them). Users: every one but `history` (those the test
    found, made without events), and the deleted ones among `made` (the writers' users), as
    their last event carries them: the record, or `{"id", "deletedAt"}` once deleted."""
    records: dict[tuple[str, str], dict] = {}
    listed = [u["id"] for u in (await api.get("/v1/users")).json()["users"]]
    for user_id in dict.fromkeys([*made, *listed]):
        if user_id in history:
            continue
        user = (await api.get(f"/v1/users/{user_id}")).json()["user"]
        gone = user["deletedAt"] is not None
        records[("user", user_id)] = (
            {"id": user_id, "deletedAt": user["deletedAt"]} if gone else user
        )
    for resource in RESOURCES:
        for record_id, record in (await walk(api, resource)).items():
            records[(resource.removesuffix("s"), record_id)] = record
    for key in [key for key in records if key[0] == "prospect"]:
        response = await api.get(f"/v1/prospect-activities?prospectId={key[1]}")
        assert response.code == 200, response
        for activity in response.json()["activities"]:
            records[("activity", activity["id"])] = {**activity, "prospectId": key[1]}
    for resource in ("prospects", "lists"):  # deleted ones: as their last event carries them
        synced = await walk(api, resource, "&sort=updatedAt&includeDeleted=true")
        for record_id, record in synced.items():
            if "deletedAt" in record:
                records[(resource.removesuffix("s"), record_id)] = {
                    "id": record_id,
                    "deletedAt": record["deletedAt"],
                }
    return records


class HeldInserts:
    """Holds back one in twenty inserts of events (MongoDB's EventWriter) by HOLD seconds."""

    def __init__(self, store, rng: random.Random, counts: dict) -> None:
        self.writer, self.rng, self.counts = store.event_writer, rng, counts
        self.col = self.writer.col
        self.writer.col = self

    async def insert_many(self, *args, **kwargs):
        if self.rng.random() < 0.05:
            self.counts["held_events"] += 1
            await asyncio.sleep(HOLD)
        return await self.col.insert_many(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self.col, name)

    def restore(self) -> None:
        self.writer.col = self.col


class Patient(Client):
    """A writer's client with its own pool of connections (Tornado's shared client holds at most
    10 requests in flight and fails one that queues 20 s), which does what a real client does
    with a 503 and its Retry-After: asks again, since a refused write wrote nothing."""

    def __init__(self, origin: str, key: str) -> None:
        super().__init__(origin, key, connections=32)

    async def fetch(self, path: str, method: str = "GET", **kwargs):
        deadline = time.monotonic() + 120
        while True:
            response = await super().fetch(path, method, **kwargs)
            if response.code != 503 or time.monotonic() > deadline:
                return response
            await asyncio.sleep(float(response.headers.get("Retry-After", "1")))


def check(reader: Reader, records: dict[tuple[str, str], dict]) -> None:
    missing = [key for key in records if key not in reader.last]
    stale = [key for key in records if key in reader.last and reader.last[key] != records[key]]
    uncreated = [key for key in records if key not in reader.created]
    assert (len(missing), len(stale), len(uncreated)) == (0, 0, 0), (
        missing[:3],
        [(key, reader.last[key], records[key]) for key in stale[:2]],
        uncreated[:3],
    )
    assert set(reader.last) == set(records)  # and nothing the workspace does not have
    assert reader.positions == sorted(reader.positions)
    assert len(set(reader.positions)) == len(reader.positions)  # no event twice


async def test_a_reader_of_the_feed_misses_nothing_while_writers_run_at_full_speed(
    store, auth, origin, ws_a, clock
):
    api = Patient(origin, ws_a.key)

    async def new_list(name: str) -> dict:
        body = {"name": name, "ownerUserId": ws_a.users[0]["id"]}
        response = await api.post("/v1/lists", body)
        assert response.code == 201, response
        return response.json()["list"]

    rng = random.Random(25)
    stop = asyncio.Event()
    lists = [await new_list(f"Proof {i}") for i in range(3)]
    seed = [{"email": f"seed{i}@example.com", "phoneNumber": f"+1212555{i:04d}"} for i in range(30)]
    assert (await api.post(f"/v1/lists/{lists[0]['id']}/contacts", {"contacts": seed})).code == 200
    prospects = (await api.get("/v1/prospects?pageSize=100")).json()["prospects"]
    _, ingest = await auth.create(ws_a.id, "dialer", frozenset({"read", "ingest"}))
    dialer = Patient(origin, ingest)
    # The demo's live writer: a dialer over HTTP (POST /v1/calls and /v1/calls/batch, meetings
    # by POST /v1/prospect-activities, recordings and notes by PATCH /v1/calls/{id}).
    recorder = ApiRecorder(f"{origin}/v1", {ws_a.id: ingest}, random.Random(8), (0.1, 1.0))
    live = LiveWriter(store, [ws_a.id], 12_000, recorder, rng=random.Random(7))
    counts = {"uploads": 0, "lists": 0, "notes": 0, "held": 0, "held_events": 0, "dialed": 0}
    counts |= {"users": 0, "deleted_users": 0, "renamed": 0, "removed": 0, "suppressed": 0}
    counts |= {"patched": 0, "deleted_prospects": 0, "deleted_lists": 0}
    _, key = await auth.create(ws_a.id, "directory", frozenset({"read", "admin"}))
    admin = Patient(origin, key)
    users: list[str] = []

    pushed: list[str] = []  # the emails uploaded so far

    async def upload() -> None:  # creates, fills and lists prospects; moves the lists
        n = 0
        while not stop.is_set():
            n += 1
            contacts = [
                {
                    "email": f"c{rng.randint(0, 80)}@example.com",
                    rng.choice(["firstName", "jobTitle", "companyName"]): f"v{n}",
                }
                for _ in range(rng.randint(1, 10))
            ]
            target = rng.choice(lists)["id"]
            response = await api.post(f"/v1/lists/{target}/contacts", {"contacts": contacts})
            assert response.code == 200, response
            pushed.extend(contact["email"] for contact in contacts)
            counts["uploads"] += 1
            if store.backend == "mongodb":  # uploads take turns with removals, deletes and
                await asyncio.sleep(0.2)  # opt-outs (MongoDB): leave the others their turns

    async def create_lists() -> None:
        while not stop.is_set():
            lists.append(await new_list(f"More {counts['lists']}"))
            counts["lists"] += 1
            await asyncio.sleep(0.1)

    async def change_lists() -> None:  # lists renamed, members taken out (and uploaded again)
        n = 0
        while not stop.is_set():
            n += 1
            target = rng.choice(lists)["id"]
            renamed = await api.patch(f"/v1/lists/{target}", {"name": f"Renamed {n}"})
            assert renamed.code == 200, renamed
            counts["renamed"] += 1
            page = (await api.get(f"/v1/prospects?listId={target}&pageSize=50")).json()
            members = [p["id"] for p in page["prospects"]]
            chosen = rng.sample(members, min(len(members), rng.randint(1, 3)))
            if chosen:
                body = {"prospectIds": [*chosen, str(uuid.uuid4())]}
                removed = await api.post(f"/v1/lists/{target}/contacts/remove", body)
                assert removed.code == 200, removed
                counts["removed"] += removed.json()["removed"]
            # A removal takes the uploads' turn (MongoDB): leave the uploads most of them.
            await asyncio.sleep(0.05 if store.backend == "sqlite" else 0.5)

    async def change_notes() -> None:  # at full speed, on the live writer's newest calls
        while not stop.is_set():
            recent = live.recent.get(ws_a.id)
            if recent:
                await store.calls.change(ws_a.id, rng.choice(recent), {"notes": f"n{rng.random()}"})
                counts["notes"] += 1
            else:
                await asyncio.sleep(0.01)

    async def held_back() -> None:  # stamped now, lands HOLD later (a slow network, a stall)
        while not stop.is_set():
            prospect = rng.choice(prospects)
            now = clock.now()
            doc = call_document(
                ws_a.id,
                user_id=ws_a.users[0]["id"],
                prospect_id=prospect["id"],
                direction="inbound",
                disposition="connected",
                from_number=prospect["phoneNumber"],
                to_number="+12125550100",
                started_at=now - dt.timedelta(minutes=2),
                answered_at=now - dt.timedelta(minutes=2),
                ended_at=now,
                updated_at=now,
            )
            await asyncio.sleep(HOLD)
            await store.calls.insert_documents(ws_a.id, [doc])
            counts["held"] += 1

    async def live_calls() -> None:  # the demo's live writer (calls, meetings, notes), flat out
        await live.prepare()
        while not stop.is_set():
            await live.write(5)
            live.written += 5
            await recorder.later()
        await asyncio.sleep(1.0)
        await recorder.later()  # the last recordings

    async def dial_contacts() -> None:  # calls by contact: prospects created and filled
        n = 0
        while not stop.is_set():
            n += 1
            minute = n % 60
            body = {
                "userId": ws_a.users[0]["id"],
                "prospect": {
                    "email": f"c{rng.randint(0, 80)}@example.com",
                    rng.choice(["lastName", "companyDomain"]): f"d{n}",
                },
                "direction": "outbound",
                "disposition": rng.choice(["connected", "no_answer"]),
                "fromNumber": "+12125550100",
                "toNumber": "+14155550100",
                "startedAt": f"2026-01-05T10:{minute:02d}:00Z",
                "endedAt": f"2026-01-05T10:{minute:02d}:30Z",
            }
            response = await dialer.post("/v1/calls", body)
            assert response.code == 201, response
            counts["dialed"] += 1
            changed = await dialer.patch(
                f"/v1/calls/{response.json()['call']['id']}", {"disposition": "voicemail"}
            )
            assert changed.code == 200, changed

    async def manage_users() -> None:  # a directory in step: users created, renamed, deleted
        n = 0
        while not stop.is_set():
            n += 1
            body = {"email": f"rep{n}@proof.example", "firstName": "Rep", "lastName": str(n)}
            response = await admin.post("/v1/users", body)
            assert response.code == 201, response
            users.append(response.json()["user"]["id"])
            renamed = await admin.patch(f"/v1/users/{users[-1]}", {"lastName": f"R{n}"})
            assert renamed.code == 200, renamed
            counts["users"] += 1
            if n % 2 == 0:  # some twice: 204 again, nothing recorded
                deleted = await admin.fetch(f"/v1/users/{rng.choice(users)}", "DELETE")
                assert deleted.code == 204, deleted
                counts["deleted_users"] += 1
            await asyncio.sleep(0.1)  # a directory's pace, as create_lists keeps a CRM's

    async def correct_and_delete() -> None:  # a CRM corrects and deletes what it pushed
        n = 0
        while not stop.is_set():
            n += 1
            email = rng.choice(pushed) if pushed else "c0@example.com"  # what it pushed
            found = (await api.get(f"/v1/prospects?email={email}")).json()["prospects"]
            if found:
                target = f"/v1/prospects/{found[0]['id']}"
                patched = await api.patch(target, {"jobTitle": f"Corrected {n}"})
                assert patched.code in (200, 404), patched  # 404: deleted meanwhile
                counts["patched"] += patched.code == 200
                if n % 3 == 0:
                    deleted = await api.fetch(target, "DELETE")
                    assert deleted.code == 204, deleted
                    counts["deleted_prospects"] += 1
            if n % 5 == 0:  # a campaign's own list: filled, then deleted with its members in it
                own = await new_list(f"Campaign {n}")
                members = [{"email": f"c{rng.randint(0, 80)}@example.com"} for _ in range(3)]
                filled = await api.post(f"/v1/lists/{own['id']}/contacts", {"contacts": members})
                assert filled.code == 200, filled
                assert (await api.fetch(f"/v1/lists/{own['id']}", "DELETE")).code == 204
                counts["deleted_lists"] += 1
            await asyncio.sleep(0.1 if store.backend == "sqlite" else 0.3)

    entries: dict[str, dict] = {}  # the do-not-call entries added, as added
    removed: dict[str, dict] = {}  # and those removed since: their last event's data

    async def suppress() -> None:  # opt-outs from a CRM: the seed's prospects change at once
        while not stop.is_set():
            person = rng.choice(seed)
            entry = (
                {"email": person["email"]}
                if rng.random() < 0.5
                else {"phoneNumber": person["phoneNumber"]}
            )
            response = await api.post("/v1/do-not-call", {"entries": [entry]})
            assert response.code == 200, response
            result = response.json()["results"][0]
            entries[result["entry"]["id"]] = result["entry"]
            counts["suppressed"] += 1
            live = [entry_id for entry_id in entries if entry_id not in removed]
            if live and rng.random() < 0.5:
                entry_id = rng.choice(live)
                deleted = await api.fetch(f"/v1/do-not-call/{entry_id}", "DELETE")
                assert deleted.code == 204, deleted
                removed[entry_id] = entries[entry_id]
            await asyncio.sleep(0.3)  # a CRM's pace: MongoDB's uploads take turns with it

    tasks = [upload, create_lists, change_notes, held_back, held_back, live_calls, dial_contacts]
    tasks += [manage_users, change_lists, suppress, correct_and_delete]
    # MongoDB: some events held back between the instant they were stamped with and their
    # insert (a stalled process, a slow network), after their change landed.
    held_events = HeldInserts(store, rng, counts) if store.backend == "mongodb" else None
    reader = Reader(Patient(origin, ws_a.key))
    running = [asyncio.ensure_future(task()) for task in tasks]
    following = asyncio.ensure_future(reader.follow(asyncio.Event()))

    def enough() -> bool:  # the floor of work each writer must have done
        done = counts["uploads"] > 5 and counts["notes"] > 5 and counts["held"] >= 2
        done = done and live.written > 10 and counts["dialed"] >= 1
        done = done and counts["deleted_users"] >= 2 and counts["renamed"] >= 2
        done = done and counts["removed"] >= 2 and counts["suppressed"] >= 5 and bool(removed)
        done = done and counts["patched"] >= 2 and counts["deleted_prospects"] >= 2
        return done and counts["deleted_lists"] >= 1

    try:
        await asyncio.sleep(WRITING[store.backend])
        deadline = time.monotonic() + 300  # a loaded machine: until the floor is reached
        while not enough():
            for task in running:  # a writer that failed says why at once, not at the deadline
                failure = task.exception() if task.done() else None
                if failure is not None:
                    raise failure
            floor = f"floor not reached: {counts}, live writes {live.written}"
            assert time.monotonic() < deadline, floor
            await asyncio.sleep(0.2)
        stop.set()
        await asyncio.gather(*running)  # every write ends as it would: none is cut short
    finally:
        for task in [*running, following]:  # on a failure too: no writer outlives the test
            task.cancel()
        await asyncio.gather(*running, following, return_exceptions=True)
        if held_events is not None:
            held_events.restore()
    assert counts["uploads"] > 5 and counts["notes"] > 5 and counts["held"] >= 2, counts
    assert live.written > 10 and counts["dialed"] >= 1 and counts["deleted_users"] >= 2, counts
    assert counts["renamed"] >= 2 and counts["removed"] >= 2, counts
    clock.advance(SETTLE + 0.2)  # one settle period without writes
    deadline = time.monotonic() + 60
    while not await reader.poll():
        assert time.monotonic() < deadline, "the reader never caught up"
    records = await truth(api, users, {u["id"] for u in [*ws_a.users, ws_a.deleted_user]})
    listed = (await api.get("/v1/do-not-call?pageSize=100")).json()
    assert not listed["hasMore"]
    for entry in listed["entries"]:
        records[("do_not_call", entry["id"])] = entry
    for entry_id, entry in removed.items():  # gone: the last event carries it as it was
        records[("do_not_call", entry_id)] = entry
    assert {key[1] for key in records if key[0] == "do_not_call"} == set(entries)
    assert removed and counts["suppressed"] >= 5, counts
    kinds = {resource for resource, _ in records}
    assert kinds == {"call", "prospect", "list", "activity", "user", "do_not_call"}
    assert any(records[("user", u)].keys() == {"id", "deletedAt"} for u in users), "none deleted"
    updated = [key for key in records if key[0] == "call" and records[key]["notes"] is not None]
    assert updated, "no call was changed"
    recorded = [key for key in records if key[0] == "call" and records[key]["hasRecording"]]
    assert recorded, "no recording was attached"
    check(reader, records)
