"""The simulated telephony provider, spoken to over real loopback HTTP."""

from __future__ import annotations

import asyncio
import base64

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPResponse
from tornado.simple_httpclient import HTTPTimeoutError

from telephony.simulated_provider import (
    CHUNK_SIZE,
    MAX_CLIPS,
    MIN_CLIPS,
    ProviderLibrary,
    ProviderServer,
    base_clip,
    make_ref,
    parse_range,
)
from telephony.simulated_standalone import run_provider

REF = make_ref("call-1")


async def fetch(
    provider: ProviderServer,
    ref: str = REF,
    *,
    method: str = "GET",
    headers: dict | None = None,
    account: str | None = None,
    credentials: tuple[str, str] | None = None,
    **kwargs,
) -> HTTPResponse:
    account = account or provider.state.account_id
    user, password = credentials or (provider.state.account_id, provider.state.auth_token)
    client = AsyncHTTPClient(force_instance=True)
    try:
        return await client.fetch(
            f"{provider.base_url}/2010-04-01/Accounts/{account}/Recordings/{ref}.mp3",
            method=method,
            headers=headers,
            auth_username=user,
            auth_password=password,
            follow_redirects=False,
            raise_error=False,
            decompress_response=False,
            **kwargs,
        )
    finally:
        client.close()


