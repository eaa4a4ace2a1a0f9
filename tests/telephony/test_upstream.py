"""The API's provider client against the simulated provider (and a few hand-written answers
for protocol corner cases), all on real loopback sockets."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable

import psutil
import pytest

from telephony.errors import UpstreamError, UpstreamNotFound, UpstreamRangeNotSatisfiable
from telephony.simulated_provider import Recording, make_ref, start_provider
from telephony.upstream import UpstreamClient
from tests.helpers import settled, wait_for

REF = make_ref("call-1")


def virtual_bytes(recording: Recording, start: int, end: int) -> bytes:
    out, position = [], start
    while position <= end:
        piece = recording.read(position, end + 1 - position)
        out.append(piece)
        position += len(piece)
    return b"".join(out)


def assert_clean(exc: BaseException, provider) -> None:
    """An error message never names the provider's host, port, path or credentials."""
    text = f"{exc!s} {exc!r} {exc.__cause__!r} {exc.__context__!r}"
    for secret in (
        provider.state.account_id,
        provider.state.auth_token,
        provider.host,
        str(provider.port),
        "/2010-04-01",
        "Recordings",
    ):
        assert secret not in text


async def read_all(response) -> bytes:
    return b"".join([chunk async for chunk in response])


async def test_full_recording(provider, upstream) -> None:
    recording = provider.library.get(REF)
    async with await upstream.open(REF) as response:
        assert response.status == 200
        assert response.content_length == recording.size == response.complete_length
        assert response.etag == recording.etag
        assert response.content_range is None
        body = await read_all(response)
    assert body == virtual_bytes(recording, 0, recording.size - 1)
    [record] = provider.stats.requests
    assert record.range is None and record.completed


@pytest.mark.parametrize("header", ["bytes=0-99", "bytes=1000-", "bytes=-500", "bytes=5-99999999"])
async def test_range_is_asked_upstream_exactly(provider, upstream, header) -> None:
    recording = provider.library.get(REF)
    async with await upstream.open(REF, range_header=header) as response:
        body = await read_all(response)
    assert response.status == 206
    cr = response.content_range
    assert cr.complete_length == recording.size == response.complete_length
    assert body == virtual_bytes(recording, cr.start, cr.end)
    assert len(body) == response.content_length == cr.end - cr.start + 1
    [record] = provider.stats.requests
    assert record.range == header and record.bytes_sent == len(body)


async def test_seek_in_long_recording_downloads_only_the_range(provider, upstream) -> None:
    ref = make_ref("long")
    provider.library.add(ref, 400_000_000)
    async with await upstream.open(ref, range_header="bytes=399000000-399000999") as response:
        assert len(await read_all(response)) == 1000
    assert provider.stats.requests[-1].bytes_sent == 1000


async def test_if_range(provider, upstream) -> None:
    etag = provider.library.get(REF).etag
    async with await upstream.open(REF, range_header="bytes=0-9", if_range=etag) as response:
        assert response.status == 206 and len(await read_all(response)) == 10
    # A stale validator: the provider sends everything, which is no contradiction.
    async with await upstream.open(REF, range_header="bytes=0-9", if_range='"old"') as response:
        assert response.status == 200
        assert len(await read_all(response)) == provider.library.get(REF).size
    assert provider.stats.requests[0].if_range == etag


async def test_head_and_content_length(provider, upstream) -> None:
    assert await upstream.content_length(REF) == provider.library.get(REF).size
    async with await upstream.open(REF, method="HEAD") as response:
        assert response.status == 200 and await read_all(response) == b""
    assert [r.method for r in provider.stats.requests] == ["HEAD", "HEAD"]


async def test_unsatisfiable_range(provider, upstream) -> None:
    with pytest.raises(UpstreamRangeNotSatisfiable) as caught:
        await upstream.open(REF, range_header="bytes=999999999-")
    assert caught.value.complete_length == provider.library.get(REF).size


@pytest.mark.parametrize("how", ["missing", "fault"])
async def test_not_found(provider, upstream, how) -> None:
    if how == "missing":
        provider.library.mark_missing(REF)
    else:
        provider.faults.set("404")
    with pytest.raises(UpstreamNotFound) as caught:
        await upstream.open(REF)
    assert_clean(caught.value, provider)


async def test_malformed_reference_is_never_requested(provider, upstream) -> None:
    for ref in ["../../secrets", "RE1?x=1", "", "a" * 200]:
        with pytest.raises(UpstreamNotFound):
            await upstream.open(ref)
    assert provider.stats.requests == []


