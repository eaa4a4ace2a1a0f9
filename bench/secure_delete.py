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

import statistics
import uuid

from bench.common import HOST, Row, percentile, upload_body, verdict
from bench.harness import Bench, Process
from bench.httpload import download, request_bytes, run_load

TARGET = 1.10  # at most 10% on a write's p50


async def set_secure_delete(server: Process, on: bool) -> None:
    """The bench-only switch of the writer connection's secure_delete (bench/bare.py)."""
    port = server.info["bare_port"]
    path = f"/bench/secure-delete?on={'on' if on else 'off'}"
    result = await download(HOST, port, request_bytes("GET", path, HOST, port))
    if result.status != 200:
        raise RuntimeError(f"{path}: {result.status}")


async def bench_d1(bench: Bench, server: Process) -> list[Row]:
    s = bench.settings
    info = server.info
    api_port, bare_port = info["api_port"], info["bare_port"]
    path = f"/v1/lists/{info['listId']}/contacts"
    headers = {"Authorization": f"Bearer {info['key']}", "Content-Type": "application/json"}
    run, counter = uuid.uuid4().hex[:8], [0]

    def upload(_: int) -> bytes:
        body = upload_body(counter[0], 100, run)  # every contact is new
        counter[0] += 100
        return request_bytes("POST", path, HOST, api_port, headers, body)

    insert = request_bytes("POST", "/bench/call", HOST, bare_port, body=b"")
    writes = {
        "upload": (api_port, upload, s.p8_uploads, 200),
        "insert": (bare_port, lambda i: insert, s.p8_inserts, 201),
    }
    p50s: dict[tuple[str, bool], list[float]] = {(w, on): [] for w in writes for on in (1, 0)}
    errors = 0
    try:
        for port, make, _, _ in writes.values():  # warm-up: imports, caches, statements
            await run_load(HOST, port, make, connections=1, duration=30, max_requests=3)
        for round_index in range(s.p8_rounds):
            for on in (True, False) if round_index % 2 == 0 else (False, True):
                await set_secure_delete(server, on)
                for write, (port, make, count, status) in writes.items():
                    load = await run_load(
                        HOST, port, make, connections=1, duration=60, max_requests=count
                    )
                    p50s[(write, on)].append(percentile(load.latencies, 0.5))
                    errors += load.errors + sum(n for c, n in load.statuses.items() if c != status)
    finally:
        await set_secure_delete(server, True)

    def row(row_id: str, write: str, what: str) -> Row:
        on, off = p50s[(write, True)], p50s[(write, False)]
        ratio = statistics.median(a / b for a, b in zip(on, off, strict=True))
        return Row(
            row_id,
            what,
            f"secure_delete on: p50 {statistics.median(on) * 1000:.2f} ms",
            f"<= {TARGET:.2f}",
            f"ERRORS ({errors})" if errors else verdict(ratio <= TARGET),
            baseline=f"off: p50 {statistics.median(off) * 1000:.2f} ms",
            ratio=f"{ratio:.2f}",
            data={"on_p50_s": on, "off_p50_s": off, "ratio": round(ratio, 3)},
        )

    return [
        row("D1a", "upload", "POST /lists/{id}/contacts, 100 contacts: secure_delete on vs off"),
        row("D1b", "insert", "call insert (the store's write path): secure_delete on vs off"),
    ]
