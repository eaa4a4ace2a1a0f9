"""The simulated telephony provider in its own process, serving the bench's recordings.

    python -m bench.provider_proc --account AC... --token ... REF=BYTES [REF=BYTES ...]

Prints one JSON line ({"pid", "port"}) once listening; runs until SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os

from telephony.simulated_provider import ProviderLibrary, base_clip, start_provider
from telephony.simulated_standalone import serve_until_signalled


async def main(args) -> None:
    sizes = {ref: int(size) for ref, size in (item.split("=", 1) for item in args.recordings)}
    base_clip()  # encode the audio before the first request, not during it
    provider = await start_provider(
        "127.0.0.1",
        0,
        account_id=args.account,
        auth_token=args.token,
        library=ProviderLibrary(sizes),
    )
    print(json.dumps({"pid": os.getpid(), "port": provider.port}), flush=True)
    os.dup2(2, 1)  # nobody reads stdout after the ready line
    await serve_until_signalled(provider)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.provider_proc")
    parser.add_argument("--account", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("recordings", nargs="*", metavar="REF=BYTES")
    asyncio.run(main(parser.parse_args()))
