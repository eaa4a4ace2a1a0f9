"""GET|HEAD /v1/calls/{id}/recording against the simulated provider running on loopback."""

from __future__ import annotations

import asyncio
import base64
import logging
import uuid

import psutil
import pytest

from handlers.ranges import ByteRange, InvalidRange, parse_range
from telephony.simulated_provider import make_ref, start_provider
from telephony.upstream import UpstreamClient
from tests.helpers import add_call, settled, wait_for

ACCOUNT_ID = "AC" + "7c" * 16
AUTH_TOKEN = "upstream-secret-9d3a61"
PROVIDER_HOST = "127.0.0.3"  # an address nothing else in the test uses, to spot leaks
REF = make_ref("recorded call")
BIG_REF = make_ref("a very long call")
MISSING_REF = make_ref("lost recording")
BIG_SIZE = 300_000_000


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def provider(io_loop):
    """The simulated provider on its own loopback address, started for real."""

    async def start():
        return await start_provider(PROVIDER_HOST, 0, account_id=ACCOUNT_ID, auth_token=AUTH_TOKEN)

    server = io_loop.run_sync(start)
    server.library.add(BIG_REF, BIG_SIZE)
    server.library.mark_missing(MISSING_REF)
    yield server
    io_loop.run_sync(server.stop)


@pytest.fixture
def app_services(provider):
    return {
        "upstream": UpstreamClient(
            provider.base_url,
            ACCOUNT_ID,
            AUTH_TOKEN,
            connect_timeout=1,
            header_timeout=0.5,
            idle_timeout=0.5,
        )
    }


@pytest.fixture
def calls(io_loop, store, ws_a):
    """Calls of workspace A: name -> id."""

    async def seed():
        return {
            "plain": await add_call(store, ws_a, REF),
            "big": await add_call(store, ws_a, BIG_REF),
            "missing": await add_call(store, ws_a, MISSING_REF),
            "none": await add_call(store, ws_a, None),
        }

    return io_loop.run_sync(seed)


def path(call_id: str) -> str:
    return f"/v1/calls/{call_id}/recording"


def recording_bytes(provider, ref: str, start: int, end: int) -> bytes:
    recording, out = provider.library.get(ref), []
    while start <= end:
        out.append(recording.read(start, end + 1 - start))
        start += len(out[-1])
    return b"".join(out)


async def raw_get(
    port: int, target: str, headers: dict, *, read: int | None = None, rcvbuf: int | None = None
):
    """A bare HTTP/1.1 exchange that shows truncation: (status, headers, body, clean end).
    `read` stops after that many body bytes and leaves the connection open (returned). A
    server that stalls for 30 s fails the test (TimeoutError) rather than hanging it."""
    import socket

    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=1 << 20)
    lines = [f"GET {target} HTTP/1.1", "Host: api", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    async with asyncio.timeout(30):
        return await read_response(reader, writer, read)


async def read_response(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, read: int | None
) -> tuple:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    status = int(head[0].split()[1])
    fields = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:] if h)}
    if read is not None:
        body = await reader.readexactly(read)
        return status, fields, body, writer
    body, clean = bytearray(), False
    try:
        if "content-length" in fields:
            while len(body) < int(fields["content-length"]):
                chunk = await reader.read(1 << 20)
                if not chunk:
                    break
                body += chunk
            clean = len(body) == int(fields["content-length"])
        else:  # chunked
            while True:
                size = int((await reader.readuntil(b"\r\n")).strip(), 16)
                if size == 0:
                    clean = True
                    break
                body += await reader.readexactly(size)
                await reader.readexactly(2)
    except (ConnectionError, asyncio.IncompleteReadError):
        clean = False
    writer.close()
    return status, fields, bytes(body), clean


# --- ranges (pure) -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header, expected",
    [
        (None, None),
        ("bytes=0-99", ByteRange(0, 99)),
        ("bytes=100-", ByteRange(100)),
        ("bytes=-500", ByteRange(suffix=500)),
        ("Bytes = 5-9", ByteRange(5, 9)),
        ("bytes=0-1, 5-9", None),  # several ranges: the whole recording
        ("bytes=0-1,", ByteRange(0, 1)),  # empty list elements are ignored
    ],
)
def test_parse_range(header, expected):
    assert parse_range(header) == expected


