"""What zeroing deleted content costs a write (D1a, D1b of `python -m bench`): SQLite's
`secure_delete`, on for every connection of the service (store/sqlite/engine.py), against the
same writes with it off (a bench-only switch on the writer's connection). A contact upload of
100 new contacts through the API, and a call insert through the store's write path (the bare
handler of P8b), one request at a time, in rounds interleaved on off off on, on one server and
one database; the median of the rounds' p50 ratios.

secure_delete does its work where a write frees space: a row or index entry deleted or
rewritten, a page split's moved cells, a page put on the free list. An upload of new contacts
rewrites the list's and the counters' rows and splits index pages; a call insert rewrites the
counters' and the quarter-hour rows.
"""

from __future__ import annotations

from bench.common import HOST, Row
from bench.harness import Bench, Process
from bench.httpload import download, request_bytes
from bench.writes import writes_on_and_off

TARGET = 1.10  # at most 10% on a write's p50


async def set_secure_delete(server: Process, on: bool) -> None:
    """The bench-only switch of the writer connection's secure_delete (bench/bare.py)."""
    port = server.info["bare_port"]
    path = f"/bench/secure-delete?on={'on' if on else 'off'}"
    result = await download(HOST, port, request_bytes("GET", path, HOST, port))
    if result.status != 200:
        raise RuntimeError(f"{path}: {result.status}")


async def bench_d1(bench: Bench, server: Process) -> list[Row]:
    return await writes_on_and_off(
        bench,
        server,
        set_secure_delete,
        ("secure_delete on", "off"),
        TARGET,
        {
            "D1a": ("upload", "POST /lists/{id}/contacts, 100 contacts: secure_delete on vs off"),
            "D1b": ("insert", "call insert (the store's write path): secure_delete on vs off"),
        },
    )
