"""GET /v1/exports/{calls,prospects,lists,activities}: every settled record in one NDJSON stream,
in the sync order, with the filters of the list endpoints; the Link to the sync order that
continues it (missing nothing and repeating nothing while the workspace takes writes); gzip;
resuming with updatedSince; one request for the rate limit, one stream against the streams
limit, cut when stalled; and a database failure mid-stream that cuts the connection."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gzip
import json
import socket
import time
import uuid
import zlib
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from handlers.exports import ExportHandler, accepts_gzip
from schemas import Schemas
from server.config import load_config
from store.activities import activity_document, export_record
from store.calls import call_document
from tests.helpers import FakeClock, insert_in_parts, settled, test_environ

BASE = dt.datetime(2026, 3, 2, 9)
RESOURCES = ("calls", "prospects", "lists", "activities")
ROOT = Path(__file__).resolve().parents[2]
# Calls of 4 kB: 1.6 MB, far more than the sockets' buffers hold with the API's send buffer kept
# small (small_send_buffer, tests/conftest.py).
BIG = 400
LINE_SCHEMAS = {
    "calls": "/schemas/records/call.json",
    "prospects": "/schemas/records/prospect.json",
    "lists": "/schemas/records/list.json",
    "activities": "/schemas/records/activity.json",
}


@pytest.fixture
def config():
    return load_config(
        environ=test_environ(
            shared=True, WSAPI_SYNC_SETTLE_SECONDS="0", WSAPI_RATE_LIMIT_PER_MINUTE="1000000"
        )
    )


def calls_of(ws, count: int, *, updated: dt.datetime = BASE, notes: str | None = None) -> list:
    """Call documents whose updatedAt come in runs of three equal instants (ties by id)."""
    return [
        call_document(
            ws.id,
            user_id=ws.users[i % 2]["id"],
            prospect_id=str(uuid.uuid4()),
            direction=("outbound", "inbound")[i % 3 == 0],
            disposition=("no_answer", "connected")[i % 4 == 0],
            from_number="+12125550100",
            to_number="+14155550101",
            started_at=BASE - dt.timedelta(days=i % 7, minutes=i),
            ended_at=BASE - dt.timedelta(days=i % 7, minutes=i) + dt.timedelta(seconds=30),
            notes=notes,
            updated_at=updated + dt.timedelta(seconds=i // 3),
        )
        for i in range(count)
    ]


async def load(store, ws, docs: list) -> None:
    """Many large calls, as history is loaded: without events (FerretDB would take long to
    read megabytes of calls back for them, and the exports do not read events)."""
    async with store.bulk_load(defer_indexes=False):
        await insert_in_parts(store.calls.insert_documents, ws.id, docs)


async def seed(store, ws, calls: int = 40) -> None:
    """Calls (and so their `call` activities), prospects in a list, and lists."""
    await store.calls.insert_documents(ws.id, calls_of(ws, calls))
    owner = ws.users[0]["id"]
    listing = await store.lists.create(ws.id, "Seeded", owner)
    await store.prospects.add_to_list(
        ws.id, listing, [{"email": f"p{i}@example.com", "firstName": f"P{i}"} for i in range(12)]
    )
    await store.lists.set_count(ws.id, listing["id"], 12)
    for i in range(5):
        await store.lists.create(ws.id, f"L{i}", owner, created_at=BASE + dt.timedelta(hours=i))
    for i in range(6):
        await store.prospects.create(
            ws.id, {"email": f"solo{i}@example.com"}, created_at=BASE + dt.timedelta(hours=i)
        )


def parsed(body: bytes) -> list[dict]:
    assert body == b"" or body.endswith(b"\n"), body[-200:]
    return [json.loads(line) for line in body.splitlines()]


async def sync_walk(api, path: str, resource: str) -> list[dict]:
    """Every record of the sync order from `path`, following nextCursor while hasMore."""
    seen, body = [], (await api.get(path)).json()
    while True:
        seen += body[resource]
        if not body["hasMore"]:
            return seen
        body = (await api.get(f"/v1/{resource}?cursor={body['nextCursor']}&pageSize=100")).json()


def links(response) -> dict[str, str]:
    """The response's Link header, by rel."""
    found = {}
    for link in response.headers["Link"].split(", "):
        target, rel = link.split("; ")
        assert target.startswith("<") and target.endswith(">") and rel.startswith("rel="), link
        found[rel[len('rel="') : -1]] = target[1:-1]
    return found


