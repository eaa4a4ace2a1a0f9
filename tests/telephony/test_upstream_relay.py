"""The provider client's relay machinery: kept-alive connections, borrowed body buffers and the
kernel splice, against the simulated provider and hand-written servers on loopback."""

from __future__ import annotations

import asyncio
import socket

import pytest

from telephony.errors import DownstreamClosed, UpstreamError
from telephony.simulated_provider import Recording, make_ref
from telephony.splice import SPLICE
from telephony.upstream import UpstreamClient

REF = make_ref("relayed call")


class CountingServer:
    """A loopback HTTP/1.1 server that answers every request on a connection with `body`
    (audio, Content-Length) and counts the connections it accepted."""

    def __init__(self, body: bytes, *, close_after: int | None = None, pause_after: int = 0):
        self.body = body
        self.close_after = close_after  # answers per connection before closing it
        self.pause_after = pause_after  # stop sending after this many body bytes (a stall)
        self.connections = 0
        self.server: asyncio.AbstractServer | None = None

    async def start(self) -> UpstreamClient:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return UpstreamClient(
            f"http://127.0.0.1:{port}",
            "AC1",
            "tok",
            header_timeout=0.5,
            idle_timeout=0.3,
            buffer_bytes=256 * 1024,
        )

    async def handle(self, reader, writer) -> None:
        self.connections += 1
        answered = 0
        try:
            while self.close_after is None or answered < self.close_after:
                await reader.readuntil(b"\r\n\r\n")
                head = (
                    f"HTTP/1.1 200 OK\r\nContent-Type: audio/mpeg\r\n"
                    f"Content-Length: {len(self.body)}\r\n\r\n"
                ).encode()
                if self.pause_after:
                    writer.write(head + self.body[: self.pause_after])
                    await writer.drain()
                    await asyncio.sleep(5)
                writer.write(head + self.body)
                await writer.drain()
                answered += 1
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        self.server.close()
        await self.server.wait_closed()


def virtual_bytes(recording: Recording, start: int, end: int) -> bytes:
    return b"".join(recording.read(p, end + 1 - p) for p in range(start, end + 1, 256 * 1024))


async def read_all(response) -> bytes:
    return b"".join([chunk async for chunk in response])


async def test_connections_are_kept_alive_between_responses() -> None:
    server = CountingServer(b"x" * 2_000_000)
    client = await server.start()
    try:
        for _ in range(3):
            async with await client.open(REF) as response:
                assert await read_all(response) == server.body
        assert server.connections == 1
        # A response abandoned before its end never goes back to the pool.
        response = await client.open(REF)
        await response.next_pieces()
        response.close()
        async with await client.open(REF) as response:
            assert await read_all(response) == server.body
        assert server.connections == 2
    finally:
        await server.stop()


async def test_a_pooled_connection_the_provider_closed_is_replaced() -> None:
    server = CountingServer(b"y" * 5000, close_after=1)
    client = await server.start()
    try:
        for _ in range(3):
            async with await client.open(REF) as response:
                assert await read_all(response) == server.body
            await asyncio.sleep(0.05)  # the server's close reaches the idle connection
        assert server.connections == 3
        # Closed under our feet without us noticing yet: the request is sent once more.
        async with await client.open(REF) as response:
            await read_all(response)
        idle = client._idle[-1]
        idle.pause()  # so its close goes unnoticed until it is reused (begin resumes reading)
        await asyncio.sleep(0.05)
        async with await client.open(REF) as response:
            assert await read_all(response) == server.body
        assert server.connections == 5  # asked again on a new connection
    finally:
        await server.stop()


async def test_borrowed_pieces_are_the_body_in_order(provider, upstream) -> None:
    ref = make_ref("medium")
    recording = provider.library.add(ref, 3_000_000)
    received = bytearray()
    async with await upstream.open(ref) as response:
        while pieces := await response.next_pieces():
            for piece in pieces:
                received += piece  # a borrowed piece is read before the next call
    assert bytes(received) == virtual_bytes(recording, 0, recording.size - 1)


@pytest.mark.skipif(not SPLICE, reason="splice(2) is Linux-only")
@pytest.mark.parametrize(
    "header, start, end", [(None, 0, 6_999_999), ("bytes=1234567-5678900", 1234567, 5678900)]
)
async def test_splice_moves_the_exact_bytes(provider, upstream, header, start, end) -> None:
    ref = make_ref("spliced")
    recording = provider.library.add(ref, 7_000_000)
    left, right = socket.socketpair()
    left.setblocking(False)
    received = bytearray()
    loop = asyncio.get_running_loop()

    async def drain() -> None:
        while len(received) < end - start + 1:
            data = await loop.sock_recv(right, 1 << 20)
            if not data:
                return
            received.extend(data)

    reader = asyncio.ensure_future(drain())
    right.setblocking(False)
    try:
        async with await upstream.open(ref, range_header=header) as response:
            first = await response.next_pieces()
            for piece in first:
                await loop.sock_sendall(left, piece)
            assert response.can_splice
            moved = await response.splice_to(left, lambda: False)
            assert await response.next_pieces() == []
        await asyncio.wait_for(reader, 5)
        assert moved + sum(len(p) for p in first) == end - start + 1
        assert bytes(received) == virtual_bytes(recording, start, end)
        # The connection went back to the pool and carries the next request.
        async with await upstream.open(ref, range_header="bytes=0-9") as response:
            assert await read_all(response) == virtual_bytes(recording, 0, 9)
    finally:
        reader.cancel()
        left.close()
        right.close()


@pytest.mark.skipif(not SPLICE, reason="splice(2) is Linux-only")
async def test_splice_stops_on_a_stalled_provider_and_on_a_gone_client() -> None:
    server = CountingServer(b"z" * 2_000_000, pause_after=600_000)
    client = await server.start()
    left, right = socket.socketpair()
    left.setblocking(False)
    right.setblocking(False)
    loop = asyncio.get_running_loop()

    async def drain() -> None:  # a client that reads everything it is sent
        while await loop.sock_recv(right, 1 << 20):
            pass

    reader = asyncio.ensure_future(drain())
    try:
        response = await client.open(REF)
        await response.next_pieces()
        assert response.can_splice
        with pytest.raises(UpstreamError, match="stalled"):
            await response.splice_to(left, lambda: False)
        response.close()
        # The client's socket closing ends the splice too, and drops the provider.
        server.pause_after = 0
        response = await client.open(REF)
        await response.next_pieces()
        assert response.can_splice
        reader.cancel()
        right.close()
        with pytest.raises(DownstreamClosed):
            await response.splice_to(left, lambda: False)
        response.close()
    finally:
        reader.cancel()
        left.close()
        right.close()
        await server.stop()


@pytest.mark.skipif(not SPLICE, reason="splice(2) is Linux-only")
async def test_splice_gives_up_on_a_client_that_stops_reading() -> None:
    server = CountingServer(b"s" * 8_000_000)
    client = await server.start()
    left, right = socket.socketpair()  # nobody reads `right`
    left.setblocking(False)
    try:
        response = await client.open(REF)
        await response.next_pieces()
        assert response.can_splice
        with pytest.raises(DownstreamClosed, match="the client stalled"):
            await response.splice_to(left, lambda: False, client_timeout=0.3)
        response.close()
    finally:
        left.close()
        right.close()
        await server.stop()
