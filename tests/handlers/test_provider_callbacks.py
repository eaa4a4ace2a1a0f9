"""Calls from the provider, over HTTP on both tiers: status and recording callbacks signed with
the twilio package's own RequestValidator (accepted; one changed byte of URL, parameter or token
refused), the status table and the times, a call recorded exactly as POST /v1/calls records it,
duplicate and out-of-order callbacks, recordings before the final status, calls kept aside and
resolved, their expiry through the sweep, and the callbacks' own rate limit."""

from __future__ import annotations

import datetime as dt
import email.utils
import uuid
from urllib.parse import urlencode

import pytest
from twilio.request_validator import RequestValidator

from server.config import load_config
from server.ratelimit import LocalCounters, RateLimiter, counters_for
from store.clock import utcnow
from store.ingest import sid_call_id
from tests.helpers import Client, test_environ

ACCOUNT = "AC" + "1f" * 16
TOKEN = "4c0ffee4c0ffee4c0ffee4c0ffee4c0f"
PUBLIC = "https://dialer-api.example.test/base"  # as the provider calls it (behind a proxy)
NOW = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
T0 = NOW - dt.timedelta(hours=1)
REC = "RE" + "7a" * 16
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def sid(n: int) -> str:
    return f"CA{n:032x}"


def stamp(at: dt.datetime) -> str:
    """A Timestamp as the provider writes it (RFC 2822)."""
    return email.utils.format_datetime(at.replace(tzinfo=dt.UTC), usegmt=True)


def iso(value: dt.datetime) -> str:
    return value.isoformat(timespec="milliseconds") + "Z"


@pytest.fixture
def config():
    return load_config(
        environ=test_environ(
            shared=True,
            WSAPI_PROVIDER_ACCOUNT_ID=ACCOUNT,
            WSAPI_PROVIDER_AUTH_TOKEN=TOKEN,
            WSAPI_PUBLIC_BASE_URL=PUBLIC,
        )
    )


@pytest.fixture
def callback_limit():
    """None: the app's own limiter (provider_callbacks_per_minute); a number: a limiter of that
    many callbacks a minute on the test's clock."""
    return None


@pytest.fixture
def app_services(clock, config, store, callback_limit):
    """The workspace's limit on the test's clock (its window never ends mid-test)."""
    services = {"rate_limiter": RateLimiter(counters_for(store), 600, clock=clock)}
    if callback_limit is not None:
        services["callback_limiter"] = RateLimiter(
            LocalCounters(), callback_limit, clock=clock, name="provider-callbacks"
        )
    return services


class Provider:
    """Sends callbacks as the provider does: form-encoded, signed by RequestValidator."""

    def __init__(self, origin: str, workspace_id: str):
        self.client = Client(origin, None)
        self.workspace_id = workspace_id

    async def send(
        self,
        kind: str,
        params: dict,
        query: dict | None = None,
        *,
        token: str = TOKEN,
        signed_url: str | None = None,
        sent_params: dict | None = None,
        workspace_id: str | None = None,
        signature: str | None = None,
    ):
        path = f"/v1/provider/callbacks/{workspace_id or self.workspace_id}/{kind}"
        if query:
            path += "?" + urlencode(query)
        params = {"AccountSid": ACCOUNT, **params}
        if signature is None:
            signature = RequestValidator(token).compute_signature(
                signed_url or PUBLIC + path, params
            )
        body = urlencode(sent_params if sent_params is not None else params)
        headers = {**FORM, "X-Twilio-Signature": signature} if signature else FORM
        return await self.client.fetch(path, "POST", body=body, headers=headers)

    async def status(self, call_sid: str, status: str, at: dt.datetime, query=None, **fields):
        params = {
            "CallSid": call_sid,
            "CallStatus": status,
            "Direction": "outbound-api",
            "From": "+12125550142",
            "To": "+14155550111",
            "Timestamp": stamp(at),
            "ApiVersion": "2010-04-01",
            "CallbackSource": "call-progress-events",
            **fields,
        }
        return await self.send("status", params, query)

    async def recording(self, call_sid: str, status: str = "completed", seconds: int = 230):
        params = {
            "CallSid": call_sid,
            "RecordingSid": REC,
            "RecordingStatus": status,
            "RecordingDuration": str(seconds),
            "RecordingChannels": "1",
        }
        return await self.send("recording", params)