def next_link(response) -> str:
    return links(response)["next"]


async def follow_events(api, path: str) -> list[dict]:
    """The events feed from `path` until caught up."""
    seen, body = [], (await api.get(path)).json()
    while True:
        seen += body["events"]
        if not body["hasMore"]:
            return seen
        body = (await api.get(f"/v1/events?cursor={body['nextCursor']}")).json()


# --- what an export holds ---------------------------------------------------------------------


@pytest.mark.parametrize("resource", ["calls", "prospects", "lists"])
async def test_an_export_is_the_whole_sync_order_as_ndjson(api, store, ws_a, resource):
    await seed(store, ws_a)
    response = await api.get(f"/v1/exports/{resource}")
    assert response.code == 200
    assert response.headers["Content-Type"] == "application/x-ndjson"
    assert response.headers["Vary"] == "Accept-Encoding"
    assert response.headers.get("Transfer-Encoding") == "chunked"  # streamed, not buffered
    lines = parsed(response.body)
    walked = await sync_walk(api, f"/v1/{resource}?sort=updatedAt&pageSize=100", resource)
    assert lines == walked and len(lines) > 5  # each line the record the API shows, in order
    schemas = Schemas()
    for line in lines:
        assert schemas.errors(LINE_SCHEMAS[resource], line) == []


async def test_the_activities_export_holds_every_activity_in_the_order_stored(
    api, store, ws_a, clock
):
    await seed(store, ws_a)
    prospect = await store.prospects.create(ws_a.id, {"email": "late@example.com"})
    now = clock.now()
    logged_late = activity_document(
        ws_a.id,
        prospect["id"],
        "note",
        now - dt.timedelta(days=7),  # happened last week, logged just now
        "Met at the fair",
        {"text": "Met at the fair"},
        stored_at=now - dt.timedelta(seconds=1),
    )
    await store.activities.insert_documents(ws_a.id, [logged_late])
    lines = parsed((await api.get("/v1/exports/activities")).body)
    stored = [d for d in await store.documents("activities") if d["workspaceId"] == ws_a.id]
    expected = sorted((export_record(d) for d in stored), key=lambda r: (r["storedAt"], r["id"]))
    assert [line["id"] for line in lines] == [r["id"] for r in expected]
    assert len(lines) == 40 + 12 + 1  # the calls' and the list memberships', and the note
    schemas = Schemas()
    for line in lines:
        assert set(line) == {
            "id",
            "prospectId",
            "type",
            "occurredAt",
            "storedAt",
            "userId",
            "callId",
            "summary",
            "details",
        }
        assert schemas.errors(LINE_SCHEMAS["activities"], line) == []
    # updatedSince filters on when an activity was stored, not when it happened.
    since = (now - dt.timedelta(seconds=1)).isoformat(timespec="milliseconds") + "Z"
    recent = parsed((await api.get(f"/v1/exports/activities?updatedSince={since}")).body)
    assert logged_late["_id"] in [line["id"] for line in recent]
    assert all(line["storedAt"] >= since for line in recent)
    last_week = (now - dt.timedelta(days=7, seconds=1)).isoformat() + "Z"
    earlier = parsed((await api.get(f"/v1/exports/activities?updatedSince={last_week}")).body)
    assert len(earlier) >= len(recent)
    response = await api.get("/v1/exports/activities")
    assert set(links(response)) == {"events"}  # no list endpoint continues it: the feed does


