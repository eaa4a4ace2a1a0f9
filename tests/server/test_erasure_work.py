"""The erasure worker (server/erasure_work.py) on both backends, against the simulated provider
on loopback: a request erases every prospect its identifiers matched as DELETE /prospects/{id}
does (tombstone, `prospect.deleted`, memberships and list counts with `list.updated`, timeline),
rewrites the person's calls (no prospect, no number of theirs, no notes, no recording, `erasedAt`;
the dialer metrics unchanged), deletes the recordings at the provider (retried with backoff while
the request stays `running`), rewrites every retained event that carried the person to its
erased form (and the webhook deliveries made of them), and ends `completed` with its counts and
an `erasure.completed` event. The worker is drained by the test (`ErasureWork.drain`): no wait.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest

from schemas import Schemas
from server.config import load_config
from server.webhook_dispatch import dispatcher
from telephony.simulated_provider import make_ref, start_provider
from telephony.upstream import UpstreamClient
from tests.erased_bytes import assert_absent, assert_present, stored_forms
from tests.helpers import Client, follow_events, test_environ, until, wait_for
from tests.webhooks.receiver import Answer, Receiver

ACCOUNT_ID = "AC" + "e5" * 16
AUTH_TOKEN = "erasure-provider-token-42"
EMAIL, PHONE = "Augusta.Byron@Erased.example", "+14155550177"
FIRST, LAST, NOTES = "Augusta", "Byronique", "spoke about her pension plans"
REF, OTHER_REF = make_ref("ada's call"), make_ref("bob's call")
METRICS = "/v1/reporting/dialer-metrics?from=2026-11-01&to=2026-11-05"


@pytest.fixture
def config():
    return load_config(
        environ=test_environ(
            shared=True,
            WSAPI_SYNC_SETTLE_SECONDS="0.2",
            WSAPI_WEBHOOK_ALLOWED_NETWORKS="127.0.0.0/8",
            WSAPI_WEBHOOK_POLL_SECONDS="0.1",
            WSAPI_WEBHOOK_RETRY_SCHEDULE=",".join(["1"] * 30),  # a loaded machine: many tries
        )
    )


@pytest.fixture
def provider(io_loop):
    async def start():
        return await start_provider(account_id=ACCOUNT_ID, auth_token=AUTH_TOKEN)

    server = io_loop.run_sync(start)
    yield server
    io_loop.run_sync(server.stop)


@pytest.fixture
def app_services(provider):
    upstream = UpstreamClient(
        provider.base_url, ACCOUNT_ID, AUTH_TOKEN, connect_timeout=1, header_timeout=2
    )
    return {"upstream": upstream}


@pytest.fixture
def admin(io_loop, origin, auth, ws_a) -> Client:
    _, key = io_loop.run_sync(lambda: auth.create(ws_a.id, "admin", frozenset({"read", "admin"})))
    return Client(origin, key)


async def call_of(
    store,
    ws_a,
    prospect_id: str,
    direction: str,
    ref: str | None,
    theirs: str = PHONE,
    notes: str = NOTES,
) -> str:
    started = dt.datetime(2026, 11, 2, 9, 30, tzinfo=dt.UTC)
    ours = "+12125550142"
    made = await store.calls.create(
        ws_a.id,
        user_id=ws_a.users[0]["id"],
        prospect_id=prospect_id,
        direction=direction,
        disposition="connected",
        from_number=ours if direction == "outbound" else theirs,
        to_number=theirs if direction == "outbound" else ours,
        started_at=started,
        answered_at=started,
        ended_at=started + dt.timedelta(minutes=3),
        notes=notes,
        recording_ref=ref,
        recording_duration_seconds=180 if ref else None,
    )
    return made["id"]


@pytest.fixture
def person(io_loop, api, dialer, store, ws_a):
    """Augusta on two lists with a note and two calls (one recorded), and Bob, who stays."""

    async def seed() -> dict:
        lists = []
        for name in ("Leads", "Follow-up"):
            made = await api.post("/v1/lists", {"name": name, "ownerUserId": ws_a.users[0]["id"]})
            lists.append(made.json()["list"]["id"])
        contact = {"firstName": FIRST, "lastName": LAST, "email": EMAIL, "phoneNumber": PHONE}
        for list_id in lists:
            added = await api.post(f"/v1/lists/{list_id}/contacts", {"contacts": [contact]})
            assert added.code == 200, added
        bob = {"firstName": "Bob", "email": "bob@kept.example", "phoneNumber": "+14155550100"}
        await api.post(f"/v1/lists/{lists[0]}/contacts", {"contacts": [bob]})
        found = (await api.get("/v1/prospects")).json()["prospects"]
        ada = next(p["id"] for p in found if p["firstName"] == FIRST)
        bob_id = next(p["id"] for p in found if p["firstName"] == "Bob")
        note = {
            "prospectId": ada,
            "type": "note",
            "occurredAt": "2026-11-02T10:00:00Z",
            "details": {"text": NOTES},
        }
        logged = await dialer.post("/v1/prospect-activities", note)
        assert logged.code == 201, logged
        calls = {
            "outbound": await call_of(store, ws_a, ada, "outbound", REF),
            "inbound": await call_of(store, ws_a, ada, "inbound", None),
            "bob": await call_of(
                store, ws_a, bob_id, "outbound", OTHER_REF, bob["phoneNumber"], "Bob's own"
            ),
        }
        return {"id": ada, "bob": bob_id, "lists": lists, "calls": calls}

    return io_loop.run_sync(seed)


async def settled_feed(api: Client, wanted: str) -> list[dict]:
    async def found():
        events, _ = await follow_events(api)
        return events if any(e["type"] == wanted for e in events) else None

    return await until(found, what=f"a {wanted} event in the feed")  # type: ignore[return-value]


async def test_an_erasure_removes_the_person_everywhere_and_completes(
    app, api, admin, person, provider
):
    metrics_before = (await api.get(METRICS)).json()
    counts_before = {
        list_id: (await api.get(f"/v1/lists/{list_id}")).json()["list"]["prospectsCount"]
        for list_id in person["lists"]
    }
    made = await admin.post("/v1/erasures", {"email": EMAIL.upper()})
    erasure_id = made.json()["erasure"]["id"]

    assert await app.settings["erasure_work"].drain() == 1

    erasure = (await admin.get(f"/v1/erasures/{erasure_id}")).json()["erasure"]
    assert erasure["status"] == "completed" and erasure["reason"] is None
    assert erasure["completedAt"] >= erasure["requestedAt"]
    counts = erasure["counts"]
    # Its timeline: two list additions, the note, the two calls' entries.
    assert (counts["prospects"], counts["activities"], counts["calls"]) == (1, 5, 2)
    assert counts["recordings"] == 1
    # The prospect's created and updated events, its note's and its calls' activities', and
    # the calls' own.
    assert counts["events"] >= 6
    assert provider.stats.deleted == [REF]  # Bob's recording stays

    assert (await api.get(f"/v1/prospects/{person['id']}")).code == 404
    assert (await api.get(f"/v1/prospects/{person['bob']}")).code == 200

    async def tombstone() -> list[dict]:  # the walk shows it once it has settled (0.2 s)
        walk = (await api.get("/v1/prospects?sort=updatedAt&includeDeleted=true")).json()
        return [p for p in walk["prospects"] if p["id"] == person["id"]]

    [tomb] = await until(tombstone, what="the tombstone in the sync walk")  # type: ignore[misc]
    assert set(tomb) == {"id", "deletedAt", "updatedAt"}
    for list_id in person["lists"]:
        shown = (await api.get(f"/v1/lists/{list_id}")).json()["list"]
        assert shown["prospectsCount"] == counts_before[list_id] - 1
    timeline = await api.get(f"/v1/prospect-activities?prospectId={person['id']}")
    assert timeline.code == 404 or timeline.json()["activities"] == []

    outbound = (await api.get(f"/v1/calls/{person['calls']['outbound']}")).json()["call"]
    inbound = (await api.get(f"/v1/calls/{person['calls']['inbound']}")).json()["call"]
    for call in (outbound, inbound):
        assert call["prospectId"] is None and call["notes"] is None
        assert call["hasRecording"] is False and call["recordingDurationSeconds"] is None
        assert call["erasedAt"] >= erasure["requestedAt"]
        assert (call["durationSeconds"], call["disposition"]) == (180, "connected")
    assert outbound["toNumber"] is None and outbound["fromNumber"] == "+12125550142"
    assert inbound["fromNumber"] is None and inbound["toNumber"] == "+12125550142"
    recording = await api.get(f"/v1/calls/{person['calls']['outbound']}/recording")
    assert recording.code == 404
    bob_call = (await api.get(f"/v1/calls/{person['calls']['bob']}")).json()["call"]
    assert bob_call["notes"] == "Bob's own" and "erasedAt" not in bob_call
    assert (await api.get(METRICS)).json() == metrics_before

    events = await settled_feed(api, "erasure.completed")
    schemas = Schemas()
    for event in events:  # the erased forms are documented ones
        assert schemas.errors("/schemas/records/event.json", event) == [], event
    for call in (outbound, inbound):
        assert schemas.errors("/schemas/records/call.json", call) == [], call
    text = json.dumps(events)
    for value in (EMAIL, EMAIL.lower(), PHONE, FIRST, LAST, NOTES):
        assert value not in text, [e for e in events if value in json.dumps(e)]
    about = {person["id"], *person["calls"].values()} - {person["calls"]["bob"]}
    kinds = [e["type"] for e in events if e["data"]["id"] == person["id"]]
    assert kinds[0] == "prospect.created" and kinds[-1] == "prospect.deleted"
    for event in events:
        data = event["data"]
        if event["type"] in ("prospect.created", "prospect.updated") and data["id"] in about:
            assert data == {"id": person["id"], "erased": True}
        if event["type"].startswith("call.") and data["id"] in about:
            assert data["prospectId"] is None and "erasedAt" in data
        if event["type"] == "activity.created" and data.get("erased"):
            assert set(data) == {"id", "erased"}
    notes = [e for e in events if e["type"] == "activity.created" and "prospectId" in e["data"]]
    assert all(e["data"]["prospectId"] == person["bob"] for e in notes)
    [done] = [e for e in events if e["type"] == "erasure.completed"]
    assert set(done["data"]) == {"id", "prospectIds", "callIds"}
    assert done["data"]["id"] == erasure_id and done["data"]["prospectIds"] == [person["id"]]
    assert set(done["data"]["callIds"]) == {person["calls"]["outbound"], person["calls"]["inbound"]}
    assert any(e["type"] == "list.updated" for e in events)


async def test_a_provider_failure_keeps_it_running_until_the_recording_is_gone(
    app, api, admin, person, provider, clock
):
    provider.faults.set_delete("503")
    made = await admin.post("/v1/erasures", {"phoneNumber": "(415) 555-0177"})
    erasure_id = made.json()["erasure"]["id"]
    work = app.settings["erasure_work"]
    assert await work.drain() == 1
    erasure = (await admin.get(f"/v1/erasures/{erasure_id}")).json()["erasure"]
    assert erasure["status"] == "running" and erasure["completedAt"] is None
    assert erasure["counts"]["prospects"] == 1 and erasure["counts"]["recordings"] == 0
    assert provider.library.get(REF) is not None
    assert await work.drain() == 0  # not due before its backoff
    clock.advance(1.5)
    assert await work.drain() == 1  # due again: still failing
    assert (await admin.get(f"/v1/erasures/{erasure_id}")).json()["erasure"]["status"] == (
        "running"
    )
    provider.faults.clear()
    clock.advance(3)
    assert await work.drain() == 1
    erasure = (await admin.get(f"/v1/erasures/{erasure_id}")).json()["erasure"]
    assert erasure["status"] == "completed"
    assert erasure["counts"]["recordings"] == 1 and erasure["counts"]["prospects"] == 1
    assert provider.stats.deleted == [REF]


async def test_an_erasure_matching_nothing_completes_with_zero_counts(app, admin, person):
    made = await admin.post("/v1/erasures", {"email": "nobody@nowhere.example"})
    assert await app.settings["erasure_work"].drain() == 1
    erasure = (await admin.get(made.headers["Location"])).json()["erasure"]
    assert erasure["status"] == "completed"
    assert erasure["counts"] == dict.fromkeys(
        ("prospects", "activities", "calls", "recordings", "events"), 0
    )


@pytest.mark.sqlite
async def test_after_completion_the_person_is_in_no_byte_of_the_database_or_its_log(
    app, admin, person, store
):
    """The proof on the embedded store: each value, in every form the store writes it in
    (tests/erased_bytes.py), is in the file and its log before, and in 0 bytes of them once the
    erasure is `completed` (secure_delete, and the scrub that ends each erasure)."""
    forms = stored_forms(emails=[EMAIL], phones=[PHONE], names=[FIRST, LAST, NOTES])
    assert_present(store.path, forms)
    made = await admin.post("/v1/erasures", {"prospectId": person["id"]})
    assert await app.settings["erasure_work"].drain() == 1
    erasure = (await admin.get(made.headers["Location"])).json()["erasure"]
    assert erasure["status"] == "completed"
    assert_absent(store.path, forms)


async def test_a_stored_answer_that_carried_the_person_is_410_erased_on_retry(
    app, api, admin, person
):
    """The key is kept and its answer is gone: a retry gets 410 `erased`, never the old body
    and never a second write; a stored answer about someone else still replays."""
    upload = {"contacts": [{"firstName": FIRST, "email": EMAIL}]}
    path = f"/v1/lists/{person['lists'][0]}/contacts"
    first = await api.post(path, upload, headers={"Idempotency-Key": "upload-augusta"})
    assert first.code == 200 and person["id"] in first.body.decode(), first
    others = {"contacts": [{"firstName": "Carl", "email": "carl@kept.example"}]}
    kept = await api.post(path, others, headers={"Idempotency-Key": "upload-carl"})
    made = await admin.post("/v1/erasures", {"email": EMAIL})
    assert await app.settings["erasure_work"].drain() == 1
    assert (await admin.get(made.headers["Location"])).json()["erasure"]["status"] == "completed"
    total = (await api.get("/v1/prospects")).json()["total"]

    retry = await api.post(path, upload, headers={"Idempotency-Key": "upload-augusta"})
    assert retry.code == 410, retry
    assert retry.json()["code"] == "erased"
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert FIRST not in retry.body.decode() and person["id"] not in retry.body.decode()
    assert (await api.get("/v1/prospects")).json()["total"] == total  # nothing written
    again = await api.post(path, others, headers={"Idempotency-Key": "upload-carl"})
    assert again.code == 200 and again.json() == kept.json()


@pytest.fixture
def hook(io_loop, api):
    """A receiver that answers 503 until told otherwise, and an endpoint of workspace A for
    every event type, made before the person is (so it is sent their events)."""
    receiver = Receiver().start()
    receiver.failing = True  # type: ignore[attr-defined]
    receiver.plan = lambda request, number: Answer(503 if receiver.failing else 200)  # type: ignore[attr-defined]

    async def register():
        made = await api.post("/v1/webhook-endpoints", {"url": receiver.url()})
        assert made.code == 201, made

    io_loop.run_sync(register)
    yield receiver
    io_loop.run_sync(receiver.stop)


async def test_webhook_attempts_not_yet_sent_carry_only_the_erased_form(
    app, api, admin, hook, person, store, config
):
    running = dispatcher(store, config).start()
    try:
        created = lambda: [r for r in hook.requests if b'"prospect.created"' in r.body]  # noqa: E731
        await wait_for(lambda: len(created()) >= 2, what="the prospects' first attempts")
        assert any(EMAIL.encode() in r.body for r in created())  # sent, and refused: pending
    finally:
        await running.stop(5)
    made = await admin.post("/v1/erasures", {"email": EMAIL})
    assert await app.settings["erasure_work"].drain() == 1
    assert (await admin.get(made.headers["Location"])).json()["erasure"]["status"] == "completed"
    before = len(hook.requests)
    hook.failing = False  # type: ignore[attr-defined]
    running = dispatcher(store, config).start()
    try:

        def done() -> bool:
            return any(b'"erasure.completed"' in r.body for r in hook.requests[before:])

        await wait_for(done, timeout=60, what="erasure.completed delivered")

        def resent() -> bool:
            return any(
                b'"prospect.created"' in r.body and person["id"].encode() in r.body
                for r in hook.requests[before:]
            )

        await wait_for(resent, timeout=60, what="the person's pending attempt sent again")
    finally:
        await running.stop(5)
    later = hook.requests[before:]
    for request in later:
        for value in (EMAIL, EMAIL.lower(), PHONE, FIRST, LAST, NOTES):
            assert value.encode() not in request.body, (value, request.body[:300])
    about = [json.loads(r.body) for r in later if person["id"].encode() in r.body]
    prospects = [e for e in about if e["type"] == "prospect.created"]
    assert prospects and all(e["data"] == {"id": person["id"], "erased": True} for e in prospects)