@pytest.fixture
def provider(origin, ws_a):
    return Provider(origin, ws_a.id)


async def a_call(provider, call_sid, query, *, final="completed", answered=True, **fields):
    """initiated, ringing, in-progress (when answered), then the final status, 204 each."""
    steps = [("initiated", T0), ("ringing", T0 + dt.timedelta(seconds=2))]
    if answered:
        steps.append(("in-progress", T0 + dt.timedelta(seconds=12)))
    for status, at in steps:
        assert (await provider.status(call_sid, status, at, query)).code == 204
    end = T0 + dt.timedelta(seconds=252)
    response = await provider.status(
        call_sid, final, end, query, CallDuration="240" if answered else "0", **fields
    )
    assert response.code == 204, response
    assert response.body == b""


async def events_of(store, workspace_id: str) -> list[str]:
    return [e["type"] for e in await store.documents("events") if e["workspaceId"] == workspace_id]


# --- signatures ----------------------------------------------------------------------------------


async def test_a_call_signed_by_the_provider_is_recorded_as_post_calls_records_it(
    provider, dialer, dialer_b, store, ws_a, ws_b
):
    user = ws_a.users[0]["id"]
    await a_call(provider, sid(1), {"userId": user})
    call = (await dialer.get(f"/v1/calls/{sid_call_id(ws_a.id, sid(1))}")).json()["call"]
    assert call["disposition"] == "connected" and call["direction"] == "outbound"
    assert call["startedAt"] == iso(T0)  # from `initiated`
    assert call["answeredAt"] == iso(T0 + dt.timedelta(seconds=12))  # from `in-progress`
    assert call["endedAt"] == iso(T0 + dt.timedelta(seconds=252))  # the final Timestamp
    assert call["userId"] == user and call["hasRecording"] is False

    # The same call posted by a dialer to POST /v1/calls, in workspace B.
    posted = await dialer_b.post(
        "/v1/calls",
        {
            "userId": ws_b.users[0]["id"],
            "prospect": {"phoneNumber": "+14155550111"},
            "direction": "outbound",
            "disposition": "connected",
            "fromNumber": "+12125550142",
            "toNumber": "+14155550111",
            "startedAt": iso(T0),
            "answeredAt": iso(T0 + dt.timedelta(seconds=12)),
            "endedAt": iso(T0 + dt.timedelta(seconds=252)),
            "providerCallSid": sid(1),
        },
    )
    assert posted.code == 201, posted
    twin = posted.json()["call"]
    differ = {"id", "userId", "prospectId", "updatedAt"}
    assert {k: v for k, v in call.items() if k not in differ} == {
        k: v for k, v in twin.items() if k not in differ
    }
    # The contact was matched or created by the upload's rules: the callee (To) is a prospect.
    prospects = (await dialer.get("/v1/prospects?phoneNumber=%2B14155550111")).json()
    assert [p["id"] for p in prospects["prospects"]] == [call["prospectId"]]
    timeline = (await dialer.get(f"/v1/prospect-activities?prospectId={call['prospectId']}")).json()
    twin_timeline = (
        await dialer_b.get(f"/v1/prospect-activities?prospectId={twin['prospectId']}")
    ).json()
    assert [(a["type"], a["summary"]) for a in timeline["activities"]] == [
        (a["type"], a["summary"]) for a in twin_timeline["activities"]
    ]
    assert (await dialer.get("/v1/calls")).json()["total"] == 1
    assert sorted(await events_of(store, ws_a.id)) == sorted(await events_of(store, ws_b.id))
    day = T0.date().isoformat()
    metrics = f"/v1/reporting/dialer-metrics?from={day}&to={day}&timezone=UTC"
    mine, theirs = (await dialer.get(metrics)).json(), (await dialer_b.get(metrics)).json()
    assert mine["totals"] == theirs["totals"] and mine["totals"]["dials"] == 1
    assert mine["byDay"] == theirs["byDay"]


