"""Calls to numbers on the do-not-call list, over HTTP on both tiers: they are recorded, each
call's `toNumberSuppressed` is what the list said when it was recorded (and stays so after the
entry is removed or the call is changed), and the dialer metrics' `callsToSuppressedNumbers`
counts them exactly, from the per-quarter counts and from the calls themselves; the calls
import marks and counts them the same way."""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid

import pytest

from server import importer
from server.importer import Summary, import_file
from tests.helpers import Client, walk_pages

NOW = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
LISTED = "+14155550111"
OTHER = "+14155550122"


def iso(value: dt.datetime) -> str:
    return value.isoformat(timespec="milliseconds") + "Z"


@pytest.fixture
def prospect(io_loop, store, ws_a):
    return io_loop.run_sync(
        lambda: store.prospects.create(ws_a.id, {"firstName": "Pat", "email": "pat@a.example"})
    )


def call_body(ws, prospect: dict, to_number: str, started: dt.datetime, **more) -> dict:
    body = {
        "userId": ws.users[0]["id"],
        "prospectId": prospect["id"],
        "direction": "outbound",
        "disposition": "connected",
        "fromNumber": "+12125550142",
        "toNumber": to_number,
        "startedAt": iso(started),
        "answeredAt": iso(started + dt.timedelta(seconds=5)),
        "endedAt": iso(started + dt.timedelta(seconds=95)),
    }
    body.update(more)
    return body


async def suppress(api: Client, phone: str) -> str:
    response = await api.post("/v1/do-not-call", {"entries": [{"phoneNumber": phone}]})
    assert response.code == 200, response
    return response.json()["results"][0]["entry"]["id"]


async def record(dialer: Client, body: dict) -> dict:
    response = await dialer.post("/v1/calls", body)
    assert response.code == 201, response
    return response.json()["call"]


async def metrics(api: Client, query: str) -> dict:
    response = await api.get(f"/v1/reporting/dialer-metrics?{query}")
    assert response.code == 200, response
    return response.json()


async def stored(api: Client, call_id: str) -> bool:
    """The call's toNumberSuppressed as GET /calls/{id} and a page of GET /calls show it."""
    one = (await api.get(f"/v1/calls/{call_id}")).json()["call"]["toNumberSuppressed"]
    calls, _ = await walk_pages(api, "/v1/calls?pageSize=100", "calls")
    paged = next(c for c in calls if c["id"] == call_id)["toNumberSuppressed"]
    assert one is paged
    return one


async def test_a_call_to_a_listed_number_is_recorded_and_marked_as_of_then(
    api, dialer, ws_a, prospect
):
    started = NOW - dt.timedelta(minutes=30)
    today = f"from={started.date()}&to={NOW.date()}"  # the calls' day (and today, past midnight)
    entry = await suppress(api, "(415) 555-0111")
    listed = await record(dialer, call_body(ws_a, prospect, "415-555-0111", started))
    other = await record(dialer, call_body(ws_a, prospect, OTHER, started))
    assert listed["toNumber"] == LISTED and listed["toNumberSuppressed"] is True
    assert other["toNumberSuppressed"] is False
    assert await stored(api, listed["id"]) is True and await stored(api, other["id"]) is False
    body = await metrics(api, today)
    assert body["totals"]["dials"] == 2 and body["totals"]["callsToSuppressedNumbers"] == 1
    assert [u["callsToSuppressedNumbers"] for u in body["byUser"]] == [1]
    assert sum(d["callsToSuppressedNumbers"] for d in body["byDay"]) == 1

    # A change of the call (one that moves its other counts too) keeps it marked and counted.
    patch = {"disposition": "voicemail", "notes": "Left a message"}
    changed = await dialer.patch(f"/v1/calls/{listed['id']}", patch)
    assert changed.code == 200, changed
    assert changed.json()["call"]["toNumberSuppressed"] is True
    body = await metrics(api, today)
    assert body["totals"]["voicemails"] == 1 and body["totals"]["callsToSuppressedNumbers"] == 1

    # Once the entry is removed, a new call to the number is not marked; the old one stays.
    assert (await api.fetch(f"/v1/do-not-call/{entry}", "DELETE")).code == 204
    later = await record(
        dialer, call_body(ws_a, prospect, LISTED, started + dt.timedelta(minutes=5))
    )
    assert later["toNumberSuppressed"] is False
    assert await stored(api, listed["id"]) is True and await stored(api, later["id"]) is False
    body = await metrics(api, today)
    assert body["totals"]["dials"] == 3 and body["totals"]["callsToSuppressedNumbers"] == 1