@pytest.mark.parametrize(
    "kind, options, range_header, says",
    [
        ("500", {}, None, "answered 500"),
        ("html200", {}, None, "non-audio content type"),
        ("redirect", {}, None, "redirects are not followed"),
        ("ignore_range", {}, "bytes=0-9", "ignored the requested range"),
        # The provider answers normally once its stall ends: only the header timeout (2 s in
        # these tests) can end the request with this error.
        ("stall", {"stall_seconds": 30}, None, "sent no response in time"),
    ],
)
async def test_faults_before_the_body(provider, upstream, kind, options, range_header, says):
    provider.faults.set(kind, **options)
    with pytest.raises(UpstreamError, match=says) as caught:
        await upstream.open(REF, range_header=range_header)
    assert_clean(caught.value, provider)
    assert len(provider.stats.requests) == 1  # no retry, no redirect followed


async def test_redirect_is_not_followed(provider, upstream) -> None:
    decoy = await start_provider(
        "127.0.0.2", 0, account_id=provider.state.account_id, auth_token=provider.state.auth_token
    )
    try:
        provider.faults.set("redirect", redirect_to=decoy.base_url)
        with pytest.raises(UpstreamError):
            await upstream.open(REF)
        assert decoy.stats.requests == []
    finally:
        await decoy.stop()


async def test_wrong_credentials(provider) -> None:
    client = UpstreamClient(provider.base_url, provider.state.account_id, "not-the-token")
    with pytest.raises(UpstreamError) as caught:
        await client.open(REF)
    assert "401" in str(caught.value)
    assert_clean(caught.value, provider)


async def test_connection_refused(provider) -> None:
    port = provider.port
    await provider.stop()
    client = UpstreamClient(f"http://127.0.0.1:{port}", "AC1", "secret-token")
    with pytest.raises(UpstreamError) as caught:
        await client.open(REF)
    assert str(port) not in str(caught.value) and "127.0.0.1" not in str(caught.value)


async def test_reset_mid_body(provider, upstream) -> None:
    provider.faults.set("reset", reset_after=300_000)
    received = 0
    async with await upstream.open(REF) as response:
        assert response.status == 200  # the head was fine: the failure comes mid-body
        with pytest.raises(UpstreamError) as caught:
            async for chunk in response:
                received += len(chunk)
    assert 0 < received <= 300_000
    assert_clean(caught.value, provider)


async def test_backpressure_and_early_close(provider, upstream) -> None:
    ref = make_ref("huge")
    provider.library.add(ref, 500_000_000)
    response = await upstream.open(ref)
    await response.__anext__()
    record = provider.stats.requests[-1]
    # A consumer that does not read: the provider must come to a stop.
    sent = await settled(lambda: record.bytes_sent)
    assert sent < 32_000_000  # socket buffers and a few chunks, not the file
    await response.aclose()
    await provider.stats.wait_idle(2.0)
    assert record.aborted and not record.completed


async def test_a_cancellation_is_never_lost_whenever_it_lands(provider) -> None:
    """A request is cancelled (its client left) at every step of the loop in turn, the
    connection's completion included: each ends at once, not after the provider's stall."""
    provider.library.add(REF, 10_000)
    provider.faults.set("stall", stall_seconds=30)
    client = UpstreamClient(
        provider.base_url, provider.state.account_id, provider.state.auth_token, header_timeout=30
    )
    late = []
    for steps in range(40):
        task = asyncio.ensure_future(client.open(REF))
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        done, _ = await asyncio.wait([task], timeout=10)  # a lost one would wait out the stall
        if not done:
            late.append(steps)
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert late == []


async def test_no_leaks_after_many_early_closes(provider, upstream) -> None:
    ref = make_ref("huge")
    provider.library.add(ref, 100_000_000)
    process = psutil.Process()

    async def one() -> None:
        async with await upstream.open(ref, range_header="bytes=1000-") as response:
            await response.__anext__()

    await one()
    await provider.stats.wait_idle()
    fds, tasks = process.num_fds(), len(asyncio.all_tasks())
    for _ in range(40):
        await one()
    # Abandoning an iteration without reading, from a task that gets cancelled:
    tasks_cancelled = [asyncio.ensure_future(one()) for _ in range(10)]
    await asyncio.sleep(0.05)
    for task in tasks_cancelled:
        task.cancel()
    await asyncio.gather(*tasks_cancelled, return_exceptions=True)
    await provider.stats.wait_idle()
    await wait_for(  # the connections' last callbacks run: then nothing is left over
        lambda: len(asyncio.all_tasks()) == tasks and process.num_fds() <= fds,
        what="file descriptors and tasks given back",
    )
    assert all(r.aborted for r in provider.stats.requests)