async def test_requests_the_validator_signs_are_accepted_and_one_changed_byte_is_refused(
    provider, store, ws_a
):
    user = ws_a.users[0]["id"]
    params = {
        "CallSid": sid(2),
        "CallStatus": "busy",
        "Direction": "outbound-api",
        "From": "+12125550142",
        "To": "+14155550111",
        "Timestamp": stamp(T0),
    }
    path = f"/v1/provider/callbacks/{ws_a.id}/status?userId={user}"
    assert RequestValidator(TOKEN).validate(
        PUBLIC + path,
        {"AccountSid": ACCOUNT, **params},
        RequestValidator(TOKEN).compute_signature(PUBLIC + path, {"AccountSid": ACCOUNT, **params}),
    )
    changed_url = PUBLIC.replace("dialer-api", "dialer-apj") + path
    changed_query = PUBLIC + path[:-1] + ("0" if path[-1] != "0" else "1")
    refusals = [
        await provider.send("status", params, {"userId": user}, signed_url=changed_url),
        await provider.send("status", params, {"userId": user}, signed_url=changed_query),
        await provider.send(
            "status",
            params,
            {"userId": user},
            sent_params={"AccountSid": ACCOUNT, **params, "CallStatus": "busz"},
        ),
        await provider.send("status", params, {"userId": user}, token=TOKEN[:-1] + "e"),
        await provider.send("status", params, {"userId": user}, signature=""),  # none
        await provider.send("status", params, {"userId": user}, signature="bm9wZQ=="),
    ]
    for response in refusals:
        assert response.code == 403, response
        problem = response.json()
        assert problem["code"] == "invalid_signature"
        assert set(problem) == {"type", "title", "status", "code", "detail", "requestId"}
    assert len({r.json()["detail"] for r in refusals}) == 1  # one answer, whatever was wrong
    assert await store.documents("provider_calls") == []
    assert [c for c in await store.documents("calls") if c["workspaceId"] == ws_a.id] == []
    accepted = await provider.send("status", params, {"userId": user})
    assert accepted.code == 204
    assert len(await store.documents("calls")) == 1


async def test_another_account_and_an_unknown_workspace_are_refused_like_a_bad_signature(
    provider, store, ws_a
):
    params = {"CallSid": sid(3), "CallStatus": "initiated", "Timestamp": stamp(T0)}
    bad = await provider.send("status", params, signature="bm9wZQ==")
    other = {"AccountSid": "AC" + "2e" * 16, **params}
    path = f"/v1/provider/callbacks/{ws_a.id}/status"
    signed = RequestValidator(TOKEN).compute_signature(PUBLIC + path, other)
    account = await provider.client.fetch(
        path, "POST", body=urlencode(other), headers={**FORM, "X-Twilio-Signature": signed}
    )
    nowhere = await provider.send("status", params, workspace_id=str(uuid.uuid4()))
    for response in (account, nowhere):
        assert response.code == 403, response
        assert response.json()["code"] == "invalid_signature"
        assert response.json()["detail"] == bad.json()["detail"]
    assert await store.documents("provider_calls") == []


async def test_a_signed_form_that_breaks_its_schema_is_400_and_a_json_body_415(provider):
    broken = await provider.send("status", {"CallSid": "CA123", "CallStatus": "completed"})
    assert broken.code == 400, broken
    assert broken.json()["errors"][0]["pointer"] == "#/CallSid"
    missing = await provider.send("recording", {"CallSid": sid(4), "RecordingStatus": "completed"})
    assert missing.code == 400
    as_json = await provider.client.fetch(
        f"/v1/provider/callbacks/{provider.workspace_id}/status",
        "POST",
        body="{}",
        headers={"Content-Type": "application/json"},
    )
    assert as_json.code == 415
    crowded = await provider.client.fetch(
        f"/v1/provider/callbacks/{provider.workspace_id}/status",
        "POST",
        body="&".join(f"f{n}=x" for n in range(1001)),
        headers=FORM,
    )
    assert crowded.code == 400