USER = "{user}"
FILTERS = {
    "calls": [
        f"userId={USER}",
        "direction=inbound",
        "disposition=connected",
        "createdFrom=2026-02-27&createdTo=2026-03-01",
        "updatedSince=2026-03-02T09:00:05Z",
        f"userId={USER}&direction=outbound&updatedSince=2026-03-02T09:00:02.000Z",
    ],
    "prospects": ["listId={list}", "email=P3@Example.com", "updatedSince={prospects_since}"],
    "lists": ["updatedSince={lists_since}", "updatedSince=2099-01-01"],
}


@pytest.mark.parametrize(
    "resource,query", [(r, q) for r, queries in FILTERS.items() for q in queries]
)
async def test_an_export_takes_the_filters_of_its_list_endpoint(api, store, ws_a, resource, query):
    await seed(store, ws_a)
    lists = (await api.get("/v1/lists?sort=updatedAt&pageSize=100")).json()["lists"]
    prospects = await sync_walk(api, "/v1/prospects?sort=updatedAt", "prospects")
    query = query.format(
        user=ws_a.users[0]["id"],
        list=next(x["id"] for x in lists if x["name"] == "Seeded"),
        lists_since=lists[3]["updatedAt"],
        prospects_since=prospects[-1]["updatedAt"],
    )
    lines = parsed((await api.get(f"/v1/exports/{resource}?{query}")).body)
    walked = await sync_walk(api, f"/v1/{resource}?sort=updatedAt&pageSize=100&{query}", resource)
    assert lines == walked
    everything = parsed((await api.get(f"/v1/exports/{resource}")).body)
    assert len(lines) < len(everything)


async def test_get_lists_takes_updated_since(api, store, ws_a):
    owner = ws_a.users[0]["id"]
    for i in range(4):
        await store.lists.create(ws_a.id, f"L{i}", owner, created_at=BASE + dt.timedelta(hours=i))
    page = (await api.get("/v1/lists?updatedSince=2026-03-02T11:00:00Z")).json()
    assert [x["name"] for x in page["lists"]] == ["L3", "L2"] and page["total"] == 2
    synced = await sync_walk(
        api, "/v1/lists?sort=updatedAt&updatedSince=2026-03-02T10:00:00Z", "lists"
    )
    assert [x["name"] for x in synced] == ["L1", "L2", "L3"]
    assert (await api.get("/v1/lists?updatedSince=yesterday")).code == 400


@pytest.mark.parametrize("resource", RESOURCES)
@pytest.mark.parametrize(
    "query,parameter",
    [
        ("page=1", "page"),
        ("pageSize=100", "pageSize"),
        ("cursor=abc", "cursor"),
        ("sort=updatedAt", "sort"),
        ("colour=blue", "colour"),
        ("updatedSince=last-tuesday", "updatedSince"),
    ],
)
async def test_paging_parameters_and_bad_filters_are_400(api, resource, query, parameter):
    response = await api.get(f"/v1/exports/{resource}?{query}")
    assert response.code == 400, response
    assert response.json()["errors"][0]["pointer"] == f"#/query/{parameter}"


@pytest.mark.parametrize(
    "query,parameter",
    [
        ("createdFrom=2026-03-02&createdTo=2026-03-01", "createdTo"),
        ("userId=not-a-uuid", "userId"),
        ("direction=sideways", "direction"),
    ],
)
async def test_bad_call_filters_are_400(api, query, parameter):
    response = await api.get(f"/v1/exports/calls?{query}")
    assert response.code == 400
    assert response.json()["errors"][0]["pointer"] == f"#/query/{parameter}"


async def test_an_unreadable_phone_number_is_400(api):
    response = await api.get("/v1/exports/prospects?phoneNumber=not%20a%20number")
    assert response.code == 400
    assert response.json()["errors"][0]["pointer"] == "#/query/phoneNumber"


# --- the settle rule, the next link and writes during the export -----------------------------