@pytest.mark.parametrize(
    "header",
    [
        "bytes=5-1",
        "bytes=abc",
        "bytes=-",
        "bytes=",
        "items=0-1",
        "0-1",
        "bytes=1-2-3",
        "bytes=-0",
        "bytes=0-1,x",
        "bytes=0x1-2",
    ],
)
def test_invalid_ranges(header):
    with pytest.raises(InvalidRange):
        parse_range(header)


def test_resolve_and_delivered():
    assert ByteRange(0, 99).resolve(50) == (0, 49)
    assert ByteRange(50).resolve(50) is None
    assert ByteRange(suffix=10).resolve(50) == (40, 49)
    assert ByteRange(suffix=100).resolve(50) == (0, 49)
    assert ByteRange(suffix=1).resolve(0) is None
    assert ByteRange(0, 99).delivered(0, 49, 50)
    assert not ByteRange(0, 99).delivered(1, 49, 50)
    assert not ByteRange(0, 9).delivered(0, 19, 100)
    assert ByteRange(10, 19).delivered(10, 15, None) and not ByteRange(10).delivered(11, 15, None)
    assert ByteRange(suffix=5).delivered(95, 99, None) and not ByteRange(suffix=5).delivered(
        90, 99, None
    )
    assert [r.header() for r in (ByteRange(0, 9), ByteRange(7), ByteRange(suffix=3))] == [
        "bytes=0-9",
        "bytes=7-",
        "bytes=-3",
    ]


# --- the endpoint ------------------------------------------------------------------------------


async def test_full_recording(api, calls, provider):
    size = provider.library.get(REF).size
    response = await api.get(path(calls["plain"]))
    assert response.code == 200
    assert response.headers["Content-Type"] == "audio/mpeg"
    assert int(response.headers["Content-Length"]) == size
    assert response.headers["Accept-Ranges"] == "bytes"
    assert response.headers["Content-Disposition"] == (
        f'attachment; filename="call-{calls["plain"]}.mp3"'
    )
    assert response.headers["ETag"] == provider.library.get(REF).etag
    assert response.body == recording_bytes(provider, REF, 0, size - 1)
    assert response.body[:2] == b"\xff\xfb"  # an MP3 frame
    [record] = provider.stats.requests
    assert record.range is None and record.completed


async def test_head(api, calls, provider):
    response = await api.fetch(path(calls["plain"]), "HEAD")
    assert response.code == 200 and response.body == b""
    assert int(response.headers["Content-Length"]) == provider.library.get(REF).size
    assert response.headers["ETag"] == provider.library.get(REF).etag
    assert [r.method for r in provider.stats.requests] == ["HEAD"]
    ranged = await api.fetch(path(calls["plain"]), "HEAD", headers={"Range": "bytes=0-9"})
    assert ranged.code == 206 and ranged.headers["Content-Length"] == "10"


@pytest.mark.parametrize(
    "header, first, last",
    [
        ("bytes=0-99", 0, 99),
        ("bytes=1000-", 1000, None),
        ("bytes=-500", -500, None),
        ("bytes=100-999999999999", 100, None),  # an end past the length is clamped
        ("bytes=0-0", 0, 0),
    ],
)
async def test_ranges(api, calls, provider, header, first, last):
    size = provider.library.get(REF).size
    first, last = first % size, size - 1 if last is None else last
    response = await api.get(path(calls["plain"]), headers={"Range": header})
    assert response.code == 206
    assert response.headers["Content-Range"] == f"bytes {first}-{last}/{size}"
    assert int(response.headers["Content-Length"]) == last - first + 1
    assert response.body == recording_bytes(provider, REF, first, last)
    assert provider.stats.requests[-1].range == header  # asked upstream as it was asked