# --- statuses and times ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("final", "answered", "fields", "disposition"),
    [
        ("completed", True, {"AnsweredBy": "human"}, "connected"),
        ("completed", True, {"AnsweredBy": "machine_end_beep"}, "voicemail"),
        ("no-answer", False, {}, "no_answer"),
        ("canceled", False, {}, "no_answer"),
        ("busy", False, {}, "busy"),
        ("failed", False, {}, "failed"),
    ],
)
async def test_each_final_status_has_its_disposition(
    provider, dialer, ws_a, final, answered, fields, disposition
):
    await a_call(
        provider, sid(5), {"userId": ws_a.users[1]["id"]}, final=final, answered=answered, **fields
    )
    call = (await dialer.get(f"/v1/calls/{sid_call_id(ws_a.id, sid(5))}")).json()["call"]
    assert call["disposition"] == disposition
    assert call["answeredAt"] == (iso(T0 + dt.timedelta(seconds=12)) if answered else None)
    assert call["durationSeconds"] == (240 if answered else 0)


async def test_without_progress_callbacks_times_come_from_timestamp_and_duration(
    provider, dialer, ws_a
):
    end = T0 + dt.timedelta(minutes=5)
    response = await provider.status(
        sid(6), "completed", end, {"userId": ws_a.users[0]["id"]}, CallDuration="95"
    )
    assert response.code == 204
    call = (await dialer.get(f"/v1/calls/{sid_call_id(ws_a.id, sid(6))}")).json()["call"]
    assert call["startedAt"] == iso(end - dt.timedelta(seconds=95))
    assert call["answeredAt"] == iso(end - dt.timedelta(seconds=95))
    assert call["endedAt"] == iso(end)
    assert call["durationSeconds"] == 95


async def test_an_inbound_call_matches_the_caller_and_context_ids_are_used(
    provider, dialer, store, ws_a, new_list
):
    listing = await new_list("Inbound")
    prospect = await store.prospects.create(ws_a.id, {"phoneNumber": "+13105550177"})
    query = {"userId": ws_a.users[0]["id"], "listId": listing["id"]}
    await provider.status(
        sid(7), "completed", T0, query, Direction="inbound", From="+13105550177", To="+12125550142"
    )
    call = (await dialer.get(f"/v1/calls/{sid_call_id(ws_a.id, sid(7))}")).json()["call"]
    assert call["direction"] == "inbound"
    assert call["prospectId"] == prospect["id"] and call["listId"] == listing["id"]
    other = await store.prospects.create(ws_a.id, {"email": "named@a.example"})
    await provider.status(sid(8), "busy", T0, {**query, "prospectId": other["id"]})
    named = (await dialer.get(f"/v1/calls/{sid_call_id(ws_a.id, sid(8))}")).json()["call"]
    assert named["prospectId"] == other["id"]


# --- duplicates, order, recordings ---------------------------------------------------------


async def test_duplicate_and_late_callbacks_change_nothing(provider, dialer, store, ws_a):
    query = {"userId": ws_a.users[0]["id"]}
    await a_call(provider, sid(9), query)
    call_id = sid_call_id(ws_a.id, sid(9))
    first = (await dialer.get(f"/v1/calls/{call_id}")).json()["call"]
    events = await events_of(store, ws_a.id)
    end = T0 + dt.timedelta(seconds=252)
    for _ in range(2):  # the provider retries the final status, then a progress arrives late
        assert (
            await provider.status(sid(9), "completed", end, query, CallDuration="240")
        ).code == 204
    assert (
        await provider.status(sid(9), "initiated", T0 - dt.timedelta(minutes=1), query)
    ).code == 204
    assert (await provider.status(sid(9), "in-progress", T0, query)).code == 204
    assert (await dialer.get(f"/v1/calls/{call_id}")).json()["call"] == first
    assert (await dialer.get("/v1/calls")).json()["total"] == 1
    assert await events_of(store, ws_a.id) == events