async def test_a_batch_marks_each_call(api, dialer, ws_a, prospect):
    started = NOW - dt.timedelta(hours=2)
    await suppress(api, LISTED)
    calls = [
        call_body(ws_a, prospect, number, started + dt.timedelta(minutes=n))
        for n, number in enumerate([LISTED, OTHER, LISTED, "+14155550133"])
    ]
    response = await dialer.post("/v1/calls/batch", {"calls": calls})
    assert response.code == 200, response
    results = response.json()["results"]
    marked = [await stored(api, r["callId"]) for r in results]
    assert marked == [True, False, True, False]
    day = started.date().isoformat()
    totals = (await metrics(api, f"from={day}&to={day}"))["totals"]
    assert (totals["dials"], totals["callsToSuppressedNumbers"]) == (4, 2)


async def test_counted_exactly_where_a_day_starts_inside_a_quarter_hour(
    api, dialer, ws_a, prospect
):
    """Monrovia kept -00:44:30 until 1972: its days began inside a quarter hour, so the
    calls of that quarter are counted from the calls themselves (not the quarter counts)."""
    await suppress(api, LISTED)
    # 1971-03-02 00:44:30 UTC starts March 2 in Monrovia; 00:40 is March 1, 00:50 March 2.
    for minute, number in ((40, LISTED), (50, LISTED), (52, OTHER)):
        started = dt.datetime(1971, 3, 2, 0, minute)
        await record(dialer, call_body(ws_a, prospect, number, started))
    body = await metrics(api, "from=1971-03-01&to=1971-03-02&timezone=Africa/Monrovia")
    assert [d["dials"] for d in body["byDay"]] == [1, 2]
    assert [d["callsToSuppressedNumbers"] for d in body["byDay"]] == [1, 1]
    assert body["totals"]["callsToSuppressedNumbers"] == 2


async def test_calls_stored_without_the_field_read_false(api, store, ws_a, prospect):
    call = await store.calls.create(
        ws_a.id,
        user_id=ws_a.users[0]["id"],
        prospect_id=prospect["id"],
        direction="outbound",
        disposition="connected",
        from_number="+12125550142",
        to_number=LISTED,
        started_at=NOW - dt.timedelta(hours=1),
        ended_at=NOW - dt.timedelta(minutes=50),
    )
    await suppress(api, LISTED)  # listed after the call was recorded: it stays false
    assert await stored(api, call["id"]) is False
    doc = {**call, "_id": str(uuid.uuid4()), "workspaceId": ws_a.id, "recordingRef": None}
    for name in ("id", "toNumberSuppressed"):
        doc.pop(name)
    await store.calls.insert_documents(ws_a.id, [doc])  # a document without the field
    assert await stored(api, doc["_id"]) is False
    days = f"from={(NOW - dt.timedelta(hours=1)).date()}&to={NOW.date()}"  # past midnight too
    totals = (await metrics(api, days))["totals"]
    assert (totals["dials"], totals["callsToSuppressedNumbers"]) == (2, 0)


async def test_the_calls_import_marks_and_counts_them(api, store, ws_a, prospect, monkeypatch):
    """Batches of 50 calls (each write well within FerretDB's time on a busy machine): their
    rows are made ahead of the write, then marked in it."""
    monkeypatch.setitem(importer.BATCH, "calls", 50)
    await suppress(api, LISTED)
    numbers = [LISTED if n % 3 == 0 else OTHER for n in range(300)]
    lines = [
        call_body(
            ws_a,
            prospect,
            number,
            dt.datetime(2026, 1, 5, 10) + dt.timedelta(minutes=n),
            providerCallSid=f"CA{n:032x}",
        )
        for n, number in enumerate(numbers)
    ]
    text = "\n".join(json.dumps(line) for line in lines).encode()
    summary = Summary("calls", ws_a.id, io.StringIO())
    await import_file(store, "calls", ws_a.id, io.BytesIO(text), None, summary, None)
    assert summary.created == 300
    calls, _ = await walk_pages(api, "/v1/calls?pageSize=100", "calls")
    assert sorted(c["toNumber"] for c in calls if c["toNumberSuppressed"]) == [LISTED] * 100
    assert all(c["toNumberSuppressed"] == (c["toNumber"] == LISTED) for c in calls)
    totals = (await metrics(api, "from=2026-01-05&to=2026-01-05"))["totals"]
    assert (totals["dials"], totals["callsToSuppressedNumbers"]) == (300, 100)
