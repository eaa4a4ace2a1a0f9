"""P10a's baseline (bench/webhooks.py): a bare loop that POSTs pre-signed webhook bodies to the
receiver with the client library the dispatcher uses (aiohttp, keep-alive), `concurrency` at a
time, and nothing else: no store, no claims, no records.

    python -m bench.webhook_bare BODIES_JSON URL CONCURRENCY
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import aiohttp

from webhooks.signing import headers, new_secret


async def main(bodies_path: str, url: str, concurrency: int) -> None:
    secret = new_secret()
    items = json.loads(open(bodies_path).read())  # noqa: SIM115 - before the clock
    signed = [
        (body.encode(), headers([secret], ident, int(time.time()), body.encode()))
        for ident, body in items
    ]
    queue = iter(signed)
    errors = 0

    async def worker(session: aiohttp.ClientSession) -> None:
        nonlocal errors
        for body, head in queue:
            async with session.post(url, data=body, headers=head, allow_redirects=False) as r:
                await r.read()
                errors += not 200 <= r.status < 300

    start = time.monotonic()
    async with aiohttp.ClientSession() as session:
        await asyncio.gather(*(worker(session) for _ in range(concurrency)))
    print(json.dumps({"seconds": time.monotonic() - start, "errors": errors}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
