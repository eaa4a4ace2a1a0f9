"""POST /v1/prospect-activities: the dialer logs notes, emails, meetings and status changes on a
prospect's timeline, with the shapes the timeline shows; derived types are refused."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

NOW = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


def iso(value: dt.datetime) -> str:
    return value.isoformat(timespec="milliseconds") + "Z"


@pytest.fixture
def prospect(io_loop, store, ws_a):
    return io_loop.run_sync(lambda: store.prospects.create(ws_a.id, {"email": "pat@a.example"}))


KINDS = [
    ("note", {"text": "  Asked for pricing.\nSend the deck Monday."}, "Asked for pricing."),
    ("email", {"direction": "outbound", "subject": "Pricing"}, "Email sent: Pricing"),
    ("email", {"direction": "inbound", "subject": "Re: Pricing"}, "Email received: Re: Pricing"),
    ("meeting_booked", {"scheduledFor": "2026-12-03T15:00:00+01:00"}, "Meeting booked for Dec 03"),
    ("meeting_booked", {"scheduledFor": None}, "Meeting booked"),
    ("status_change", {"from": None, "to": "contacted"}, "Status: none → contacted"),
]


@pytest.mark.parametrize("kind,details,summary", KINDS, ids=[f"{k} {s}" for k, _, s in KINDS])
async def test_each_type_is_logged_as_the_timeline_shows_it(
    dialer, ws_a, prospect, kind, details, summary
):
    body = {
        "prospectId": prospect["id"].upper(),
        "type": kind,
        "occurredAt": iso(NOW - dt.timedelta(hours=1)),
        "userId": ws_a.users[1]["id"],
        "details": details,
    }
    response = await dialer.post("/v1/prospect-activities", body)
    assert response.code == 201, response
    activity = response.json()["activity"]
    assert response.headers["Location"] == f"/v1/prospect-activities?prospectId={prospect['id']}"
    expected_details = dict(details)
    if expected_details.get("scheduledFor"):
        expected_details["scheduledFor"] = "2026-12-03T14:00:00.000Z"
    assert activity == {
        "id": activity["id"],
        "type": kind,
        "occurredAt": iso(NOW - dt.timedelta(hours=1)),
        "userId": ws_a.users[1]["id"],
        "callId": None,
        "summary": summary,
        "details": expected_details,
    }
    shown = (await dialer.get(f"/v1/prospect-activities?prospectId={prospect['id']}")).json()
    assert shown["activities"] == [activity]


async def test_a_given_summary_is_kept_and_a_meeting_names_its_call(dialer, store, ws_a, prospect):
    call = (
        await dialer.post(
            "/v1/calls",
            {
                "userId": ws_a.users[0]["id"],
                "prospectId": prospect["id"],
                "direction": "outbound",
                "disposition": "connected",
                "fromNumber": "+12125550142",
                "toNumber": "+14155550111",
                "startedAt": iso(NOW - dt.timedelta(minutes=10)),
                "answeredAt": iso(NOW - dt.timedelta(minutes=9)),
                "endedAt": iso(NOW - dt.timedelta(minutes=5)),
                "meetingBooked": True,
            },
        )
    ).json()["call"]
    response = await dialer.post(
        "/v1/prospect-activities",
        {
            "prospectId": prospect["id"],
            "type": "meeting_booked",
            "occurredAt": iso(NOW - dt.timedelta(minutes=5)),
            "summary": "Demo with the CTO",
            "callId": call["id"],
            "details": {"scheduledFor": None},
        },
    )
    assert response.code == 201, response
    activity = response.json()["activity"]
    assert (activity["summary"], activity["callId"], activity["userId"]) == (
        "Demo with the CTO",
        call["id"],
        None,
    )


BAD = [
    ({"type": "call"}, "#/type", "POST /calls"),
    ({"type": "list_added"}, "#/type", "contact uploads"),
    ({"type": "tweet"}, "#/type", "must be one of"),
    ({"details": {}}, "#/details/text", "is required"),
    ({"details": {"text": "   "}}, "#/details/text", "must not be blank"),
    ({"details": {"text": "x", "subject": "y"}}, "#/details/subject", "not a supported field"),
    ({"occurredAt": iso(NOW + dt.timedelta(days=2))}, "#/occurredAt", "in the future"),
    ({"occurredAt": "2026-13-01T00:00:00Z"}, "#/occurredAt", "real date"),
    ({"callId": str(uuid.uuid4())}, "#/callId", "not a supported field"),
    ({"prospectId": "abc"}, "#/prospectId", "UUID"),
]


@pytest.mark.parametrize("change,pointer,words", BAD, ids=[f"{p} {w}" for _, p, w in BAD])
async def test_a_bad_activity_is_400_with_a_pointer_and_writes_nothing(
    dialer, store, ws_a, prospect, change, pointer, words
):
    body = {
        "prospectId": prospect["id"],
        "type": "note",
        "occurredAt": iso(NOW),
        "details": {"text": "hello"},
        **change,
    }
    response = await dialer.post("/v1/prospect-activities", body)
    assert response.code == 400, response
    errors = response.json()["errors"]
    assert pointer in [e["pointer"] for e in errors], errors
    assert words in " ".join(e["detail"] for e in errors)
    assert [a for a in await store.documents("activities") if a["workspaceId"] == ws_a.id] == []


@pytest.mark.parametrize("field", ["prospectId", "userId", "callId"])
async def test_an_unusable_reference_is_422_alike_for_every_kind_of_unknown(
    dialer, store, ws_a, ws_b, prospect, field
):
    other = {
        "prospectId": (await store.prospects.create(ws_b.id, {"email": "b@b.example"}))["id"],
        "userId": ws_b.users[0]["id"],
        "callId": str(uuid.uuid4()),
    }
    answers = []
    for value in (other[field], str(uuid.uuid4()), ws_a.deleted_user["id"]):
        if field != "userId" and value == ws_a.deleted_user["id"]:
            continue
        body = {
            "prospectId": prospect["id"],
            "type": "meeting_booked",
            "occurredAt": iso(NOW),
            "details": {"scheduledFor": None},
            field: value,
        }
        response = await dialer.post("/v1/prospect-activities", body)
        assert response.code == 422, response
        problem = response.json()
        assert problem["errors"][0]["pointer"] == f"#/{field}"
        answers.append({k: v for k, v in problem.items() if k != "requestId"})
    assert all(answer == answers[0] for answer in answers)
    assert [a for a in await store.documents("activities") if a["workspaceId"] == ws_a.id] == []
