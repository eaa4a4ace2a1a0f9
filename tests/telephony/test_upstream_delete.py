"""`UpstreamClient.delete_recording` against the simulated provider (and a few hand-written
answers), all on real loopback sockets."""

from __future__ import annotations

import asyncio
import logging

import pytest

from telephony.errors import UpstreamError, UpstreamNotFound
from telephony.simulated_provider import make_ref
from telephony.upstream import UpstreamClient
from tests.telephony.test_upstream import answer, assert_clean, read_all, scripted

REF = make_ref("call-1")


async def test_delete_then_the_recording_is_gone(provider, upstream) -> None:
    await upstream.delete_recording(REF)
    assert provider.stats.deleted == [REF]
    [record] = provider.stats.deletes_of(REF)
    assert record.status == 204
    with pytest.raises(UpstreamNotFound):
        await upstream.open(REF)
    with pytest.raises(UpstreamNotFound):
        await upstream.open(REF, method="HEAD")


async def test_a_recording_already_gone_is_success(provider, upstream) -> None:
    await upstream.delete_recording(REF)
    await upstream.delete_recording(REF)  # the provider answers 404: gone all the same
    assert [r.status for r in provider.stats.deletes_of(REF)] == [204, 404]
    provider.library.mark_missing(make_ref("never"))
    await upstream.delete_recording(make_ref("never"))


async def test_delete_after_a_kept_alive_download(provider, upstream) -> None:
    """A delete may go out on the connection a finished download left in the pool."""
    async with await upstream.open(REF, range_header="bytes=0-99") as response:
        assert len(await read_all(response)) == 100
    await upstream.delete_recording(REF)
    assert provider.stats.deleted == [REF]
    other = make_ref("call-2")
    await upstream.delete_recording(other)  # and after a delete, whose connection is not kept
    assert provider.stats.deleted == [REF, other]


async def test_malformed_reference_is_never_sent(provider, upstream) -> None:
    for ref in ["../../secrets", "RE1?x=1", "", "a" * 200, "RE1.json/../x"]:
        with pytest.raises(UpstreamNotFound):
            await upstream.delete_recording(ref)
    assert provider.stats.requests == []


@pytest.mark.parametrize(
    "kind, options, says",
    [
        ("500", {}, "answered 500"),
        ("503", {}, "answered 503"),
        ("reset", {}, "closed the connection early"),
        # Only the header timeout (2 s in these tests) can end a stalled delete.
        ("stall", {"stall_seconds": 30}, "sent no response in time"),
    ],
)
async def test_provider_failure_raises_and_keeps_the_recording(
    provider, upstream, caplog, kind, options, says
) -> None:
    caplog.set_level(logging.DEBUG)
    provider.faults.set_delete(kind, **options)
    with pytest.raises(UpstreamError, match=says) as caught:
        await upstream.delete_recording(REF)
    assert_clean(caught.value, provider)
    assert REF not in str(caught.value)
    assert provider.library.get(REF) is not None
    assert provider.stats.deleted == []
    # Once the provider recovers, the caller's next try deletes it.
    provider.faults.clear()
    await upstream.delete_recording(REF)
    assert provider.stats.deleted == [REF]
    for record in caplog.records:
        line = record.getMessage()
        if record.name == "simulated_provider":
            continue  # the stand-in's own access log, not the API's
        for secret in (provider.state.auth_token, provider.state.account_id, str(provider.port)):
            assert secret not in line


async def test_wrong_credentials_raise(provider) -> None:
    client = UpstreamClient(provider.base_url, provider.state.account_id, "not-the-token")
    with pytest.raises(UpstreamError) as caught:
        await client.delete_recording(REF)
    assert "401" in str(caught.value)
    assert_clean(caught.value, provider)
    assert provider.library.get(REF) is not None


async def test_connection_refused(provider) -> None:
    port = provider.port
    await provider.stop()
    client = UpstreamClient(f"http://127.0.0.1:{port}", "AC1", "secret-token", connect_timeout=1)
    with pytest.raises(UpstreamError) as caught:
        await client.delete_recording(REF)
    text = f"{caught.value!s} {caught.value!r}"
    assert str(port) not in text and "127.0.0.1" not in text and "secret-token" not in text


@pytest.mark.parametrize(
    "head",
    [
        "HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Length: 2\n",
        "HTTP/1.1 302 Found\nLocation: http://elsewhere.example/\nContent-Length: 0\n",
        "HTTP/1.1 403 Forbidden\nContent-Length: 0\n",
        "HTTP/1.1 429 Too Many Requests\nRetry-After: 1\nContent-Length: 0\n",
    ],
)
async def test_any_other_answer_raises(head) -> None:
    server, client = await scripted(answer(head, b"{}" if "200" in head else b""))
    try:
        with pytest.raises(UpstreamError):
            await client.delete_recording(REF)
    finally:
        server.close()
        await server.wait_closed()


async def test_the_request_sent() -> None:
    """Exactly Twilio's request: DELETE of the .json resource, Basic auth, no body."""
    seen: list[bytes] = []

    async def handle(reader, writer):
        seen.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        client = UpstreamClient(f"http://127.0.0.1:{port}/base", "AC1", "tok")
        await client.delete_recording(REF)
    finally:
        server.close()
        await server.wait_closed()
    request = seen[0].decode("latin-1")
    path = f"/base/2010-04-01/Accounts/AC1/Recordings/{REF}.json"
    assert request.startswith(f"DELETE {path} HTTP/1.1\r\n")
    assert "Authorization: Basic QUMxOnRvaw==\r\n" in request  # base64 of AC1:tok
    assert "Content-Length: 0\r\n" in request
