"""The dialer's calls: POST /v1/calls, POST /v1/calls/batch, GET/PATCH /v1/calls/{id}, over
HTTP on both tiers: what a recorded call looks like, every validation rule, references,
providerCallSid idempotency (concurrent posts included), contacts matched like uploads,
recordings attached later, and the derived figures (totals, metrics, timeline, sync order)
after back-dated inserts and changes."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import uuid

import pytest

from tests.helpers import Client, walk_pages

NOW = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
SID = "CA" + "5e" * 16
REC = "RE" + "7a" * 16


def iso(value: dt.datetime) -> str:
    return value.isoformat(timespec="milliseconds") + "Z"


def sid(n: int) -> str:
    return f"CA{n:032x}"


@pytest.fixture
def prospect(io_loop, store, ws_a):
    return io_loop.run_sync(
        lambda: store.prospects.create(
            ws_a.id, {"firstName": "Pat", "email": "pat@a.example", "phoneNumber": "+14155550111"}
        )
    )


@pytest.fixture
def body(ws_a, prospect):
    """A valid call body of workspace A: answered, 4 minutes of talk, 30 minutes ago."""
    started = NOW - dt.timedelta(minutes=30)

    def make(**changes):
        value = {
            "userId": ws_a.users[0]["id"],
            "prospectId": prospect["id"],
            "direction": "outbound",
            "disposition": "connected",
            "fromNumber": "+12125550142",
            "toNumber": "(415) 555-0111",
            "startedAt": iso(started),
            "answeredAt": iso(started + dt.timedelta(seconds=12)),
            "endedAt": iso(started + dt.timedelta(seconds=252)),
        }
        value.update(changes)
        return {k: v for k, v in value.items() if v is not DROP}

    return make


DROP = object()


async def calls_of(store, workspace_id: str) -> list[dict]:
    return [c for c in await store.documents("calls") if c["workspaceId"] == workspace_id]


async def timeline(dialer, prospect_id: str) -> list[dict]:
    response = await dialer.get(f"/v1/prospect-activities?prospectId={prospect_id}")
    assert response.code == 200, response
    return response.json()["activities"]


# --- recording one call ------------------------------------------------------------------------


async def test_a_recorded_call_is_the_call_get_shows_with_its_timeline_entry(
    dialer, store, ws_a, prospect, body
):
    before = (await dialer.get("/v1/calls")).json()["total"]
    sent = body(
        notes="Wants a demo",
        recordingSid=REC,
        recordingDurationSeconds=240,
        listId=None,
        providerCallSid=SID,
    )
    response = await dialer.post("/v1/calls", sent)
    assert response.code == 201, response
    call = response.json()["call"]
    assert set(response.json()) == {"call"}
    assert response.headers["Location"] == f"/v1/calls/{call['id']}"
    started = NOW - dt.timedelta(minutes=30)
    assert call == {
        "id": call["id"],
        "direction": "outbound",
        "disposition": "connected",
        "fromNumber": "+12125550142",
        "toNumber": "+14155550111",  # normalised like prospects' phones
        "toNumberSuppressed": False,
        "userId": ws_a.users[0]["id"],
        "prospectId": prospect["id"],
        "listId": None,
        "startedAt": iso(started),
        "answeredAt": iso(started + dt.timedelta(seconds=12)),
        "endedAt": iso(started + dt.timedelta(seconds=252)),
        "durationSeconds": 240,
        "hasRecording": True,
        "recordingDurationSeconds": 240,
        "meetingBooked": False,
        "notes": "Wants a demo",
        "createdAt": iso(started),
        "updatedAt": call["updatedAt"],
    }
    assert call["updatedAt"] >= iso(NOW)
    text = response.body.decode().lower()
    assert SID.lower() not in text and REC.lower() not in text  # never shown
    assert (await dialer.get(response.headers["Location"])).json() == {"call": call}
    listed = (await dialer.get("/v1/calls?pageSize=100")).json()
    assert listed["total"] == before + 1
    assert [c for c in listed["calls"] if c["id"] == call["id"]] == [call]
    assert await store.calls.recording_ref(ws_a.id, call["id"]) == REC
    entries = await timeline(dialer, prospect["id"])
    assert [(a["type"], a["callId"], a["summary"]) for a in entries] == [
        ("call", call["id"], "Outbound call: connected (4m 00s)")
    ]


async def test_optional_fields_default_and_a_sidless_call_is_recorded_each_time(dialer, body):
    sent = body(answeredAt=DROP, disposition="no_answer")
    first = await dialer.post("/v1/calls", sent)
    second = await dialer.post("/v1/calls", sent)
    assert first.code == second.code == 201
    one, two = first.json()["call"], second.json()["call"]
    assert one["id"] != two["id"]
    assert (one["answeredAt"], one["durationSeconds"], one["meetingBooked"], one["notes"]) == (
        None,
        0,
        False,
        None,
    )
    assert (one["hasRecording"], one["recordingDurationSeconds"], one["listId"]) == (
        False,
        None,
        None,
    )


async def test_instants_with_offsets_and_fractions_are_stored_in_utc_milliseconds(dialer, body):
    started = NOW - dt.timedelta(hours=2)
    local = (started + dt.timedelta(hours=2)).isoformat() + ".123456789+02:00"
    sent = body(
        startedAt=local,
        answeredAt=None,
        endedAt=iso(started + dt.timedelta(seconds=30)),
        disposition="busy",
    )
    call = (await dialer.post("/v1/calls", sent)).json()["call"]
    assert call["startedAt"] == call["createdAt"] == iso(started + dt.timedelta(milliseconds=123))


def bad_bodies():
    """(changes to a valid body, pointer, words of the detail)."""
    future = iso(NOW + dt.timedelta(days=2))  # NOW is when the module was imported
    return [
        ({"userId": DROP}, "#/userId", "is required"),
        ({"direction": "sideways"}, "#/direction", "must be one of"),
        ({"disposition": "hung_up"}, "#/disposition", "must be one of"),
        ({"fromNumber": "call me"}, "#/fromNumber", "phone number"),
        ({"toNumber": "12"}, "#/toNumber", "phone number"),
        ({"startedAt": "yesterday"}, "#/startedAt", "RFC 3339"),
        ({"startedAt": "2026-02-30T10:00:00Z"}, "#/startedAt", "real date"),
        ({"startedAt": "2026-11-21T09:30:00"}, "#/startedAt", "UTC offset"),
        ({"startedAt": "1969-12-31T23:59:59Z"}, "#/startedAt", "1970"),
        ({"answeredAt": iso(NOW - dt.timedelta(hours=3))}, "#/answeredAt", "before startedAt"),
        ({"endedAt": iso(NOW - dt.timedelta(hours=3))}, "#/endedAt", "before answeredAt"),
        (
            {"answeredAt": None, "endedAt": iso(NOW - dt.timedelta(hours=3))},
            "#/endedAt",
            "before startedAt",
        ),
        ({"endedAt": future}, "#/endedAt", "a minute in the future"),
        ({"prospectId": DROP}, "#/prospectId", "is required"),
        ({"prospect": {"email": "x@a.example"}}, "#/prospect", "cannot be combined"),
        ({"prospectId": DROP, "prospect": {}}, "#/prospect", "at least one supported field"),
        (
            {"prospectId": DROP, "prospect": {"phoneNumber": "no phone"}},
            "#/prospect/phoneNumber",
            "phone number",
        ),
        ({"prospectId": "not-a-uuid"}, "#/prospectId", "UUID"),
        ({"providerCallSid": "CA123"}, "#/providerCallSid", "32 hexadecimal"),
        ({"recordingSid": REC}, "#/recordingDurationSeconds", "required with recordingSid"),
        ({"recordingDurationSeconds": 10}, "#/recordingSid", "required with"),
        (
            {"recordingSid": REC, "recordingDurationSeconds": -1},
            "#/recordingDurationSeconds",
            "at least 0",
        ),
        ({"meetingBooked": "yes"}, "#/meetingBooked", "boolean"),
        ({"workspaceId": str(uuid.uuid4())}, "#/workspaceId", "not a supported field"),
        ({"id": str(uuid.uuid4())}, "#/id", "not a supported field"),
    ]


@pytest.mark.parametrize(
    "changes,pointer,words", bad_bodies(), ids=[c[1] + " " + c[2] for c in bad_bodies()]
)
async def test_a_bad_call_is_400_with_a_pointer_and_writes_nothing(
    dialer, store, ws_a, body, changes, pointer, words
):
    response = await dialer.post("/v1/calls", body(**changes))
    assert response.code == 400, response
    problem = response.json()
    assert problem["code"] == "invalid_request"
    assert pointer in [e["pointer"] for e in problem["errors"]], problem
    assert words in " ".join(e["detail"] for e in problem["errors"]), problem
    assert await calls_of(store, ws_a.id) == []


REFERENCES = [
    ("userId", "user"),
    ("userId", "deleted_user"),
    ("prospectId", "prospect"),
    ("listId", "list"),
]


@pytest.mark.parametrize("field,kind", REFERENCES, ids=[f"{f} {k}" for f, k in REFERENCES])
async def test_an_unusable_reference_is_422_alike_for_unknown_deleted_and_other_workspace(
    dialer, api_b, store, ws_a, ws_b, body, field, kind
):
    b_values = {
        "user": ws_b.users[0]["id"],
        "deleted_user": ws_b.deleted_user["id"],
        "prospect": (await store.prospects.create(ws_b.id, {"email": "b@b.example"}))["id"],
        "list": (
            await api_b.post("/v1/lists", {"name": "B", "ownerUserId": ws_b.users[0]["id"]})
        ).json()["list"]["id"],
    }
    own_deleted = {"user": ws_a.deleted_user["id"]}
    answers = []
    for value in (b_values[kind], str(uuid.uuid4()), own_deleted.get(kind, str(uuid.uuid4()))):
        response = await dialer.post("/v1/calls", body(**{field: value}))
        assert response.code == 422, response
        problem = response.json()
        assert problem["code"] == "invalid_reference"
        assert problem["errors"] == [
            {"pointer": f"#/{field}", "detail": problem["errors"][0]["detail"]}
        ]
        answers.append({k: v for k, v in problem.items() if k != "requestId"})
    assert answers[0] == answers[1] == answers[2]
    assert await calls_of(store, ws_a.id) == []


# --- providerCallSid -----------------------------------------------------------------------------


async def test_the_same_sid_and_content_is_200_with_the_call_and_other_content_409(
    dialer, store, ws_a, body
):
    sent = body(providerCallSid=SID, notes="first")
    first = await dialer.post("/v1/calls", sent)
    assert first.code == 201
    call = first.json()["call"]
    again = await dialer.post("/v1/calls", {**sent, "providerCallSid": "CA" + SID[2:].upper()})
    assert again.code == 200 and "Location" not in again.headers
    assert again.json() == {"call": call}
    stored = await calls_of(store, ws_a.id)
    other = await dialer.post("/v1/calls", {**sent, "notes": "second"})
    assert other.code == 409, other
    problem = other.json()
    assert problem["code"] == "call_exists" and problem["callId"] == call["id"]
    assert problem["errors"][0]["pointer"] == "#/providerCallSid"
    assert SID.lower() not in other.body.decode().lower()
    assert await calls_of(store, ws_a.id) == stored  # nothing changed
    # A change later does not change what the first post was: its retry is still the call.
    patched = await dialer.patch(f"/v1/calls/{call['id']}", {"notes": "edited"})
    assert patched.code == 200
    retry = await dialer.post("/v1/calls", sent)
    assert retry.code == 200 and retry.json()["call"]["notes"] == "edited"


async def test_one_sid_in_two_workspaces_is_two_calls(dialer, dialer_b, store, ws_b, body):
    prospect_b = await store.prospects.create(ws_b.id, {"email": "b@b.example"})
    mine = await dialer.post("/v1/calls", body(providerCallSid=SID))
    theirs = await dialer_b.post(
        "/v1/calls",
        body(providerCallSid=SID, userId=ws_b.users[0]["id"], prospectId=prospect_b["id"]),
    )
    assert mine.code == theirs.code == 201
    assert mine.json()["call"]["id"] != theirs.json()["call"]["id"]


async def test_twenty_clients_posting_the_same_call_leave_one_call(
    origin, dialer, store, ws_a, body
):
    sent = body(providerCallSid=SID)
    clients = [Client(origin, dialer.key, connections=1) for _ in range(20)]
    responses = await asyncio.gather(*(c.post("/v1/calls", sent) for c in clients))
    codes = sorted(r.code for r in responses)
    assert codes == [200] * 19 + [201], codes
    assert len({r.json()["call"]["id"] for r in responses}) == 1
    assert len(await calls_of(store, ws_a.id)) == 1
    assert (await dialer.get("/v1/calls")).json()["total"] == 1
    entries = [a for a in await store.documents("activities") if a["workspaceId"] == ws_a.id]
    assert len(entries) == 1


# --- a prospect by contact -----------------------------------------------------------------------


async def test_a_contact_becomes_a_prospect_by_the_uploads_rules(
    dialer, store, ws_a, body, prospect
):
    created = await dialer.post(
        "/v1/calls",
        body(prospectId=DROP, prospect={"firstName": "New", "email": "New@B.example"}),
    )
    assert created.code == 201, created
    match = created.json()["prospectMatch"]
    assert match["outcome"] == "created" and "reason" not in match
    assert created.json()["call"]["prospectId"] == match["prospectId"]
    found = (await dialer.get("/v1/prospects?email=new@b.example")).json()["prospects"]
    assert [(p["id"], p["firstName"], p["listIds"], p["ownerUserId"]) for p in found] == [
        (match["prospectId"], "New", [], ws_a.users[0]["id"])
    ]
    again = await dialer.post(
        "/v1/calls", body(prospectId=DROP, prospect={"email": "new@b.example", "jobTitle": "CTO"})
    )
    assert again.json()["prospectMatch"] == {"prospectId": match["prospectId"], "outcome": "reused"}
    filled = (await dialer.get("/v1/prospects?email=new@b.example")).json()["prospects"][0]
    assert filled["jobTitle"] == "CTO"  # a blank filled, as an upload fills it
    by_phone = await dialer.post(
        "/v1/calls", body(prospectId=DROP, prospect={"phoneNumber": "415-555-0111"})
    )
    assert by_phone.json()["prospectMatch"] == {"prospectId": prospect["id"], "outcome": "reused"}
    await store.prospects.create(
        ws_a.id, {"email": "lin@a.example", "linkedinUrl": "https://linkedin.com/in/lin"}
    )
    conflict = await dialer.post(
        "/v1/calls",
        body(
            prospectId=DROP,
            prospect={"email": "lin@a.example", "linkedinUrl": "https://linkedin.com/in/other"},
        ),
    )
    assert conflict.json()["prospectMatch"]["reason"] == "linkedin_conflict"
    assert len([p for p in await store.documents("prospects") if p["workspaceId"] == ws_a.id]) == 4


# --- batches -------------------------------------------------------------------------------------


async def test_a_batch_records_every_call_in_order(dialer, store, ws_a, body):
    calls = [body(providerCallSid=sid(i), notes=f"n{i}") for i in range(5)]
    calls.append(body(providerCallSid=sid(2), notes="n2"))  # the same SID again in the batch
    calls.append(body(prospectId=DROP, prospect={"email": "batch@a.example"}))
    response = await dialer.post("/v1/calls/batch", {"calls": calls})
    assert response.code == 200, response
    results = response.json()["results"]
    assert [(r["index"], r["outcome"]) for r in results] == [
        (0, "created"),
        (1, "created"),
        (2, "created"),
        (3, "created"),
        (4, "created"),
        (5, "existing"),
        (6, "created"),
    ]
    assert results[5]["callId"] == results[2]["callId"]
    assert results[6]["prospectMatch"]["outcome"] == "created"
    assert len(await calls_of(store, ws_a.id)) == 6
    again = await dialer.post("/v1/calls/batch", {"calls": calls[:5]})
    assert [r["outcome"] for r in again.json()["results"]] == ["existing"] * 5
    assert [r["callId"] for r in again.json()["results"]] == [r["callId"] for r in results[:5]]


@pytest.mark.parametrize(
    "bad,status,pointer",
    [
        ({"endedAt": iso(NOW + dt.timedelta(hours=1))}, 400, "#/calls/7/endedAt"),
        ({"userId": str(uuid.uuid4())}, 422, "#/calls/7/userId"),
        ({"listId": str(uuid.uuid4())}, 422, "#/calls/7/listId"),
        ({"providerCallSid": sid(0), "notes": "other"}, 409, "#/calls/7/providerCallSid"),
    ],
)
async def test_one_bad_call_rejects_the_whole_batch_with_its_pointer(
    dialer, store, ws_a, body, bad, status, pointer
):
    calls = [body(providerCallSid=sid(i)) for i in range(10)]
    calls.append(body(prospectId=DROP, prospect={"email": "never@a.example"}))
    calls[7] = body(**bad)
    response = await dialer.post("/v1/calls/batch", {"calls": calls})
    assert response.code == status, response
    assert response.json()["errors"][0]["pointer"] == pointer
    assert await calls_of(store, ws_a.id) == []
    assert not [
        p for p in await store.documents("prospects") if p.get("email") == "never@a.example"
    ]


async def test_a_batch_takes_1_to_100_calls(dialer, body):
    for calls, pointer in (([], "#/calls"), ([body()] * 101, "#/calls")):
        response = await dialer.post("/v1/calls/batch", {"calls": calls})
        assert response.code == 400 and response.json()["errors"][0]["pointer"] == pointer


# --- changes -------------------------------------------------------------------------------------


async def test_a_change_moves_updated_at_the_timeline_and_the_sync_order(
    dialer, store, clock, ws_a, body
):
    call = (await dialer.post("/v1/calls", body())).json()["call"]
    response = await dialer.patch(
        f"/v1/calls/{call['id']}", {"disposition": "voicemail", "notes": "Left a message"}
    )
    assert response.code == 200, response
    changed = response.json()["call"]
    assert changed["updatedAt"] >= call["updatedAt"]
    assert {k: v for k, v in changed.items() if changed[k] != call[k]}.keys() <= {
        "disposition",
        "notes",
        "updatedAt",
    }
    assert (changed["disposition"], changed["notes"]) == ("voicemail", "Left a message")
    assert (await dialer.get(f"/v1/calls/{call['id']}")).json()["call"] == changed
    entry = (await timeline(dialer, call["prospectId"]))[0]
    assert entry["summary"] == "Outbound call: voicemail (4m 00s)"
    assert entry["details"]["disposition"] == "voicemail"
    since = (await dialer.get(f"/v1/calls?updatedSince={changed['updatedAt']}")).json()
    assert [c["id"] for c in since["calls"]] == [call["id"]]
    # The same change again, a second later, changes nothing, not even updatedAt.
    clock.advance(1)
    same = await dialer.patch(f"/v1/calls/{call['id']}", {"disposition": "voicemail"})
    assert same.json()["call"] == changed


async def test_a_recording_attached_later_is_streamed_and_never_shown(dialer, store, ws_a, body):
    call = (await dialer.post("/v1/calls", body())).json()["call"]
    assert not call["hasRecording"]
    response = await dialer.patch(
        f"/v1/calls/{call['id']}",
        {"recordingSid": "RE" + REC[2:].upper(), "recordingDurationSeconds": 230},
    )
    assert response.code == 200, response
    changed = response.json()["call"]
    assert (changed["hasRecording"], changed["recordingDurationSeconds"]) == (True, 230)
    assert REC.lower() not in response.body.decode().lower()
    assert await store.calls.recording_ref(ws_a.id, call["id"]) == REC


@pytest.mark.parametrize(
    "change,pointer",
    [
        ({}, "#"),
        ({"recordingSid": REC}, "#/recordingDurationSeconds"),
        ({"recordingDurationSeconds": 3}, "#/recordingSid"),
        ({"disposition": "lost"}, "#/disposition"),
        ({"startedAt": iso(NOW)}, "#/startedAt"),
        ({"meetingBooked": None}, "#/meetingBooked"),
    ],
)
async def test_a_bad_change_is_400_and_changes_nothing(dialer, body, change, pointer):
    call = (await dialer.post("/v1/calls", body())).json()["call"]
    response = await dialer.patch(f"/v1/calls/{call['id']}", change)
    assert response.code == 400, response
    assert response.json()["errors"][0]["pointer"] == pointer
    assert (await dialer.get(f"/v1/calls/{call['id']}")).json()["call"] == call


async def test_another_workspaces_call_is_404_like_an_unknown_one(dialer, dialer_b, body):
    call = (await dialer.post("/v1/calls", body())).json()["call"]
    answers = []
    for call_id in (call["id"], str(uuid.uuid4())):
        for method, change in (("GET", None), ("PATCH", {"notes": "x"})):
            kwargs = {"json_body": change} if change else {}
            response = await dialer_b.fetch(f"/v1/calls/{call_id}", method, **kwargs)
            assert response.code == 404
            answers.append(re.sub(r'"requestId":"[^"]*"', "", response.body.decode()))
    assert answers[0] == answers[2] and answers[1] == answers[3]
    assert (await dialer.get(f"/v1/calls/{call['id']}")).json()["call"]["notes"] is None


# --- derived figures ----------------------------------------------------------------------------


async def report(dialer, day: dt.date) -> dict:
    response = await dialer.get(f"/v1/reporting/dialer-metrics?from={day}&to={day}")
    assert response.code == 200, response
    return response.json()["totals"]


async def test_metrics_and_totals_are_exact_after_back_dated_inserts_and_changes(
    dialer, store, ws_a, body
):
    day = (NOW - dt.timedelta(days=30)).date()
    start = dt.datetime.combine(day, dt.time(10))

    def at(minutes: int, **changes):
        started = start + dt.timedelta(minutes=minutes)
        return body(
            startedAt=iso(started),
            answeredAt=iso(started + dt.timedelta(seconds=5)),
            endedAt=iso(started + dt.timedelta(seconds=125)),
            **changes,
        )

    one = (await dialer.post("/v1/calls", at(0, meetingBooked=True))).json()["call"]
    batch = await dialer.post(
        "/v1/calls/batch",
        {"calls": [at(10, disposition="voicemail"), at(20), at(30, direction="inbound")]},
    )
    assert batch.code == 200
    figures = await report(dialer, day)
    assert (figures["dials"], figures["connects"], figures["conversations"]) == (3, 2, 2)
    assert (figures["meetingsBooked"], figures["voicemails"], figures["talkTimeSeconds"]) == (
        1,
        1,
        240,
    )
    assert (await report(dialer, NOW.date()))["dials"] == 0
    # Changes move the counts on both backends.
    await dialer.patch(
        f"/v1/calls/{one['id']}", {"disposition": "no_answer", "meetingBooked": False}
    )
    figures = await report(dialer, day)
    assert (figures["dials"], figures["connects"], figures["meetingsBooked"]) == (3, 1, 0)
    assert (figures["voicemails"], figures["talkTimeSeconds"]) == (1, 120)
    voicemail = batch.json()["results"][0]["callId"]
    await dialer.patch(
        f"/v1/calls/{voicemail}", {"disposition": "connected", "meetingBooked": True}
    )
    figures = await report(dialer, day)
    assert (figures["connects"], figures["voicemails"], figures["meetingsBooked"]) == (2, 0, 1)
    assert (figures["talkTimeSeconds"], figures["conversations"]) == (240, 2)
    # Totals and filtered counts agree with the calls themselves.
    listed, total = await walk_pages(dialer, "/v1/calls?pageSize=100", "calls")
    assert total == len(listed) == 4 == len(await calls_of(store, ws_a.id))
    from_day = f"createdFrom={day}&createdTo={day + dt.timedelta(days=1)}&direction=outbound"
    assert (await dialer.get(f"/v1/calls?{from_day}")).json()["total"] == 3


async def test_the_sync_order_shows_a_back_dated_call_after_what_was_synced(dialer, body):
    newer = (await dialer.post("/v1/calls", body())).json()["call"]
    old = NOW - dt.timedelta(days=45)
    back = body(
        startedAt=iso(old),
        answeredAt=DROP,
        endedAt=iso(old + dt.timedelta(seconds=30)),
        disposition="busy",
    )
    older = (await dialer.post("/v1/calls", back)).json()["call"]
    assert older["createdAt"] < newer["createdAt"] and older["updatedAt"] >= newer["updatedAt"]
    # An incremental sync from the newest updatedAt it has seen picks the back-dated call up.
    since = (await dialer.get(f"/v1/calls?updatedSince={newer['updatedAt']}")).json()["calls"]
    assert older["id"] in [c["id"] for c in since]


async def test_an_idempotency_key_replays_the_first_answer(dialer, store, ws_a, body):
    headers = {"Idempotency-Key": "call-1"}
    first = await dialer.post("/v1/calls", body(), headers=headers)
    replay = await dialer.post("/v1/calls", body(), headers=headers)
    assert first.code == replay.code == 201
    assert replay.headers["Idempotent-Replayed"] == "true" and replay.body == first.body
    assert len(await calls_of(store, ws_a.id)) == 1
    unknown_user = body(userId=str(uuid.uuid4()))
    bad = await dialer.post("/v1/calls", unknown_user, headers={"Idempotency-Key": "k2"})
    again = await dialer.post("/v1/calls", unknown_user, headers={"Idempotency-Key": "k2"})
    assert bad.code == again.code == 422 and again.headers["Idempotent-Replayed"] == "true"
    assert json.loads(bad.body)["detail"] == json.loads(again.body)["detail"]


async def test_a_full_batch_records_what_single_posts_would(dialer, store, ws_a, body, prospect):
    """100 calls (on SQLite their rows are made before the write, off the writer's thread):
    SIDs, calls without one (their ids from the Idempotency-Key), a SID twice and a contact."""
    calls = [body(providerCallSid=sid(i), notes=f"n{i}") for i in range(60)]
    calls += [body(notes=f"plain {i}") for i in range(38)]
    calls.append(body(providerCallSid=sid(3), notes="n3"))  # the same call again
    calls.append(body(prospectId=DROP, prospect={"email": "full@a.example"}))
    before = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    headers = {"Idempotency-Key": "full-batch"}
    response = await dialer.post("/v1/calls/batch", {"calls": calls}, headers=headers)
    assert response.code == 200, response
    results = response.json()["results"]
    assert [r["outcome"] for r in results] == ["created"] * 98 + ["existing", "created"]
    assert results[98]["callId"] == results[3]["callId"]
    for index, result in enumerate(results[:98]):
        call = (await dialer.get(f"/v1/calls/{result['callId']}")).json()["call"]
        assert call["notes"] == calls[index]["notes"] and call["prospectId"] == prospect["id"]
        updated = dt.datetime.fromisoformat(call["updatedAt"][:-1])
        assert updated >= before - dt.timedelta(milliseconds=1)  # the write's, not earlier
    assert (await dialer.get("/v1/calls")).json()["total"] == 99
    entries = [a for a in await timeline(dialer, prospect["id"]) if a["type"] == "call"]
    assert {a["callId"] for a in entries} == {r["callId"] for r in results[:98]}
    replay = await dialer.post("/v1/calls/batch", {"calls": calls}, headers=headers)
    assert replay.body == response.body and replay.headers["Idempotent-Replayed"] == "true"
