"""The recording relay's fast paths end to end: a large body (spliced on Linux) and seeks arrive
byte for byte, and one client connection carries a spliced response and then the next request."""

from __future__ import annotations

import asyncio

import pytest

from telephony.simulated_provider import make_ref, start_provider
from telephony.upstream import UpstreamClient
from tests.helpers import add_call

ACCOUNT_ID = "AC" + "4e" * 16
AUTH_TOKEN = "relay-secret-51b7c2"
REF = make_ref("a relayed call")
SIZE = 6_000_000


@pytest.fixture
def provider(io_loop):
    server = io_loop.run_sync(lambda: start_provider(account_id=ACCOUNT_ID, auth_token=AUTH_TOKEN))
    server.library.add(REF, SIZE)
    yield server
    io_loop.run_sync(server.stop)


@pytest.fixture
def app_services(provider):
    return {
        "upstream": UpstreamClient(
            provider.base_url,
            ACCOUNT_ID,
            AUTH_TOKEN,
            # What this test checks is the bytes, not the timeouts: long enough for a busy
            # machine (four test workers on two cores) not to cut a healthy local provider off.
            connect_timeout=2,
            header_timeout=2.0,
            idle_timeout=2.0,
        )
    }


def expected(provider, start: int, end: int) -> bytes:
    recording, out = provider.library.get(REF), []
    while start <= end:
        out.append(recording.read(start, end + 1 - start))
        start += len(out[-1])
    return b"".join(out)


async def exchange(reader, writer, target: str, key: str, extra: str = ""):
    writer.write(
        f"GET {target} HTTP/1.1\r\nHost: api\r\nAuthorization: Bearer {key}\r\n{extra}\r\n".encode()
    )
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    fields = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:] if h)}
    body = await reader.readexactly(int(fields["content-length"]))
    return int(head[0].split()[1]), fields, body


async def test_large_bodies_and_seeks_arrive_exactly_on_one_connection(
    origin, store, ws_a, provider
):
    call_id = await add_call(store, ws_a, REF)
    port = int(origin.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    target = f"/v1/calls/{call_id}/recording"
    try:
        status, fields, body = await exchange(reader, writer, target, ws_a.key)
        assert status == 200 and body == expected(provider, 0, SIZE - 1)
        # The same client connection carries the next requests (keep-alive after a splice).
        status, fields, body = await exchange(
            reader, writer, target, ws_a.key, "Range: bytes=2000000-3048575\r\n"
        )
        assert status == 206 and fields["content-range"] == f"bytes 2000000-3048575/{SIZE}"
        assert body == expected(provider, 2_000_000, 3_048_575)
        status, _, body = await exchange(reader, writer, target, ws_a.key, "Range: bytes=-10\r\n")
        assert status == 206 and body == expected(provider, SIZE - 10, SIZE - 1)
    finally:
        writer.close()
    assert [r.completed for r in provider.stats.requests] == [True, True, True]