async def test_an_export_covers_the_settled_records_and_its_link_the_rest(
    api, app, config, store, ws_a, clock
):
    """Records changed within the settle period are left to the continuation."""
    app.settings["config"] = config.replace(sync_settle_seconds=1.0)
    old = calls_of(ws_a, 6)
    fresh = calls_of(ws_a, 3, updated=clock.now())
    await store.calls.insert_documents(ws_a.id, old + fresh)
    response = await api.get("/v1/exports/calls?direction=outbound")
    lines = parsed(response.body)
    outbound = {d["_id"] for d in old if d["direction"] == "outbound"}
    assert {line["id"] for line in lines} == outbound
    link = next_link(response)
    parts = urlsplit(link)
    assert parts.path == "/v1/calls" and set(parse_qs(parts.query)) == {"sort", "cursor"}
    assert parse_qs(parts.query)["sort"] == ["updatedAt"]
    clock.advance(1.1)  # the fresh calls settle a second after their updatedAt
    rest = await sync_walk(api, link, "calls")
    assert {c["id"] for c in rest} == {d["_id"] for d in fresh if d["direction"] == "outbound"}


async def test_following_the_link_after_an_export_misses_and_repeats_nothing_under_writes(
    api, app, config, store, ws_a, monkeypatch, clock
):
    """While the export streams (in batches of 10), calls it has sent and calls it has not
    reached yet are changed, and new calls are recorded. Its lines and then the sync order from
    its Link hold every call once per version, ending with exactly what the API holds."""
    app.settings["config"] = config.replace(sync_settle_seconds=0.3)
    monkeypatch.setattr(ExportHandler, "batch_size", 10)
    docs = calls_of(ws_a, 120)
    await store.calls.insert_documents(ws_a.id, docs)
    order = sorted(docs, key=lambda d: (d["updatedAt"], d["_id"]))
    original, batches = store.calls.export, {"read": 0}

    async def export_under_writes(*args, **kwargs):
        async for batch in original(*args, **kwargs):
            batches["read"] += 1
            if batches["read"] in (3, 8):  # writes between two batch reads
                n = batches["read"]
                for doc in order[n * 10 - 25 : n * 10 - 20] + order[n * 10 + 15 : n * 10 + 20]:
                    await store.calls.change(ws_a.id, doc["_id"], {"notes": f"changed at {n}"})
                new = calls_of(ws_a, 4)
                for doc in new:
                    doc["updatedAt"] = clock.now()  # recorded now
                await store.calls.insert_documents(ws_a.id, new)
            yield batch

    monkeypatch.setattr(store.calls, "export", export_under_writes)
    response = await api.get("/v1/exports/calls")
    exported = parsed(response.body)
    assert batches["read"] > 8 and len(exported) < 120  # changed calls left the export
    clock.advance(0.4)  # the last writes settle
    continued = await sync_walk(api, next_link(response), "calls")
    seen = exported + continued
    versions = [(c["id"], c["updatedAt"]) for c in seen]
    assert len(versions) == len(set(versions)), "a version came twice"
    latest = {c["id"]: c for c in seen}
    everything = {c["id"]: c for c in await sync_walk(api, "/v1/calls?sort=updatedAt", "calls")}
    assert latest == everything and len(everything) == 128
    changed = {c["id"] for c in everything.values() if c["notes"]}
    assert len(changed) == 20 and changed <= {c["id"] for c in continued}