async def test_seek_asks_the_provider_for_the_range_only(api, calls, provider):
    response = await api.get(path(calls["big"]), headers={"Range": "bytes=250000000-250065535"})
    assert response.code == 206 and len(response.body) == 65536
    [record] = provider.stats.requests
    assert record.range == "bytes=250000000-250065535" and record.bytes_sent == 65536


async def test_multiple_ranges_get_the_whole_recording(api, calls, provider):
    response = await api.get(path(calls["plain"]), headers={"Range": "bytes=0-1,10-20"})
    assert response.code == 200
    assert len(response.body) == provider.library.get(REF).size
    assert provider.stats.requests[-1].range is None


@pytest.mark.parametrize(
    "header", ["bytes=999999999-", "bytes=-0", "bytes=5-1", "bytes=abc", "items=0-1", "bytes=1-2-3"]
)
async def test_unsatisfiable_and_invalid_ranges(api, calls, provider, header):
    response = await api.get(path(calls["plain"]), headers={"Range": header})
    assert response.code == 416
    assert response.headers["Content-Range"] == f"bytes */{provider.library.get(REF).size}"
    assert response.json()["code"] == "range_not_satisfiable"


async def test_if_range(api, calls, provider):
    etag = provider.library.get(REF).etag
    size = provider.library.get(REF).size
    cases = [
        (etag, 206, 10),
        ('"stale"', 200, size),
        ("W/" + etag, 200, size),
        ("Sat, 01 Nov 2026 00:00:00 GMT", 200, size),
    ]
    for if_range, status, length in cases:
        response = await api.get(
            path(calls["plain"]), headers={"Range": "bytes=0-9", "If-Range": if_range}
        )
        assert (response.code, len(response.body)) == (status, length), if_range
    # A weak or date validator is not even sent upstream: the full recording is asked for.
    assert [r.range for r in provider.stats.requests] == ["bytes=0-9", "bytes=0-9", None, None]


async def test_not_found_is_one_answer(api, api_b, calls, provider):
    cases = [
        (api, path(str(uuid.uuid4()))),  # unknown call
        (api_b, path(calls["plain"])),  # another workspace's call
        (api, path(calls["none"])),  # a call without a recording
        (api, path(calls["missing"])),  # the provider has no such recording
        (api, path("not-a-uuid")),
    ]
    bodies = []
    for client, target in cases:
        response = await client.get(target)
        assert response.code == 404, target
        problem = response.json()
        problem.pop("requestId")
        bodies.append(problem)
    assert all(body == bodies[0] for body in bodies)
    provider.faults.set("404")
    assert (await api.get(path(calls["plain"]))).code == 404
    # Only the two calls that have a recording reference reached the provider.
    assert [r.ref for r in provider.stats.requests] == [MISSING_REF, REF]


async def test_authentication_required(anon, calls, provider):
    response = await anon.get(path(calls["plain"]))
    assert response.code == 401
    assert provider.stats.requests == []


@pytest.mark.parametrize(
    "kind, options, headers",
    [
        ("500", {}, {}),
        ("html200", {}, {}),
        ("redirect", {"redirect_to": "http://127.0.0.2:9"}, {}),
        ("stall", {"stall_seconds": 5}, {}),
        ("ignore_range", {}, {"Range": "bytes=0-9"}),
    ],
)
async def test_provider_failures_before_the_body_are_502(
    api, calls, provider, kind, options, headers
):
    provider.faults.set(kind, **options)
    started = asyncio.get_running_loop().time()
    response = await api.get(path(calls["plain"]), headers=headers)
    assert response.code == 502
    assert response.json()["code"] == "upstream_error"
    assert asyncio.get_running_loop().time() - started < 2
    assert len(provider.stats.requests) == 1  # no retry, no redirect followed


async def test_provider_unreachable_is_502(api, calls, provider):
    await provider.stop()
    response = await api.get(path(calls["plain"]))
    assert response.code == 502


