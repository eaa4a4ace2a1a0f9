"""GET /v1/prospect-activities: selection, timeline order, streaming, disconnects, isolation."""

import asyncio
import datetime as dt
import json
import time
import uuid

import pytest
from tornado.simple_httpclient import HTTPStreamClosedError

from handlers.activities import ProspectActivitiesHandler
from schemas import Schemas
from store.activities import activity_document
from store.errors import StoreUnavailable
from tests.helpers import insert_in_parts, settled

BASE = dt.datetime(2026, 1, 5, 9, 0)


async def prospect(store, ws, email="ada@example.com", phone="+14155550101", **fields):
    return await store.prospects.create(
        ws.id, {"email": email, "phoneNumber": phone, **fields}, created_at=BASE
    )


def note(ws, prospect_id, minutes, text="Called back later", user=None, activity_id=None):
    return activity_document(
        ws.id,
        prospect_id,
        "note",
        BASE + dt.timedelta(minutes=minutes),
        text.splitlines()[0],
        {"text": text},
        user_id=user,
        activity_id=activity_id,
    )


async def test_timeline_newest_first_with_every_kind_of_activity(api, store, ws_a):
    ada = await prospect(store, ws_a)
    user = ws_a.users[0]["id"]
    call = await store.calls.create(
        ws_a.id,
        user_id=user,
        prospect_id=ada["id"],
        direction="outbound",
        disposition="connected",
        from_number="+12125550100",
        to_number="+14155550101",
        started_at=BASE + dt.timedelta(minutes=30),
        answered_at=BASE + dt.timedelta(minutes=30),
        ended_at=BASE + dt.timedelta(minutes=34, seconds=5),
        meeting_booked=True,
    )
    await store.activities.insert_documents(
        ws_a.id,
        [
            note(ws_a, ada["id"], 10, "Asked for pricing\nSend the deck", user),
            activity_document(
                ws_a.id,
                ada["id"],
                "email",
                BASE + dt.timedelta(minutes=20),
                "Email sent: Pricing",
                {"direction": "outbound", "subject": "Pricing"},
                user_id=user,
            ),
            activity_document(
                ws_a.id,
                ada["id"],
                "meeting_booked",
                BASE + dt.timedelta(minutes=35),
                "Meeting booked",
                {"scheduledFor": BASE + dt.timedelta(days=3)},
                user_id=user,
                call_id=call["id"],
            ),
            activity_document(
                ws_a.id,
                ada["id"],
                "status_change",
                BASE + dt.timedelta(minutes=36),
                "Status: contacted → meeting_set",
                {"from": "contacted", "to": "meeting_set"},
                user_id=user,
            ),
        ],
    )
    list_id = (await api.post("/v1/lists", {"name": "Q1 Leads", "ownerUserId": user})).json()[
        "list"
    ]["id"]
    await api.post(f"/v1/lists/{list_id}/contacts", {"contacts": [{"email": "ADA@example.com"}]})

    response = await api.get(f"/v1/prospect-activities?prospectId={ada['id']}")
    assert response.code == 200
    body = response.json()
    assert Schemas().errors("/schemas/responses/prospect-activities.json", body) == []
    assert body["prospect"]["id"] == ada["id"] and body["prospect"]["listIds"] == [list_id]
    types = [a["type"] for a in body["activities"]]
    assert types == ["list_added", "status_change", "meeting_booked", "call", "email", "note"]
    added, _, meeting, called, _, noted = body["activities"]
    assert added["details"] == {"listId": list_id, "listName": "Q1 Leads"}
    assert added["userId"] is None and added["summary"] == "Added to list Q1 Leads"
    assert called == {
        "id": called["id"],
        "type": "call",
        "occurredAt": "2026-01-05T09:30:00.000Z",
        "userId": user,
        "callId": call["id"],
        "summary": "Outbound call: connected (4m 05s)",
        "details": {"direction": "outbound", "disposition": "connected", "durationSeconds": 245},
    }
    assert meeting["callId"] == call["id"]
    assert meeting["details"] == {"scheduledFor": "2026-01-08T09:00:00.000Z"}
    assert noted["summary"] == "Asked for pricing" and noted["callId"] is None
    assert ws_a.id not in response.body.decode()