async def test_the_events_link_after_an_export_brings_every_later_change(
    api, app, config, store, ws_a, monkeypatch, clock
):
    """The same writes during the export; its lines and then the events feed from its
    rel="events" link give the API's current calls: every change the export missed has an
    event there, and the feed holds nothing older than the export's horizon."""
    app.settings["config"] = config.replace(sync_settle_seconds=0.3)
    monkeypatch.setattr(ExportHandler, "batch_size", 10)
    docs = calls_of(ws_a, 60)
    await store.calls.insert_documents(ws_a.id, docs)  # events before the export
    order = sorted(docs, key=lambda d: (d["updatedAt"], d["_id"]))
    original, batches = store.calls.export, {"read": 0}

    async def export_under_writes(*args, **kwargs):
        async for batch in original(*args, **kwargs):
            batches["read"] += 1
            if batches["read"] == 3:
                for doc in order[5:10] + order[45:50]:  # sent already, and not reached yet
                    await store.calls.change(ws_a.id, doc["_id"], {"notes": "changed"})
                recorded = calls_of(ws_a, 4, updated=clock.now() - dt.timedelta(seconds=5))
                await store.calls.insert_documents(ws_a.id, recorded)
            yield batch

    clock.advance(0.4)  # the seeded calls' events settle before the export's horizon
    monkeypatch.setattr(store.calls, "export", export_under_writes)
    started = clock.now()
    response = await api.get("/v1/exports/calls")
    link = links(response)["events"]
    assert urlsplit(link).path == "/v1/events" and set(parse_qs(urlsplit(link).query)) == {"cursor"}
    latest = {line["id"]: line for line in parsed(response.body)}
    clock.advance(0.4)  # the last writes settle
    events = await follow_events(api, link)
    horizon = (started - dt.timedelta(seconds=0.3)).isoformat(timespec="milliseconds") + "Z"
    assert all(e["occurredAt"] >= horizon for e in events)
    for event in events:
        if event["type"].startswith("call."):
            latest[event["data"]["id"]] = event["data"]
    everything = {c["id"]: c for c in await sync_walk(api, "/v1/calls?sort=updatedAt", "calls")}
    assert latest == everything and len(everything) == 64
    changed = {e["data"]["id"] for e in events if e["type"] == "call.updated"}
    assert changed == {doc["_id"] for doc in order[5:10] + order[45:50]}


async def test_every_export_links_the_events_feed(api, store, ws_a):
    for resource in ("calls", "prospects", "lists", "activities"):
        response = await api.get(f"/v1/exports/{resource}")
        feed = await api.get(links(response)["events"])
        assert feed.code == 200 and feed.json()["events"] == [], resource


async def test_an_interrupted_export_resumes_with_updated_since(api, store, ws_a):
    """Resuming from the last received line's updatedAt repeats only that instant's records."""
    await store.calls.insert_documents(ws_a.id, calls_of(ws_a, 30))
    whole = parsed((await api.get("/v1/exports/calls")).body)
    for cut in (0, 7, 8, 20, 29):
        received = whole[: cut + 1]
        since = received[-1]["updatedAt"]
        resumed = parsed((await api.get(f"/v1/exports/calls?updatedSince={since}")).body)
        repeated = [c for c in resumed if c["id"] in {r["id"] for r in received}]
        assert all(c["updatedAt"] == since for c in repeated) and len(repeated) <= 3
        assert received + [c for c in resumed if c not in repeated] == whole


# --- gzip, HEAD, rate limit, streams -------------------------------------------------------------