async def test_reset_mid_body_truncates_the_transfer(origin, api, calls, provider, ws_a):
    provider.faults.set("reset", reset_after=1_000_000)
    port = int(origin.rsplit(":", 1)[1])
    status, headers, body, clean = await raw_get(
        port, path(calls["big"]), {"Authorization": f"Bearer {ws_a.key}"}
    )
    assert status == 200 and int(headers["content-length"]) == BIG_SIZE
    assert not clean and len(body) <= 1_000_000
    # The same for a range: the 206 is cut off, never completed.
    status, headers, body, clean = await raw_get(
        port, path(calls["big"]), {"Authorization": f"Bearer {ws_a.key}", "Range": "bytes=5000000-"}
    )
    assert status == 206 and not clean and len(body) <= 1_000_000


async def test_client_disconnect_stops_the_provider(origin, calls, provider, ws_a):
    port = int(origin.rsplit(":", 1)[1])
    process = psutil.Process()
    auth = {"Authorization": f"Bearer {ws_a.key}"}

    async def abandon() -> None:
        _, _, _, writer = await raw_get(port, path(calls["big"]), auth, read=100_000)
        writer.transport.abort()

    await abandon()
    await provider.stats.wait_idle()
    fds, tasks = process.num_fds(), len(asyncio.all_tasks())
    for _ in range(30):
        await abandon()
    await provider.stats.wait_idle()
    records = provider.stats.requests
    assert len(records) == 31 and all(r.aborted and not r.completed for r in records)
    assert max(r.bytes_sent for r in records) < 50_000_000  # nowhere near the 300 MB
    await wait_for(  # the connections' last callbacks run: then nothing is left over
        lambda: process.num_fds() <= fds and len(asyncio.all_tasks()) <= tasks,
        what="file descriptors and tasks given back",
    )


async def test_slow_client_holds_the_provider_back(origin, calls, provider, ws_a):
    port = int(origin.rsplit(":", 1)[1])
    _, _, _, writer = await raw_get(
        port,
        path(calls["big"]),
        {"Authorization": f"Bearer {ws_a.key}"},
        read=1000,
        rcvbuf=64 * 1024,
    )
    record = provider.stats.requests[-1]
    sent = await settled(lambda: record.bytes_sent)  # the client reads nothing more
    assert sent < 40_000_000  # socket buffers and the relay's bounded buffer, not the file
    writer.transport.abort()
    await provider.stats.wait_idle()


async def test_no_provider_configured_is_502(api, calls, app):
    del app.settings["upstream"]
    response = await api.get(path(calls["plain"]))
    assert response.code == 502


async def test_nothing_leaks_the_provider_host_or_credentials(
    origin, api, api_b, calls, provider, ws_a, caplog
):
    caplog.set_level(logging.DEBUG)
    responses = []
    scenarios = [
        (None, {}, "plain"),
        (None, {"Range": "bytes=5-9"}, "plain"),
        (None, {"Range": "bytes=999999999-"}, "plain"),
        (None, {"Range": "bytes=x"}, "plain"),
        (None, {}, "missing"),
        ("500", {}, "plain"),
        ("404", {}, "plain"),
        ("html200", {}, "plain"),
        ("redirect", {}, "plain"),
        ("stall", {}, "plain"),
        ("ignore_range", {"Range": "bytes=0-9"}, "plain"),
    ]
    for fault, headers, call in scenarios:
        provider.faults.clear()
        if fault:
            provider.faults.set(fault)
        responses.append(await api.get(path(calls[call]), headers=headers))
    provider.faults.set("reset", reset_after=10_000)
    port = int(origin.rsplit(":", 1)[1])
    _status, fields, _body, _ = await raw_get(
        port, path(calls["plain"]), {"Authorization": f"Bearer {ws_a.key}"}
    )
    texts = [f"{r.code} {dict(r.headers.get_all())} {r.body[:5000]!r}" for r in responses]
    texts.append(f"{fields}")
    texts += [
        record.getMessage() + (record.exc_text or "")
        for record in caplog.records
        if not record.name.startswith("simulated_provider")
    ]
    assert any("recording upstream failure" in text for text in texts)  # logs were captured
    basic = base64.b64encode(f"{ACCOUNT_ID}:{AUTH_TOKEN}".encode()).decode()
    for secret in (
        ACCOUNT_ID,
        AUTH_TOKEN,
        basic,
        PROVIDER_HOST,
        f":{provider.port}",
        "/2010-04-01",
        "Recordings/",
        "twilio",
    ):
        leaks = [text for text in texts if secret in text]
        assert not leaks, (secret, leaks[:2])


