"""SIMULATED telephony provider as a process of its own: `workspace-api provider` (the stand-in
of telephony/simulated_provider.py, serving until SIGINT or SIGTERM). Never used in
production."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Iterable, Mapping

from telephony.simulated_provider import ProviderLibrary, ProviderServer, base_clip, start_provider

log = logging.getLogger("simulated_provider")

ENV_ACCOUNT_ID = "WSAPI_PROVIDER_ACCOUNT_ID"
ENV_AUTH_TOKEN = "WSAPI_PROVIDER_AUTH_TOKEN"


async def serve_until_signalled(provider: ProviderServer) -> None:
    """Keep `provider` serving until SIGINT or SIGTERM, then stop it."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await provider.stop()


def run_provider(
    host: str,
    port: int,
    account_id: str | None = None,
    auth_token: str | None = None,
    sizes: Mapping[str, int] | None = None,
    missing: Iterable[str] = (),
) -> None:
    """Run a provider until SIGINT/SIGTERM. Credentials default to the environment
    variables WSAPI_PROVIDER_ACCOUNT_ID and WSAPI_PROVIDER_AUTH_TOKEN."""
    account_id = account_id or os.environ.get(ENV_ACCOUNT_ID)
    auth_token = auth_token or os.environ.get(ENV_AUTH_TOKEN)
    if not account_id or not auth_token:
        raise SystemExit(
            f"provider credentials missing: pass --account-id/--auth-token or set "
            f"{ENV_ACCOUNT_ID} and {ENV_AUTH_TOKEN}"
        )
    library = ProviderLibrary(sizes, missing)

    async def main() -> None:
        base_clip()  # encode before the first request, not during it
        provider = await start_provider(
            host, port, account_id=account_id, auth_token=auth_token, library=library
        )
        log.info("simulated provider listening on %s", provider.base_url)
        await serve_until_signalled(provider)

    asyncio.run(main())