async def open_export(origin, key, path, headers: dict | None = None, rcvbuf: int | None = None):
    """A raw HTTP/1.1 request for an export (Connection: close): (reader, writer, head)."""
    host, port = origin.removeprefix("http://").split(":")
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    reader, writer = await asyncio.open_connection(sock=sock)
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", f"Authorization: Bearer {key}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    writer.write(("\r\n".join([*lines, "Connection: close", "", ""])).encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    return reader, writer, head


async def closed(writer) -> None:
    """Close the client's side and wait until its socket is closed (no socket left behind)."""
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()


async def read_to_end(reader, limit: float = 20) -> bytes:
    data = b""
    while chunk := await asyncio.wait_for(reader.read(1 << 20), limit):
        data += chunk
    return data


def dechunk(data: bytes) -> tuple[bytes, bool]:
    """The body of a chunked transfer (its whole chunks) and whether it ended properly."""
    body, position = b"", 0
    while (end := data.find(b"\r\n", position)) >= 0:
        size = int(data[position:end].split(b";")[0], 16)
        start = end + 2
        if size == 0:
            return body, data[start : start + 2] == b"\r\n"
        if len(data) < start + size + 2:
            return body, False
        body += data[start : start + size]
        position = start + size + 2
    return body, False


async def test_gzip_is_sent_when_accepted(origin, store, ws_a):
    await seed(store, ws_a, calls=300)
    reader, writer, head = await open_export(
        origin, ws_a.key, "/v1/exports/calls", {"Accept-Encoding": "br;q=1, gzip;q=0.5"}
    )
    assert head.startswith(b"HTTP/1.1 200") and b"\r\nContent-Encoding: gzip\r\n" in head
    body, complete = dechunk(await read_to_end(reader))
    await closed(writer)
    assert complete
    plain_reader, plain_writer, plain_head = await open_export(
        origin, ws_a.key, "/v1/exports/calls", {"Accept-Encoding": "gzip;q=0, identity"}
    )
    plain, _ = dechunk(await read_to_end(plain_reader))
    await closed(plain_writer)
    assert b"Content-Encoding" not in plain_head
    assert gzip.decompress(body) == plain and len(body) * 3 < len(plain)
    assert len(parsed(plain)) == 300


def test_accept_encoding_is_read_by_name_and_weight():
    assert accepts_gzip("gzip") and accepts_gzip("deflate, GZIP;q=0.1") and accepts_gzip("x-gzip")
    assert not accepts_gzip("") and not accepts_gzip("gzip;q=0") and not accepts_gzip("br, *")
    assert not accepts_gzip("gzip;q=zero")


async def test_head_answers_without_reading(api, store, ws_a, monkeypatch):
    await seed(store, ws_a)
    monkeypatch.setattr(store.calls, "export", lambda *args, **kwargs: pytest.fail("read"))
    response = await api.fetch("/v1/exports/calls", "HEAD")
    assert response.code == 200 and response.body == b""
    assert response.headers["Content-Type"] == "application/x-ndjson"
    assert next_link(response).startswith("/v1/calls?sort=updatedAt&cursor=")


async def test_an_export_is_one_request_for_the_rate_limit(app, api, store, ws_a, monkeypatch):
    # A frozen clock keeps the three requests in one window (a window ending between them
    # would refill the quota).
    monkeypatch.setattr(app.settings["rate_limiter"], "clock", FakeClock(1_800_000_000.5))
    monkeypatch.setattr(ExportHandler, "batch_size", 7)
    await seed(store, ws_a, calls=200)
    before = (await api.get("/v1/users")).headers["RateLimit"]
    assert len(parsed((await api.get("/v1/exports/calls")).body)) == 200  # 29 batches
    after = (await api.get("/v1/users")).headers["RateLimit"]

    def remaining(header: str) -> int:
        return int(header.split(";r=")[1].split(";")[0])

    assert remaining(before) - remaining(after) == 2  # the export and this request


@pytest.fixture
def tracked_export(store, monkeypatch):
    """Counts the batches the handler took from the store's call export, and whether it was
    closed."""
    state = {"batches": 0, "closed": False}
    original = store.calls.export

    async def export(*args, **kwargs):
        try:
            async for batch in original(*args, **kwargs):
                state["batches"] += 1
                yield batch
        finally:
            state["closed"] = True

    monkeypatch.setattr(store.calls, "export", export)
    return state


async def test_a_stalled_client_holds_the_reading_back_and_is_cut(
    origin, app, config, store, ws_a, monkeypatch, tracked_export, small_send_buffer
):
    """A client that takes nothing: the export reads no more than a few batches ahead (memory
    stays flat), and after stream_stall_seconds it is cut, the reading ended and its stream slot
    given back."""
    app.settings["config"] = config.replace(stream_stall_seconds=0.5)
    monkeypatch.setattr(ExportHandler, "batch_size", 20)
    await load(store, ws_a, calls_of(ws_a, BIG, notes="x" * 4000))
    reader, writer, head = await open_export(origin, ws_a.key, "/v1/exports/calls", rcvbuf=16384)
    assert head.startswith(b"HTTP/1.1 200")
    deadline = time.monotonic() + 30
    while not tracked_export["closed"]:
        assert time.monotonic() < deadline, "the stalled export was never cut"
        await asyncio.sleep(0.05)
    assert tracked_export["batches"] < BIG // 20 // 2  # far from the end
    body, complete = dechunk(await read_to_end(reader))
    await closed(writer)
    assert not complete and body.endswith(b"\n")  # cut, never a clean end; whole lines only
    assert app.settings["stream_slots"].open == {}


async def test_a_slow_reader_that_keeps_reading_gets_everything(
    origin, app, config, store, ws_a, monkeypatch
):
    app.settings["config"] = config.replace(stream_stall_seconds=0.5)
    monkeypatch.setattr(ExportHandler, "batch_size", 20)
    await load(store, ws_a, calls_of(ws_a, 300, notes="x" * 4000))
    reader, writer, _ = await open_export(origin, ws_a.key, "/v1/exports/calls", rcvbuf=16384)
    data, sips = b"", 0
    while chunk := await asyncio.wait_for(reader.read(16 * 1024), 5):
        data += chunk
        sips += 1
        await asyncio.sleep(0.02)
    await closed(writer)
    body, complete = dechunk(data)
    assert complete and len(parsed(body)) == 300
    assert sips * 0.02 > 1.0  # 1.2 MB in 16 kB sips: twice the stall period of pauses, and more


async def test_an_export_counts_against_the_streams_limit(
    api, origin, app, config, store, ws_a, monkeypatch, tracked_export, small_send_buffer
):
    app.settings["config"] = config.replace(max_streams_per_workspace=1)
    monkeypatch.setattr(ExportHandler, "batch_size", 20)
    await load(store, ws_a, calls_of(ws_a, BIG, notes="x" * 4000))
    _, writer, head = await open_export(origin, ws_a.key, "/v1/exports/calls", rcvbuf=16384)
    assert head.startswith(b"HTTP/1.1 200")
    second = await api.get("/v1/exports/lists")
    assert second.code == 429 and second.json()["code"] == "too_many_streams"
    assert second.headers["Retry-After"]
    await closed(writer)
    deadline = time.monotonic() + 10
    while (await api.get("/v1/exports/lists")).code != 200:
        assert time.monotonic() < deadline, "the slot was not given back"
        await asyncio.sleep(0.05)


# --- database failures ------------------------------------------------------------------------


async def test_a_database_failure_before_the_first_batch_is_a_503(api, store, ws_a, monkeypatch):
    from store.errors import StoreUnavailable

    async def failing(*args, **kwargs):
        raise StoreUnavailable("down")
        yield []

    monkeypatch.setattr(store.prospects, "export", failing)
    response = await api.get("/v1/exports/prospects", headers={"Accept-Encoding": "gzip"})
    assert response.code == 503 and response.json()["code"] == "service_unavailable"
    assert "Content-Encoding" not in response.headers


@pytest.mark.sqlite
async def test_the_database_failing_mid_export_cuts_the_connection(
    origin, store, ws_a, monkeypatch, tracked_export, small_send_buffer
):
    """The SQLite engine fails every statement from some point of the export on (its fault
    hook): the client has received whole lines, and then the connection closes without the end
    of the body."""
    monkeypatch.setattr(ExportHandler, "batch_size", 20)
    await load(store, ws_a, calls_of(ws_a, BIG, notes="x" * 4000))
    reader, writer, head = await open_export(origin, ws_a.key, "/v1/exports/calls", rcvbuf=16384)
    assert head.startswith(b"HTTP/1.1 200")
    await settled(lambda: tracked_export["batches"])  # the client stalls: the reading waits
    store.engine.progress_steps = 10
    store.engine.fault = lambda: True
    try:
        body, complete = dechunk(await read_to_end(reader))
    finally:
        store.engine.fault = None
        await closed(writer)
    assert not complete
    lines = parsed(body)  # every line received whole
    assert 0 < len(lines) < BIG and tracked_export["closed"]


@pytest.mark.parametrize("resource", RESOURCES)
async def test_an_empty_workspace_exports_nothing(api, resource):
    for encoding in ("identity", "gzip"):
        response = await api.get(f"/v1/exports/{resource}", headers={"Accept-Encoding": encoding})
        assert response.code == 200 and response.body == b""


async def test_compressed_lines_decode_as_they_arrive(origin, store, ws_a, monkeypatch):
    """Each batch is flushed to a byte boundary: what has arrived decodes to whole lines."""
    monkeypatch.setattr(ExportHandler, "batch_size", 25)
    await store.calls.insert_documents(ws_a.id, calls_of(ws_a, 100))
    reader, writer, _ = await open_export(
        origin, ws_a.key, "/v1/exports/calls", {"Accept-Encoding": "gzip"}
    )
    body, complete = dechunk(await read_to_end(reader))
    await closed(writer)
    assert complete
    decoder = zlib.decompressobj(31)
    first = decoder.decompress(body[: len(body) // 2])
    assert first.count(b"\n") >= 1
    assert parsed(first + decoder.decompress(body[len(body) // 2 :]) + decoder.flush())


CUT_CALLS = 3000  # three export batches of 1,000 calls

# Seeds a workspace with `calls` calls of 4 kB in the database of `environ` (JSON), in a process
# of its own, so that no driver connection of the test's process outlives the server it kills;
# prints the workspace's key.
SEED = """
import asyncio, datetime as dt, json, sys, uuid
from server.services import open_services
from server.config import load_config
from store.calls import call_document
from tests.helpers import insert_in_parts, make_workspace

async def main(environ, calls):
    store, auth = await open_services(load_config(environ=environ))
    try:
        ws = await make_workspace(store, auth, "Cut")
        base = dt.datetime(2026, 3, 2, 9)
        docs = [
            call_document(
                ws.id, user_id=ws.users[0]["id"], prospect_id=str(uuid.uuid4()),
                direction="outbound", disposition="no_answer", from_number="+12125550100",
                to_number="+14155550101", started_at=base,
                ended_at=base + dt.timedelta(seconds=30), notes="x" * 4000,
                updated_at=base + dt.timedelta(seconds=i),
            )
            for i in range(calls)
        ]
        async with store.bulk_load(defer_indexes=False):  # no events: not what is tested
            await insert_in_parts(store.calls.insert_documents, ws.id, docs)
        print(ws.key)
    finally:
        await store.close()

asyncio.run(main(json.loads(sys.argv[1]), int(sys.argv[2])))
"""


@pytest.mark.wire
async def test_the_database_server_killed_mid_export_cuts_the_connection(tmp_path):
    """The wire tier: a `workspace-api serve` process streams an export (3 batches of 4 MB)
    from a FerretDB of the test's own, which is killed (SIGKILL) while the client has stopped
    reading; the client then gets whole lines and a connection closed without the end of the
    body. (The first batch may fit in the sockets' buffers, the second waits for the client:
    the third is never read.)"""
    import signal
    import subprocess
    import sys

    from tests.helpers import serving
    from tests.wire import WireServer

    server = WireServer(tmp_path / "wire-server.log", tmp_path / "data").start()
    try:
        # Seeding 20 MB in one insert is not what is tested: it may take the server longer
        # than the usual database timeout on a slow machine.
        environ = test_environ(MONGODB_URI=server.uri, WSAPI_DB_TIMEOUT_SECONDS="120")
        seeded = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-c", SEED, json.dumps(environ), str(CUT_CALLS)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert seeded.returncode == 0, seeded.stderr
        key = seeded.stdout.strip().splitlines()[-1]
        env = {
            **{name: environ[name] for name in ("MONGODB_URI", "WSAPI_DATABASE", "WSAPI_SECRET")},
            "WSAPI_SYNC_SETTLE_SECONDS": "0",
        }
        with serving(tmp_path, env=env, stop=signal.SIGKILL) as (origin, _log):
            reader, writer, head = await open_export(origin, key, "/v1/exports/calls", rcvbuf=16384)
            assert head.startswith(b"HTTP/1.1 200"), head
            await asyncio.to_thread(server.kill)  # 20 MB: most of it still unread
            try:
                body, complete = dechunk(await read_to_end(reader, limit=60))
            finally:
                await closed(writer)
        assert not complete
        lines = parsed(body)  # every line received whole
        assert 0 < len(lines) < CUT_CALLS
    finally:
        server.stop()