async def test_client_leaving_while_the_provider_stalls_closes_the_upstream(
    origin, calls, provider, ws_a, app
):
    # A long header timeout: only the client's disconnect can end the wait early.
    app.settings["upstream"] = UpstreamClient(
        provider.base_url, ACCOUNT_ID, AUTH_TOKEN, header_timeout=30
    )
    provider.faults.set("stall", stall_seconds=30)
    port = int(origin.rsplit(":", 1)[1])
    _reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET {path(calls['plain'])} HTTP/1.1\r\nHost: api\r\n"
        f"Authorization: Bearer {ws_a.key}\r\n\r\n".encode()
    )

    def upstream_connections():
        return [
            c
            for c in psutil.Process().net_connections("tcp")
            if c.raddr and c.raddr.port == provider.port and c.status == "ESTABLISHED"
        ]

    for _ in range(100):
        if upstream_connections():
            break
        await asyncio.sleep(0.01)
    assert upstream_connections()
    writer.transport.abort()
    for _ in range(500):
        if not upstream_connections():
            break
        await asyncio.sleep(0.01)
    # dropped within seconds (well under one on an idle machine), not after 30 s
    assert not upstream_connections()


@pytest.mark.parametrize(
    "last", ["9223372036854775807", "18446744073709551615", "9" * 40, "1" + "0" * 5000]
)
async def test_an_end_of_any_length_past_the_end_is_the_last_byte(api, calls, provider, last):
    """RFC 9110 14.1.2: a last position past the end is clamped, whatever its digits."""
    size = provider.library.get(REF).size
    for first in (0, 10):
        response = await api.get(path(calls["plain"]), headers={"Range": f"bytes={first}-{last}"})
        assert response.code == 206, response
        assert response.headers["Content-Range"] == f"bytes {first}-{size - 1}/{size}"
        assert len(response.body) == size - first


@pytest.mark.parametrize(
    "header, expected",
    [
        ("bytes=0000000000000000000000000010-0000000000000000000000000019", ByteRange(10, 19)),
        ("bytes=0-" + "9" * 19, ByteRange(0, None)),
        ("bytes=" + "9" * 19 + "-", ByteRange(10**18)),  # past the end of anything
        ("bytes=-" + "9" * 30, ByteRange(0)),  # a suffix longer than anything: all of it
        ("bytes=5-" + "0" * 30 + "4", None),  # an end before its start, however written
    ],
)
def test_positions_of_any_length_are_read_without_converting_them(header, expected):
    if expected is None:
        with pytest.raises(InvalidRange):
            parse_range(header)
    else:
        assert parse_range(header) == expected


async def test_a_start_of_any_length_past_the_end_is_416(api, calls, provider):
    size = provider.library.get(REF).size
    for header in ("bytes=" + "9" * 19 + "-", "bytes=" + "9" * 5000 + "-" + "9" * 5001):
        response = await api.get(path(calls["plain"]), headers={"Range": header})
        assert response.code == 416 and response.headers["Content-Range"] == f"bytes */{size}"


def test_only_ascii_digits_make_a_range():
    with pytest.raises(InvalidRange):
        parse_range("bytes=\u0663-9")  # ARABIC-INDIC DIGIT THREE


# --- stalled readers and the workspace's stream slots ------------------------------------------


def upstream_connections(provider) -> list:
    return [
        c
        for c in psutil.Process().net_connections("tcp")
        if c.raddr and c.raddr.port == provider.port and c.status == "ESTABLISHED"
    ]