# --- hand-written upstream answers -----------------------------------------------------------

Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def scripted(script: Script) -> tuple[asyncio.AbstractServer, UpstreamClient]:
    async def handle(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        try:
            await script(reader, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = UpstreamClient(
        f"http://127.0.0.1:{port}", "AC1", "tok", header_timeout=0.5, idle_timeout=0.3
    )
    return server, client


def answer(head: str, body: bytes = b"", reset: bool = False, pause: float = 0) -> Script:
    async def script(reader, writer):
        writer.write(head.replace("\n", "\r\n").encode("latin-1") + b"\r\n" + body)
        await writer.drain()
        if pause:
            await asyncio.sleep(pause)
        if reset:  # SO_LINGER 0: close with a TCP RST, not a FIN
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()

    return script


AUDIO = "HTTP/1.1 200 OK\nContent-Type: audio/mpeg\n"


@pytest.mark.parametrize(
    "script, range_header",
    [
        # A 206 nobody asked for, or one that disagrees with itself.
        (
            answer(
                "HTTP/1.1 206 Partial\nContent-Type: audio/mpeg\nContent-Range: bytes 0-9/100\n"
                "Content-Length: 10\n",
                b"x" * 10,
            ),
            None,
        ),
        (
            answer(
                "HTTP/1.1 206 Partial\nContent-Type: audio/mpeg\nContent-Length: 10\n", b"x" * 10
            ),
            "bytes=0-9",
        ),
        (
            answer(
                "HTTP/1.1 206 Partial\nContent-Type: audio/mpeg\nContent-Range: bytes 0-9/100\n"
                "Content-Length: 11\n",
                b"x" * 11,
            ),
            "bytes=0-9",
        ),
        (
            answer(
                "HTTP/1.1 206 Partial\nContent-Type: audio/mpeg\nContent-Range: bytes 0-100/100\n"
                "Content-Length: 101\n",
                b"x" * 101,
            ),
            "bytes=0-",
        ),
        (
            answer(
                "HTTP/1.1 200 OK\nContent-Type: application/octet-stream\nContent-Length: 1\n", b"x"
            ),
            None,
        ),
        (answer("HTTP/1.1 200 OK\nContent-Type: audio/mpeg\nContent-Length: nine\n"), None),
        (
            answer("HTTP/1.1 301 Moved\nLocation: http://elsewhere.example/\nContent-Length: 0\n"),
            None,
        ),
        # Numbers Python's int() refuses (a superscript digit; over 4300 digits) once escaped
        # as ValueError.
        (answer(AUDIO + "Content-Length: \xb2\n"), None),
        (
            answer(
                "HTTP/1.1 206 Partial\nContent-Type: audio/mpeg\nContent-Length: 10\n"
                f"Content-Range: bytes 0-9/{'9' * 5000}\n",
                b"x" * 10,
            ),
            "bytes=0-9",
        ),
        (answer("garbage\n"), None),
        (answer("", reset=True), None),
    ],
)
async def test_bad_heads(script, range_header) -> None:
    server, client = await scripted(script)
    try:
        with pytest.raises(UpstreamError):
            await client.open(REF, range_header=range_header)
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize(
    "script, says",
    [
        # Stalls mid-body for longer than the idle timeout (0.3 s), then closes early: only
        # the idle timeout ends the read as a stall.
        (answer(AUDIO + "Content-Length: 100\n", b"x" * 10, pause=2), "stalled"),
        # no last chunk
        (answer(AUDIO + "Transfer-Encoding: chunked\n", b"a\r\nxxxxxxxxxx\r\n"), "broke off"),
        # close-delimited, then a TCP RST
        (answer(AUDIO + "Connection: close\n", b"x" * 10, reset=True), "broke off"),
        (answer(AUDIO + "Content-Length: 100\n", b"x" * 10), "broke off"),  # closed early
    ],
)
async def test_broken_bodies(script, says) -> None:
    server, client = await scripted(script)
    try:
        response = await client.open(REF)
        with pytest.raises(UpstreamError, match=says):
            await read_all(response)
        await response.aclose()
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize(
    "script, size",
    [
        (answer(AUDIO + "Transfer-Encoding: chunked\n", b"a\r\nxxxxxxxxxx\r\n0\r\n\r\n"), 10),
        (answer(AUDIO + "Connection: close\n", b"x" * 10), 10),  # close-delimited, clean
        (answer("HTTP/1.1 100 Continue\n\n" + AUDIO + "Content-Length: 3\n", b"abc"), 3),
    ],
)
async def test_good_unusual_bodies(script, size) -> None:
    server, client = await scripted(script)
    try:
        async with await client.open(REF) as response:
            assert response.status == 200
            assert len(await read_all(response)) == size
    finally:
        server.close()
        await server.wait_closed()


async def test_unsatisfiable_range_with_an_unreadable_length() -> None:
    server, client = await scripted(
        answer(f"HTTP/1.1 416 Range Not Satisfiable\nContent-Range: bytes */{'1' * 5000}\n")
    )
    try:
        with pytest.raises(UpstreamRangeNotSatisfiable) as caught:
            await client.open(REF, range_header="bytes=10-")
        assert caught.value.complete_length is None
    finally:
        server.close()
        await server.wait_closed()


def test_configuration_is_checked() -> None:
    with pytest.raises(ValueError):
        UpstreamClient("ftp://provider", "AC1", "tok")
    assert "tok" not in repr(UpstreamClient("http://provider.example", "AC1", "tok"))