async def test_equal_times_are_ordered_by_id_and_empty_timelines_work(api, store, ws_a):
    ada = await prospect(store, ws_a)
    empty = (await api.get(f"/v1/prospect-activities?prospectId={ada['id']}")).json()
    assert empty == {
        "prospect": ada
        | {"createdAt": "2026-01-05T09:00:00.000Z", "updatedAt": "2026-01-05T09:00:00.000Z"},
        "activities": [],
    }
    ids = [str(uuid.uuid4()) for _ in range(7)]
    await store.activities.insert_documents(
        ws_a.id, [note(ws_a, ada["id"], 0, activity_id=i) for i in ids]
    )
    body = (await api.get(f"/v1/prospect-activities?prospectId={ada['id']}")).json()
    assert [a["id"] for a in body["activities"]] == sorted(ids, reverse=True)


async def test_uploads_record_list_added_once_per_prospect_and_list(api, store, ws_a):
    owner = ws_a.users[0]["id"]
    one, two = [
        (await api.post("/v1/lists", {"name": n, "ownerUserId": owner})).json()["list"]
        for n in ("One", "Two")
    ]
    contacts = {"contacts": [{"email": "a@example.com"}, {"email": "b@example.com"}]}
    for target in (one, one, two):
        await api.post(f"/v1/lists/{target['id']}/contacts", contacts)
    body = (await api.get("/v1/prospect-activities?email=a@example.com")).json()
    assert [(a["type"], a["details"]["listName"]) for a in body["activities"]] == [
        ("list_added", "Two"),
        ("list_added", "One"),
    ]


async def test_select_by_email_or_phone_like_the_matcher(api, store, ws_a):
    ada = await prospect(store, ws_a, email="Ada@Example.com", phone="+442079460958")
    await store.activities.insert_documents(ws_a.id, [note(ws_a, ada["id"], 1)])
    for query in (
        "email=ada@example.COM",
        "email=%20ada@example.com",
        "phoneNumber=%2B442079460958",
        "phoneNumber=%2B44%2020%207946%200958",
        "phoneNumber=+442079460958",
        f"prospectId={ada['id'].upper()}",
    ):
        body = (await api.get(f"/v1/prospect-activities?{query}")).json()
        assert body["prospect"]["id"] == ada["id"] and len(body["activities"]) == 1, query


BAD = {
    "": "prospectId",
    "prospectId=nope": "prospectId",
    "email=": "email",
    "phoneNumber=abc": "phoneNumber",
    "email=a@example.com&phoneNumber=%2B14155550101": "phoneNumber",
    "prospectId=00000000-0000-4000-8000-000000000000&email=a@example.com": "email",
    "email=a@example.com&email=b@example.com": "email",
    "prospectId=00000000-0000-4000-8000-000000000000&page=2": "page",
}


@pytest.mark.parametrize("query,parameter", BAD.items(), ids=[q or "nothing" for q in BAD])
async def test_exactly_one_valid_selector_else_400(api, query, parameter):
    response = await api.get(f"/v1/prospect-activities?{query}")
    assert response.code == 400
    error = response.json()["errors"][0]
    assert (error["parameter"], error["pointer"]) == (parameter, f"#/query/{parameter}")


async def test_unknown_and_other_workspace_prospects_are_404_alike(api, api_b, store, ws_a):
    ada = await prospect(store, ws_a)
    foreign = await api_b.get(f"/v1/prospect-activities?prospectId={ada['id']}")
    unknown = await api_b.get(f"/v1/prospect-activities?prospectId={uuid.uuid4()}")
    assert foreign.code == unknown.code == 404
    assert {**foreign.json(), "requestId": ""} == {**unknown.json(), "requestId": ""}
    assert (await api_b.get("/v1/prospect-activities?email=ada@example.com")).code == 404
    assert (await api_b.get("/v1/prospect-activities?phoneNumber=%2B14155550101")).code == 404
    assert (await api.get("/v1/prospect-activities?email=ada@example.com")).code == 200


async def test_an_email_shared_by_two_prospects_is_422(api, store, ws_a):
    await prospect(store, ws_a, linkedinUrl="linkedin.com/in/ada-one")
    await prospect(store, ws_a, phone="+14155550102", linkedinUrl="linkedin.com/in/ada-two")
    response = await api.get("/v1/prospect-activities?email=ada@example.com")
    assert response.code == 422
    assert response.json()["errors"][0]["pointer"] == "#/query/email"
    assert (await api.get("/v1/prospect-activities?phoneNumber=%2B14155550102")).code == 200