async def test_a_stalled_reader_is_cut_and_the_upstream_closed(
    origin, app, config, calls, provider, ws_a
):
    """A client that stays connected but takes nothing for stream_stall_seconds is cut, and the
    provider's download is closed with it."""
    app.settings["config"] = config.replace(stream_stall_seconds=0.5)
    port = int(origin.rsplit(":", 1)[1])
    _, _, _, writer = await raw_get(
        port,
        path(calls["big"]),
        {"Authorization": f"Bearer {ws_a.key}"},
        read=1000,
        rcvbuf=16 * 1024,
    )
    assert upstream_connections(provider)
    await provider.stats.wait_idle(timeout=10)  # ends when the API drops the download
    record = provider.stats.requests[-1]
    assert record.aborted and record.bytes_sent < 40_000_000
    assert not upstream_connections(provider)
    assert app.settings["stream_slots"].open == {}
    writer.transport.abort()


async def test_a_workspace_has_a_bounded_number_of_open_streams(
    origin, app, config, store, calls, provider, ws_a, api, api_b
):
    """Recordings and timelines share the limit; HEAD and other workspaces do not count; a
    slot is free again as soon as its stream ends."""
    from tests.handlers.test_activities import note, prospect

    app.settings["config"] = config.replace(max_streams_per_workspace=2)
    port = int(origin.rsplit(":", 1)[1])
    auth = {"Authorization": f"Bearer {ws_a.key}"}
    ada = await prospect(store, ws_a)
    await store.activities.insert_documents(ws_a.id, [note(ws_a, ada["id"], 1)])
    held = []
    for _ in range(2):
        held.append((await raw_get(port, path(calls["big"]), auth, read=1000, rcvbuf=16 * 1024))[3])
    for target in (
        path(calls["big"]),
        path(calls["plain"]),
        f"/v1/prospect-activities?prospectId={ada['id']}",
    ):
        response = await api.get(target)
        assert response.code == 429, response
        assert response.json()["code"] == "too_many_streams"
        assert int(response.headers["Retry-After"]) > 0
    assert (await api.fetch(path(calls["plain"]), "HEAD")).code == 200
    assert (await api.get(path(calls["none"]))).code == 404  # no recording: no stream
    assert (await api_b.get("/v1/users")).code == 200
    held.pop().close()
    for _ in range(100):
        response = await api.get(path(calls["plain"]))
        if response.code != 429:
            break
        await asyncio.sleep(0.02)
    assert response.code == 200 and response.body == recording_bytes(
        provider, REF, 0, len(response.body) - 1
    )
    held.pop().close()
    await provider.stats.wait_idle()
    assert app.settings["stream_slots"].open == {}


async def test_a_recording_a_dialer_records_streams_however_its_hex_is_cased(
    api, dialer, store, ws_a, provider
):
    """POST /v1/calls with a recordingSid, and PATCH attaching one later: the provider is asked
    for the recording it named (RE + its hex digits in lower case, as the provider spells
    them), whether the dialer sent the hex in upper or lower case."""
    prospect = await store.prospects.create(ws_a.id, {"phoneNumber": "+14155550123"})
    body = {
        "userId": ws_a.users[0]["id"],
        "prospectId": prospect["id"],
        "direction": "outbound",
        "disposition": "connected",
        "fromNumber": "+12125550142",
        "toNumber": "+14155550123",
        "startedAt": "2026-01-05T10:00:00Z",
        "answeredAt": "2026-01-05T10:00:10Z",
        "endedAt": "2026-01-05T10:04:10Z",
    }
    posted = await dialer.post(
        "/v1/calls",
        {**body, "recordingSid": "RE" + REF[2:].upper(), "recordingDurationSeconds": 240},
    )
    later = await dialer.post(
        "/v1/calls",
        {**body, "providerCallSid": "CA" + "0b" * 16},  # no recording yet
    )
    assert (posted.code, later.code) == (201, 201)
    patched = await dialer.patch(
        f"/v1/calls/{later.json()['call']['id']}",
        {"recordingSid": REF, "recordingDurationSeconds": 240},
    )
    assert patched.code == 200, patched
    size = provider.library.get(REF).size
    for answer in (posted, later):
        response = await api.get(path(answer.json()["call"]["id"]))
        assert response.code == 200, response
        assert response.body == recording_bytes(provider, REF, 0, size - 1)
    assert [r.ref for r in provider.stats.requests] == [REF, REF]