async def test_a_recording_before_the_final_status_is_held_then_attached(
    provider, dialer, store, ws_a
):
    query = {"userId": ws_a.users[0]["id"]}
    assert (await provider.status(sid(10), "initiated", T0, query)).code == 204
    assert (await provider.recording(sid(10))).code == 204  # before the call is recorded
    assert (await dialer.get("/v1/calls")).json()["total"] == 0
    assert (
        await provider.status(
            sid(10), "completed", T0 + dt.timedelta(minutes=4), query, CallDuration="230"
        )
    ).code == 204
    call_id = sid_call_id(ws_a.id, sid(10))
    call = (await dialer.get(f"/v1/calls/{call_id}")).json()["call"]
    assert call["hasRecording"] is True and call["recordingDurationSeconds"] == 230
    assert await store.calls.recording_ref(ws_a.id, call_id) == REC
    assert REC.lower() not in str(call).lower()
    events = await events_of(store, ws_a.id)
    assert events.count("call.created") == 1 and events.count("call.updated") == 1
    assert (await provider.recording(sid(10))).code == 204  # sent again: nothing changes
    assert await events_of(store, ws_a.id) == events


async def test_a_recording_after_the_call_is_attached_as_patch_would(provider, dialer, store, ws_a):
    await a_call(provider, sid(11), {"userId": ws_a.users[0]["id"]})
    call_id = sid_call_id(ws_a.id, sid(11))
    before = (await dialer.get(f"/v1/calls/{call_id}")).json()["call"]
    for status in ("absent", "failed"):
        assert (await provider.recording(sid(11), status)).code == 204
    assert (await dialer.get(f"/v1/calls/{call_id}")).json()["call"] == before
    assert (await provider.recording(sid(11))).code == 204
    after = (await dialer.get(f"/v1/calls/{call_id}")).json()["call"]
    assert after["hasRecording"] is True and after["updatedAt"] >= before["updatedAt"]
    assert (await events_of(store, ws_a.id)).count("call.updated") == 1


# --- calls kept aside --------------------------------------------------------------------------


async def test_calls_without_a_usable_user_are_kept_aside_and_resolved(
    provider, dialer, store, ws_a
):
    await a_call(provider, sid(12), {})  # no userId
    await a_call(provider, sid(13), {"userId": ws_a.deleted_user["id"]})
    await a_call(provider, sid(14), {"userId": str(uuid.uuid4())})
    assert (await provider.recording(sid(12))).code == 204
    assert (await dialer.get("/v1/calls")).json()["total"] == 0
    listed = (await dialer.get("/v1/provider/pending-calls")).json()["pendingCalls"]
    assert {p["callSid"]: p["reason"] for p in listed} == {
        sid(12): "missing_user",
        sid(13): "unknown_user",
        sid(14): "unknown_user",
    }
    kept = next(p for p in listed if p["callSid"] == sid(12))
    assert kept["disposition"] == "connected" and kept["hasRecording"] is True
    assert kept["startedAt"] == iso(T0) and kept["toNumber"] == "+14155550111"

    path = f"/v1/provider/pending-calls/{sid(12)}/resolve"
    refused = await dialer.post(path, {"userId": ws_a.deleted_user["id"]})
    assert refused.code == 422 and refused.json()["code"] == "invalid_reference"
    resolved = await dialer.post(path, {"userId": ws_a.users[2]["id"]})
    assert resolved.code == 201, resolved
    call = resolved.json()["call"]
    assert resolved.headers["Location"] == f"/v1/calls/{call['id']}"
    assert call["userId"] == ws_a.users[2]["id"] and call["hasRecording"] is True
    assert call["startedAt"] == iso(T0) and call["disposition"] == "connected"
    again = await dialer.post(path, {"userId": ws_a.users[2]["id"]})
    assert again.code == 200 and again.json()["call"]["id"] == call["id"]
    remaining = (await dialer.get("/v1/provider/pending-calls")).json()["pendingCalls"]
    assert sorted(p["callSid"] for p in remaining) == [sid(13), sid(14)]
    unknown = await dialer.post(
        f"/v1/provider/pending-calls/{sid(99)}/resolve", {"userId": call["userId"]}
    )
    assert unknown.code == 404
    # A retried final status with a user now records the call; it is no longer pending.
    end = T0 + dt.timedelta(seconds=252)
    await provider.status(
        sid(13), "completed", end, {"userId": ws_a.users[0]["id"]}, CallDuration="240"
    )
    remaining = (await dialer.get("/v1/provider/pending-calls")).json()["pendingCalls"]
    assert [p["callSid"] for p in remaining] == [sid(14)]
    assert (await dialer.get("/v1/calls")).json()["total"] == 2