@pytest.mark.server_limit("scan")
async def test_a_100000_activity_timeline_is_streamed_whole_and_in_order(api, store, ws_a):
    ada = await prospect(store, ws_a)
    other = await prospect(store, ws_a, email="bob@example.com", phone="+14155550102")
    total = 100_000
    docs = [
        activity_document(
            ws_a.id,
            ada["id"],
            "email",
            BASE + dt.timedelta(seconds=i // 2),
            f"Email {i}",
            {"direction": "outbound", "subject": f"#{i}"},
        )
        for i in range(total)
    ]
    await store.activities.insert_documents(ws_a.id, docs)
    await store.activities.insert_documents(ws_a.id, [note(ws_a, other["id"], 5)])
    response = await api.get(f"/v1/prospect-activities?prospectId={ada['id']}")
    assert response.code == 200
    assert response.headers.get("Transfer-Encoding") == "chunked"  # streamed, not buffered
    assert "Content-Length" not in response.headers
    body = json.loads(response.body)
    activities = body["activities"]
    assert len(activities) == total and len({a["id"] for a in activities}) == total
    keys = [(a["occurredAt"], a["id"]) for a in activities]
    assert keys == sorted(keys, reverse=True)
    assert activities[0]["occurredAt"] == "2026-01-05T22:53:19.000Z"
    assert activities[-1]["occurredAt"] == "2026-01-05T09:00:00.000Z"


@pytest.fixture
def tracked_timeline(store, monkeypatch):
    """Records how many batches the handler took from the store and whether it closed them."""
    state = {"batches": 0, "closed": False}
    original = store.activities.timeline

    async def timeline(*args, **kwargs):
        try:
            async for batch in original(*args, **kwargs):
                state["batches"] += 1
                yield batch
        finally:
            state["closed"] = True

    monkeypatch.setattr(store.activities, "timeline", timeline)
    return state


async def test_a_client_disconnect_stops_the_cursor(
    origin, store, ws_a, monkeypatch, tracked_timeline, small_send_buffer
):
    """The client reads the head and stalls, so flushes wait (backpressure); then it goes away
    and the server stops reading the timeline long before its end (1.6 MB, far more than the
    socket buffers hold)."""
    monkeypatch.setattr(ProspectActivitiesHandler, "batch_size", 20)
    ada = await prospect(store, ws_a)
    total = 400
    async with store.bulk_load(defer_indexes=False):  # history: no events to record
        await insert_in_parts(
            store.activities.insert_documents,
            ws_a.id,
            [note(ws_a, ada["id"], i, "x" * 4000) for i in range(total)],
        )
    host, port = origin.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        f"GET /v1/prospect-activities?prospectId={ada['id']} HTTP/1.1\r\n"
        f"Host: {host}\r\nAuthorization: Bearer {ws_a.key}\r\n\r\n".encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"chunked" in head.lower()
    await reader.read(1000)  # the first chunk(s)
    # A stalled client: the server blocks in flush and reads no further batch.
    batches = await settled(lambda: tracked_timeline["batches"])
    assert 0 < batches < total // 20 and not tracked_timeline["closed"]
    writer.transport.abort()  # the client goes away mid-body
    deadline = time.monotonic() + 10
    while not tracked_timeline["closed"]:
        assert time.monotonic() < deadline, "the cursor was not closed"
        await asyncio.sleep(0.01)
    assert tracked_timeline["batches"] < total // 20


async def test_a_database_failure_before_the_first_byte_is_a_503(api, store, ws_a, monkeypatch):
    ada = await prospect(store, ws_a)

    async def failing(*args, **kwargs):
        raise StoreUnavailable("down")
        yield []

    monkeypatch.setattr(store.activities, "timeline", failing)
    response = await api.get(f"/v1/prospect-activities?prospectId={ada['id']}")
    assert response.code == 503 and response.json()["code"] == "service_unavailable"


async def test_a_failure_mid_stream_cuts_the_body_short(api, store, ws_a, monkeypatch):
    ada = await prospect(store, ws_a)

    async def failing(*args, **kwargs):
        yield [{"id": "first"}]
        raise StoreUnavailable("lost")

    monkeypatch.setattr(store.activities, "timeline", failing)
    # The 200 and the first batch were sent; then the connection is closed without the end of
    # the chunked body, which the client reports as an error instead of a complete response.
    with pytest.raises(HTTPStreamClosedError):
        await api.get(f"/v1/prospect-activities?prospectId={ada['id']}", check=False)


async def test_head_answers_without_reading_the_timeline(api, store, ws_a, monkeypatch):
    prospect = await store.prospects.create(ws_a.id, {"email": "head@example.com"})
    opened = []
    monkeypatch.setattr(
        store.activities, "timeline", lambda *args, **kwargs: opened.append(args) or None
    )
    response = await api.fetch(f"/v1/prospect-activities?prospectId={prospect['id']}", "HEAD")
    assert response.code == 200 and response.body == b""
    assert response.headers["Content-Type"].startswith("application/json")
    assert opened == []
    missing = await api.fetch(
        "/v1/prospect-activities?prospectId=00000000-0000-4000-8000-000000000000", "HEAD"
    )
    assert missing.code == 404


async def open_stalled_timeline(origin, ws, prospect_id) -> tuple:
    """A client that reads the response head and a little, then nothing: (reader, writer)."""
    import socket

    host, port = origin.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    reader, writer = await asyncio.open_connection(sock=sock)
    writer.write(
        f"GET /v1/prospect-activities?prospectId={prospect_id} HTTP/1.1\r\n"
        f"Host: {host}\r\nAuthorization: Bearer {ws.key}\r\n\r\n".encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    await reader.read(1000)
    return reader, writer


async def test_a_stalled_reader_is_cut_and_its_cursor_closed(
    origin, app, config, store, ws_a, monkeypatch, tracked_timeline, small_send_buffer
):
    """A client that stays connected but takes nothing for stream_stall_seconds is cut: the
    connection is closed and the cursor with it, long before the timeline's end."""
    app.settings["config"] = config.replace(stream_stall_seconds=0.5)
    monkeypatch.setattr(ProspectActivitiesHandler, "batch_size", 20)
    ada = await prospect(store, ws_a)
    total = 400
    async with store.bulk_load(defer_indexes=False):  # history: no events to record
        await insert_in_parts(
            store.activities.insert_documents,
            ws_a.id,
            [note(ws_a, ada["id"], i, "x" * 4000) for i in range(total)],
        )
    reader, writer = await open_stalled_timeline(origin, ws_a, ada["id"])
    deadline = time.monotonic() + 30
    while not tracked_timeline["closed"]:
        assert time.monotonic() < deadline, "the stalled stream was never cut"
        await asyncio.sleep(0.05)
    assert tracked_timeline["batches"] < total // 20
    body = b""
    while chunk := await asyncio.wait_for(reader.read(1 << 20), 5):  # then the server's EOF
        body += chunk
    assert not body.endswith(b"0\r\n\r\n")  # cut short, never a clean end of the chunked body
    writer.close()
    assert app.settings["stream_slots"].open == {}


async def test_a_slow_reader_that_keeps_reading_is_not_cut(
    origin, app, config, store, ws_a, monkeypatch, tracked_timeline
):
    app.settings["config"] = config.replace(stream_stall_seconds=0.5)
    monkeypatch.setattr(ProspectActivitiesHandler, "batch_size", 20)
    ada = await prospect(store, ws_a)
    await store.activities.insert_documents(
        ws_a.id, [note(ws_a, ada["id"], i, "x" * 4000) for i in range(300)]
    )
    reader, writer = await open_stalled_timeline(origin, ws_a, ada["id"])
    body, sips = b"", 0
    while not body.endswith(b"0\r\n\r\n"):  # 1.2 MB in 16 KiB sips
        chunk = await asyncio.wait_for(reader.read(16 * 1024), 5)
        assert chunk, "the server cut a client that was reading"
        body += chunk
        sips += 1
        await asyncio.sleep(0.02)
    writer.close()
    assert sips * 0.02 > 1.0  # twice the stall period of pauses, and more
    assert tracked_timeline["closed"] and tracked_timeline["batches"] == 300 // 20


async def test_timelines_take_turns_at_the_database(api, store, ws_a, monkeypatch):
    """However many timelines stream at once, one batch read of theirs is in flight at a time,
    so that an ordinary request's query never queues behind one read of every stream."""
    monkeypatch.setattr(ProspectActivitiesHandler, "batch_size", 5)
    ada = await prospect(store, ws_a)
    await store.activities.insert_documents(ws_a.id, [note(ws_a, ada["id"], i) for i in range(40)])
    original, state = store.activities.timeline, {"in_flight": 0, "most": 0, "reads": 0}

    async def timeline(*args, **kwargs):
        source = original(*args, **kwargs)
        try:
            while True:
                state["in_flight"] += 1
                state["most"] = max(state["most"], state["in_flight"])
                await asyncio.sleep(0.002)  # a read that takes a while
                batch = await anext(source, None)
                state["in_flight"] -= 1
                if batch is None:
                    return
                state["reads"] += 1
                yield batch
        finally:
            await source.aclose()

    monkeypatch.setattr(store.activities, "timeline", timeline)
    responses = await asyncio.gather(
        *[api.get(f"/v1/prospect-activities?prospectId={ada['id']}") for _ in range(6)]
    )
    assert all(len(r.json()["activities"]) == 40 for r in responses)
    assert state["reads"] == 6 * 8 and state["most"] == 1
