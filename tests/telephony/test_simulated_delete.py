"""The simulated provider's DELETE of a recording, spoken to over real loopback HTTP."""

from __future__ import annotations

import asyncio
import base64
import json

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPResponse
from tornado.simple_httpclient import HTTPTimeoutError

from telephony.simulated_provider import ProviderServer, make_ref
from tests.telephony.test_simulated_provider import fetch

REF = make_ref("call-1")


async def delete(
    provider: ProviderServer,
    ref: str = REF,
    *,
    account: str | None = None,
    credentials: tuple[str, str] | None = None,
    **kwargs,
) -> HTTPResponse:
    account = account or provider.state.account_id
    user, password = credentials or (provider.state.account_id, provider.state.auth_token)
    client = AsyncHTTPClient(force_instance=True)
    try:
        return await client.fetch(
            f"{provider.base_url}/2010-04-01/Accounts/{account}/Recordings/{ref}.json",
            method="DELETE",
            auth_username=user,
            auth_password=password,
            follow_redirects=False,
            raise_error=False,
            **kwargs,
        )
    finally:
        client.close()


def assert_twilio_404(response: HTTPResponse) -> None:
    assert response.code == 404
    assert response.headers["Content-Type"].startswith("application/json")
    body = json.loads(response.body)
    assert body["code"] == 20404 and body["status"] == 404
    assert body["more_info"].endswith("/20404")


async def test_delete_removes_the_recording(provider) -> None:
    assert (await fetch(provider)).code == 200
    response = await delete(provider)
    assert response.code == 204 and response.body == b""
    assert_twilio_404(await fetch(provider))
    assert (await fetch(provider, method="HEAD")).code == 404
    assert_twilio_404(await delete(provider))  # a second delete
    assert provider.library.get(REF) is None
    assert provider.stats.deleted == [REF]
    assert provider.stats.deletes == 2
    assert [r.status for r in provider.stats.deletes_of(REF)] == [204, 404]


async def test_delete_touches_only_its_recording(provider) -> None:
    other = make_ref("call-2")
    assert (await delete(provider)).code == 204
    assert (await fetch(provider, other)).code == 200
    assert provider.stats.deletes_of(other) == []


@pytest.mark.parametrize(
    "credentials",
    [("AC" + "5e" * 16, "wrong-token"), ("ACother", "provider-token-f00dfeed")],
)
async def test_delete_needs_the_credentials(provider, credentials) -> None:
    response = await delete(provider, credentials=credentials)
    assert response.code == 401
    assert response.headers["WWW-Authenticate"].startswith("Basic")
    assert (await fetch(provider)).code == 200  # still there


async def test_delete_without_authorization(provider) -> None:
    client = AsyncHTTPClient(force_instance=True)
    url = provider.url_for(REF).removesuffix(".mp3") + ".json"
    response = await client.fetch(url, method="DELETE", raise_error=False)
    client.close()
    assert response.code == 401
    assert (await fetch(provider)).code == 200


async def test_delete_in_another_account_is_not_found(provider) -> None:
    assert_twilio_404(await delete(provider, account="AC" + "0" * 32))
    assert (await fetch(provider)).code == 200


@pytest.mark.parametrize("ref", ["RE123", "CA" + "0" * 32])
async def test_delete_of_a_malformed_ref_is_not_found(provider, ref) -> None:
    assert_twilio_404(await delete(provider, ref))


@pytest.mark.parametrize("kind, status", [("500", 500), ("503", 503)])
async def test_error_faults_keep_the_recording(provider, kind, status) -> None:
    provider.faults.set_delete(kind)
    response = await delete(provider)
    assert response.code == status
    assert json.loads(response.body)["code"] == 20000 + status
    assert (await fetch(provider)).code == 200
    assert provider.stats.deleted == []
    provider.faults.clear()
    assert (await delete(provider)).code == 204


async def test_counted_fault_then_recovery(provider) -> None:
    provider.faults.set_delete("503", times=2)
    assert [(await delete(provider)).code for _ in range(3)] == [503, 503, 204]
    assert [r.status for r in provider.stats.deletes_of(REF)] == [503, 503, 204]


async def test_delete_fault_only_for_some_refs(provider) -> None:
    other = make_ref("call-2")
    provider.faults.set_delete("500", refs=[REF])
    assert (await delete(provider)).code == 500
    assert (await delete(provider, other)).code == 204


async def test_media_and_delete_faults_are_apart(provider) -> None:
    provider.faults.set("500")
    assert (await delete(provider)).code == 204
    provider.faults.clear()
    other = make_ref("call-2")
    provider.faults.set_delete("500")
    assert (await fetch(provider, other)).code == 200


async def test_stall_fault_answers_nothing(provider) -> None:
    provider.faults.set_delete("stall", stall_seconds=30)
    with pytest.raises(HTTPTimeoutError):
        await delete(provider, request_timeout=0.3)
    provider.faults.clear()  # releases the stalled request at once
    await provider.stats.wait_idle()
    assert (await fetch(provider)).code == 200


async def test_reset_fault_answers_with_a_reset(provider) -> None:
    provider.faults.set_delete("reset")
    reader, writer = await asyncio.open_connection("127.0.0.1", provider.port)
    token = f"{provider.state.account_id}:{provider.state.auth_token}".encode()
    path = provider.url_for(REF).removeprefix(provider.base_url).removesuffix(".mp3") + ".json"
    writer.write(
        f"DELETE {path} HTTP/1.1\r\nHost: provider\r\n"
        f"Authorization: Basic {base64.b64encode(token).decode()}\r\n\r\n".encode()
    )
    with pytest.raises(ConnectionResetError):
        async with asyncio.timeout(10):  # a stall fails the test instead of hanging it
            assert await reader.read(65536) != b""
    writer.close()
    assert provider.library.get(REF) is not None


def test_unknown_delete_fault_is_refused(provider) -> None:
    with pytest.raises(ValueError):
        provider.faults.set_delete("html200")