def virtual_bytes(start: int, end: int) -> bytes:
    """Bytes start..end (inclusive) of any recording: the clip repeated."""
    clip = base_clip()
    reps = (end // len(clip)) + 1
    return (clip * reps)[start : end + 1]


def mp3_frames(data: bytes) -> list[int]:
    """Walk MPEG-1 Layer III frame headers; returns frame lengths, fails on a bad header."""
    lengths, pos = [], 0
    bitrates = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
    while pos + 4 <= len(data):
        header = int.from_bytes(data[pos : pos + 4], "big")
        assert header >> 21 == 0x7FF, f"no frame sync at {pos}"
        assert (header >> 19) & 3 == 3 and (header >> 17) & 3 == 1  # MPEG-1, Layer III
        bitrate = bitrates[(header >> 12) & 15] * 1000
        assert (header >> 10) & 3 == 0  # 44.1 kHz
        assert (header >> 6) & 3 == 3  # mono
        length = 144 * bitrate // 44100 + ((header >> 9) & 1)
        lengths.append(length)
        pos += length
    assert pos == len(data)
    return lengths


def test_clip_is_real_cbr_mp3() -> None:
    clip = base_clip()
    frames = mp3_frames(clip)
    assert 3.5 < len(frames) * 1152 / 44100 < 5  # a few seconds of audio
    assert set(frames) <= {417, 418}  # 128 kbps CBR


def test_library_sizes() -> None:
    library = ProviderLibrary(sizes={make_ref("big"): 500_000_000}, missing=[make_ref("gone")])
    clip = len(base_clip())
    derived = library.get(REF)
    assert derived.size % clip == 0 and MIN_CLIPS <= derived.size // clip <= MAX_CLIPS
    assert library.get(REF) == derived  # deterministic
    assert library.get(make_ref("big")).size == 500_000_000
    assert library.get(make_ref("gone")) is None
    assert library.get("RE" + "0" * 31) is None  # malformed refs do not exist
    assert library.get("re" + "0" * 32) is None
    with pytest.raises(ValueError):
        library.add("../etc/passwd", 10)
    # Any window of a huge virtual file is computed from the clip, never stored.
    big = library.get(make_ref("big"))
    offset = 499_999_000
    assert big.read(offset, 5000) == virtual_bytes(offset, big.size - 1)
    assert big.etag != derived.etag and big.etag.startswith('"')


@pytest.mark.parametrize(
    "header, if_range, expected",
    [
        ("bytes=0-99", None, (0, 99)),
        ("bytes=10-", None, (10, 999)),
        ("bytes=-100", None, (900, 999)),
        ("bytes=-5000", None, (0, 999)),
        ("bytes=990-5000", None, (990, 999)),
        ("BYTES=1-2", None, (1, 2)),
        ("bytes=1000-", None, "unsatisfiable"),
        ("bytes=-0", None, "unsatisfiable"),
        ("bytes=5-1", None, None),
        ("bytes=0-1,5-6", None, None),
        ("items=0-1", None, None),
        ("bytes=abc", None, None),
        ("bytes=-", None, None),
        ("bytes=0-9", '"e"', (0, 9)),
        ("bytes=0-9", '"other"', None),
        ("bytes=0-9", 'W/"e"', None),
    ],
)
def test_parse_range(header, if_range, expected) -> None:
    assert parse_range(header, 1000, '"e"', if_range) == expected


async def test_full_body_and_headers(provider) -> None:
    recording = provider.library.get(REF)
    response = await fetch(provider)
    assert response.code == 200
    assert response.headers["Content-Type"] == "audio/mpeg"
    assert response.headers["Accept-Ranges"] == "bytes"
    assert response.headers["ETag"] == recording.etag
    assert int(response.headers["Content-Length"]) == recording.size
    assert response.body == base_clip() * (recording.size // len(base_clip()))
    mp3_frames(response.body)  # the whole recording is a valid frame sequence
    [record] = provider.stats.requests
    assert (record.method, record.ref, record.range, record.status) == ("GET", REF, None, 200)
    assert record.completed and record.bytes_sent == recording.size


async def test_head(provider) -> None:
    response = await fetch(provider, method="HEAD")
    assert response.code == 200 and response.body == b""
    assert int(response.headers["Content-Length"]) == provider.library.get(REF).size
    assert response.headers["ETag"] == provider.library.get(REF).etag


async def test_large_recording_is_streamed_in_bounded_chunks(provider) -> None:
    ref = make_ref("big")
    provider.library.add(ref, 3 * CHUNK_SIZE + 123)
    chunks: list[int] = []
    response = await fetch(provider, ref, streaming_callback=lambda c: chunks.append(len(c)))
    assert response.code == 200
    assert sum(chunks) == 3 * CHUNK_SIZE + 123 and max(chunks) <= CHUNK_SIZE


@pytest.mark.parametrize(
    "header, status, first, last",
    [
        ("bytes=0-99", 206, 0, 99),
        ("bytes=1000-", 206, 1000, None),
        ("bytes=-500", 206, -500, None),
        ("bytes=100-999999999", 206, 100, None),
        ("bytes=0-1,4-5", 200, 0, None),
    ],
)
async def test_ranges(provider, header, status, first, last) -> None:
    size = provider.library.get(REF).size
    first = first % size
    last = size - 1 if last is None else last
    response = await fetch(provider, headers={"Range": header})
    assert response.code == status
    assert response.body == virtual_bytes(first, last)
    assert int(response.headers["Content-Length"]) == last - first + 1
    if status == 206:
        assert response.headers["Content-Range"] == f"bytes {first}-{last}/{size}"
    assert provider.stats.requests[-1].range == header


@pytest.mark.parametrize("header", ["bytes=999999999-", "bytes=-0"])
async def test_unsatisfiable_range(provider, header) -> None:
    response = await fetch(provider, headers={"Range": header})
    assert response.code == 416
    assert response.headers["Content-Range"] == f"bytes */{provider.library.get(REF).size}"


async def test_if_range(provider) -> None:
    etag = provider.library.get(REF).etag
    hit = await fetch(provider, headers={"Range": "bytes=0-9", "If-Range": etag})
    assert hit.code == 206 and len(hit.body) == 10
    stale = await fetch(provider, headers={"Range": "bytes=0-9", "If-Range": '"stale"'})
    assert stale.code == 200 and len(stale.body) == provider.library.get(REF).size


@pytest.mark.parametrize(
    "change",
    [
        {"credentials": None},  # placeholder replaced below: no Authorization at all
        {"credentials": ("AC" + "5e" * 16, "wrong-token")},
        {"credentials": ("ACother", "provider-token-f00dfeed")},
    ],
)
async def test_authentication_required(provider, change) -> None:
    if change["credentials"] is None:
        client = AsyncHTTPClient(force_instance=True)
        response = await client.fetch(provider.url_for(REF), raise_error=False)
        client.close()
    else:
        response = await fetch(provider, credentials=change["credentials"])
    assert response.code == 401
    assert response.headers["WWW-Authenticate"].startswith("Basic")


async def test_wrong_account_in_path_is_not_found(provider) -> None:
    response = await fetch(provider, account="AC" + "0" * 32)
    assert response.code == 404


@pytest.mark.parametrize("ref", [make_ref("missing"), "RE123", "CA" + "0" * 32])
async def test_missing_recordings(provider, ref) -> None:
    provider.library.mark_missing(make_ref("missing"))
    response = await fetch(provider, ref)
    assert response.code == 404
    assert response.headers["Content-Type"].startswith("application/json")


@pytest.mark.parametrize(
    "kind, status, content_type",
    [
        ("500", 500, "application/json"),
        ("404", 404, "application/json"),
        ("html200", 200, "text/html"),
    ],
)
async def test_error_faults(provider, kind, status, content_type) -> None:
    provider.faults.set(kind)
    response = await fetch(provider)
    assert response.code == status
    assert response.headers["Content-Type"].startswith(content_type)


async def test_fault_only_for_some_refs(provider) -> None:
    other = make_ref("other")
    provider.faults.set("500", refs=[REF])
    assert (await fetch(provider)).code == 500
    assert (await fetch(provider, other)).code == 200
    provider.faults.clear()
    assert (await fetch(provider)).code == 200


async def test_redirect_fault_points_to_another_host(provider) -> None:
    provider.faults.set("redirect", redirect_to="http://127.0.0.2:9")
    response = await fetch(provider)
    assert response.code == 302
    assert response.headers["Location"].startswith("http://127.0.0.2:9/2010-04-01/Accounts/")


async def test_ignore_range_fault(provider) -> None:
    provider.faults.set("ignore_range")
    response = await fetch(provider, headers={"Range": "bytes=0-9"})
    assert response.code == 200 and len(response.body) == provider.library.get(REF).size


async def test_stall_fault_sends_no_headers(provider) -> None:
    provider.faults.set("stall", stall_seconds=5)
    with pytest.raises(HTTPTimeoutError):  # no headers before the client gives up
        await fetch(provider, request_timeout=0.3)
    provider.faults.clear()  # releases the stalled request at once
    await provider.stats.wait_idle()


async def raw_get(provider: ProviderServer, ref: str):
    """A bare HTTP/1.1 GET over asyncio streams: (reader, writer) after the request went out.
    Used where tornado's client can't show what happens (resets, abrupt disconnects)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", provider.port)
    token = f"{provider.state.account_id}:{provider.state.auth_token}".encode()
    path = provider.url_for(ref).removeprefix(provider.base_url)
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: provider\r\n"
        f"Authorization: Basic {base64.b64encode(token).decode()}\r\n\r\n".encode()
    )
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    return reader, writer


async def test_reset_fault_breaks_the_body(provider) -> None:
    provider.faults.set("reset", reset_after=100_000)
    reader, writer = await raw_get(provider, REF)
    received = 0
    with pytest.raises(ConnectionResetError):
        async with asyncio.timeout(10):  # a stall fails the test instead of hanging it
            while chunk := await reader.read(65536):
                received += len(chunk)
    writer.close()
    assert received <= 100_000 < provider.library.get(REF).size
    record = provider.stats.requests[-1]
    assert record.bytes_sent == 100_000 and not record.completed


async def test_client_disconnect_is_recorded(provider) -> None:
    ref = make_ref("long")
    provider.library.add(ref, 200_000_000)
    reader, writer = await raw_get(provider, ref)
    await reader.readexactly(1_000_000)
    writer.transport.abort()
    await provider.stats.wait_idle()
    [record] = provider.stats.requests
    assert record.aborted and not record.completed
    assert record.bytes_sent < 50_000_000


def test_run_provider_requires_credentials(monkeypatch) -> None:
    monkeypatch.delenv("WSAPI_PROVIDER_ACCOUNT_ID", raising=False)
    monkeypatch.delenv("WSAPI_PROVIDER_AUTH_TOKEN", raising=False)
    with pytest.raises(SystemExit, match="WSAPI_PROVIDER_AUTH_TOKEN"):
        run_provider("127.0.0.1", 0)


def test_unknown_fault_is_refused(provider) -> None:
    with pytest.raises(ValueError):
        provider.faults.set("explode")
