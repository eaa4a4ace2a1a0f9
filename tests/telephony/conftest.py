"""Fixtures for the simulated provider and the upstream client: both run for real on loopback."""

from __future__ import annotations

import pytest

from telephony.simulated_provider import ProviderServer, start_provider
from telephony.upstream import UpstreamClient

ACCOUNT_ID = "AC" + "5e" * 16
AUTH_TOKEN = "provider-token-f00dfeed"


@pytest.fixture
def provider(io_loop) -> ProviderServer:
    """A simulated provider on a free 127.0.0.1 port; stopped (stalls released) afterwards."""

    async def start() -> ProviderServer:
        return await start_provider(account_id=ACCOUNT_ID, auth_token=AUTH_TOKEN)

    server = io_loop.run_sync(start)
    yield server
    io_loop.run_sync(server.stop)


@pytest.fixture
def upstream(provider) -> UpstreamClient:
    """The API's provider client with short timeouts, so fault tests stay fast (the header's
    still leaves a provider on a busy machine time to answer a healthy request)."""
    return UpstreamClient(
        provider.base_url,
        ACCOUNT_ID,
        AUTH_TOKEN,
        connect_timeout=1.0,
        header_timeout=2.0,
        idle_timeout=0.5,
        buffer_bytes=256 * 1024,
    )