async def test_pending_callbacks_expire_through_the_sweep(provider, dialer, store, ws_a):
    await a_call(provider, sid(15), {})
    assert len((await dialer.get("/v1/provider/pending-calls")).json()["pendingCalls"]) == 1
    await store.sweep_expired(utcnow() + dt.timedelta(days=6, hours=23))
    assert len((await dialer.get("/v1/provider/pending-calls")).json()["pendingCalls"]) == 1
    assert len(await store.documents("provider_calls")) == 1
    await store.sweep_expired(utcnow() + dt.timedelta(days=7, minutes=1))
    assert await store.documents("provider_calls") == []
    assert (await dialer.get("/v1/provider/pending-calls")).json()["pendingCalls"] == []
    resolve = await dialer.post(
        f"/v1/provider/pending-calls/{sid(15)}/resolve", {"userId": ws_a.users[0]["id"]}
    )
    assert resolve.code == 404


# --- rate limits -------------------------------------------------------------------------------


async def test_callbacks_do_not_count_against_the_workspace_limit(provider, api, ws_a, clock):
    def left(response) -> int:
        return int(response.headers["RateLimit"].split("r=")[1].split(";")[0])

    clock.freeze()  # one window throughout (a workspace's window may end at any second)
    before = left(await api.get("/v1/users"))
    for n in range(8):
        response = await provider.status(sid(100 + n), "initiated", T0)
        assert response.code == 204, response
    assert left(await api.get("/v1/users")) == before - 1


@pytest.mark.parametrize("callback_limit", [3])
async def test_callbacks_have_their_own_limit(provider, ws_a, clock, callback_limit):
    for n in range(3):
        assert (await provider.status(sid(200 + n), "initiated", T0)).code == 204
    over = await provider.status(sid(203), "initiated", T0)
    assert over.code == 429 and int(over.headers["Retry-After"]) >= 1
    assert over.json()["code"] == "rate_limited"
    clock.advance(61)
    assert (await provider.status(sid(203), "initiated", T0)).code == 204


# --- the database failing mid-callback -----------------------------------------------------------


@pytest.fixture
def faults(store, auth, monkeypatch):
    from tests.handlers.test_safe_writes import MongoFaults, SQLiteFaults

    monkeypatch.setattr(auth.usage, "note", lambda *args: None)  # requests' own steps only
    return SQLiteFaults(store) if store.backend == "sqlite" else MongoFaults(store, monkeypatch)


async def test_a_final_status_failing_at_each_step_is_recorded_once_by_the_providers_retry(
    provider, dialer, store, ws_a, faults
):
    """A recording held, then the call's final status with the database failing at each of
    its steps in turn: 503 (the provider retries), and the retry leaves one call, with its
    recording, one timeline entry and one call.created event."""
    query = {"userId": ws_a.users[0]["id"]}
    failures, step = 0, 0
    while True:
        step += 1
        call_sid = sid(500 + step)
        assert (await provider.recording(call_sid)).code == 204
        end = T0 + dt.timedelta(minutes=4)
        faults.arm(step)
        response = await provider.status(call_sid, "completed", end, query, CallDuration="200")
        faults.disarm()
        if response.code == 204:
            break  # the fault came after the last step
        assert response.code == 503 and response.headers["Retry-After"], response
        failures += 1
        retry = await provider.status(call_sid, "completed", end, query, CallDuration="200")
        assert retry.code == 204, (step, retry)
        call_id = sid_call_id(ws_a.id, call_sid)
        call = (await dialer.get(f"/v1/calls/{call_id}")).json()["call"]
        assert call["hasRecording"] is True and call["durationSeconds"] == 200, step
        calls = [c for c in await store.documents("calls") if c["_id"] == call_id]
        entries = [a for a in await store.documents("activities") if a.get("callId") == call_id]
        created = [
            e
            for e in await store.documents("events")
            if e["type"] == "call.created" and e["resourceId"] == call_id
        ]
        assert len(calls) == len(entries) == len(created) == 1, (step, entries, created)
        assert step < 100
    assert failures >= 3  # state read, record, settle, the recording's change
    total = (await dialer.get("/v1/calls")).json()["total"]
    assert total == step == len([c for c in await store.documents("calls")])
