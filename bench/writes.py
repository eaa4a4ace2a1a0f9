"""What the API's writes cost, rows of `python -m bench`:

- P5a, P5b contact uploads of 10 and 100 contacts: database round trips per request against
  an upload of 1 (they must not grow with the upload);
- P7a, P7b what sqlite_synchronous=full (every commit on disk before the answer) costs an upload
  of 100 contacts and a list creation, against normal, two servers on two files side by side;
- P8a, P8b what recording events costs a write: a contact upload of 100 contacts and a call
  insert with event writing on against off (a bench-only switch), interleaved in one run.
"""

from __future__ import annotations

import json
import statistics
import uuid
from collections.abc import Awaitable, Callable

from bench.common import HOST, Row, ms, percentile, upload_body, verdict
from bench.harness import Bench, Process, dbops
from bench.httpload import download, request_bytes, run_load


async def bench_p5(bench: Bench, server: Process) -> list[Row]:
    s = bench.settings
    info = server.info
    port = info["api_port"]
    path = f"/v1/lists/{info['listId']}/contacts"
    headers = {"Authorization": f"Bearer {info['key']}", "Content-Type": "application/json"}
    run = uuid.uuid4().hex[:8]
    counter = [0]

    def make(size: int):
        def request(_: int) -> bytes:
            body = upload_body(counter[0], size, run)  # every contact is new
            counter[0] += size
            return request_bytes("POST", path, HOST, port, headers, body)

        return request

    # Warm-up: the first upload pays imports and caches.
    await run_load(HOST, port, make(10), connections=1, duration=30, max_requests=3)
    stats = {
        size: {"latencies": [], "ops": 0, "requests": 0, "errors": 0, "by_op": {}}
        for size in s.upload_sizes
    }
    for round_index in range(s.upload_rounds):
        order = s.upload_sizes if round_index % 2 == 0 else s.upload_sizes[::-1]
        for size in order:
            before = await dbops(server)
            load = await run_load(
                HOST,
                port,
                make(size),
                connections=1,
                duration=30,
                max_requests=s.upload_requests[size],
            )
            after = await dbops(server)
            entry = stats[size]
            for op, count in after.items():
                # The key check is cached per key (key_cache_seconds); it is not the upload's.
                if op.startswith("api_keys.") or count == before.get(op, 0):
                    continue
                entry["by_op"][op] = entry["by_op"].get(op, 0) + count - before.get(op, 0)
                entry["ops"] += count - before.get(op, 0)
            entry["requests"] += load.requests
            entry["errors"] += load.errors
            entry["latencies"].extend(load.latencies)

    def figures(size: int) -> tuple[float, float]:
        entry = stats[size]
        return entry["ops"] / max(1, entry["requests"]), percentile(entry["latencies"], 0.5)

    base_size = s.upload_sizes[0]
    base_rt, base_p50 = figures(base_size)
    rows = []
    for row_id, size in zip(("P5a", "P5b"), s.upload_sizes[1:], strict=True):
        rt, p50 = figures(size)
        errors = stats[size]["errors"] + stats[base_size]["errors"]
        ok = rt <= base_rt + 0.01
        rows.append(
            Row(
                row_id,
                f"POST /lists/{{id}}/contacts, {size} contacts: round trips, latency",
                f"{rt:.2f} round trips/req, p50 {ms(p50)}",
                "round trips do not grow",
                verdict(ok) if not errors else f"ERRORS ({errors})",
                baseline=f"{base_size} contact: {base_rt:.2f} round trips/req, p50 {ms(base_p50)}",
                ratio=f"round trips x{rt / base_rt:.2f}, latency x{p50 / base_p50:.1f}"
                if base_rt
                else "-",
                data={
                    "size": size,
                    "round_trips": rt,
                    "p50_ms": p50 * 1000,
                    "base_round_trips": base_rt,
                    "base_p50_ms": base_p50 * 1000,
                    "by_op": stats[size]["by_op"],
                    "base_by_op": stats[base_size]["by_op"],
                },
            )
        )
    return rows


P7_MODES = ("full", "normal")


async def bench_p7(bench: Bench) -> list[Row]:
    """The same writes against two servers, one on a SQLite file with synchronous=full, one
    with synchronous=normal (files side by side in the run's directory), in interleaved rounds
    (ABBA), one request at a time: what making every commit durable before its answer costs."""
    s = bench.settings
    servers = {
        mode: bench.start_server(
            f"server-p7-{mode}",
            "--users",
            "2",
            "--sqlite-path",
            str(bench.workdir / f"p7-{mode}.sqlite3"),
            "--synchronous",
            mode,
        )
        for mode in P7_MODES
    }
    run = uuid.uuid4().hex[:8]
    counter = [0]

    def requests(server: Process, kind: str):
        info = server.info
        port = info["api_port"]
        headers = {"Authorization": f"Bearer {info['key']}", "Content-Type": "application/json"}

        def make(_: int) -> bytes:
            counter[0] += 100
            if kind == "upload":  # every contact new
                path = f"/v1/lists/{info['listId']}/contacts"
                body = upload_body(counter[0], 100, run)
            else:
                path = "/v1/lists"
                body = json.dumps({"name": f"p7-{counter[0]}", "ownerUserId": info["ownerUserId"]})
                body = body.encode()
            return request_bytes("POST", path, HOST, port, headers, body)

        return port, make

    latencies = {(mode, kind): [] for mode in P7_MODES for kind in ("upload", "create")}
    errors = 0
    for mode in P7_MODES:  # warm-up: imports, caches, the files' first pages
        for kind in ("upload", "create"):
            port, make = requests(servers[mode], kind)
            await run_load(HOST, port, make, connections=1, duration=30, max_requests=2)
    for round_index in range(s.p7_rounds):
        order = P7_MODES if round_index % 2 == 0 else P7_MODES[::-1]
        for mode in order:
            for kind in ("upload", "create"):
                port, make = requests(servers[mode], kind)
                load = await run_load(
                    HOST, port, make, connections=1, duration=60, max_requests=s.p7_requests[kind]
                )
                latencies[mode, kind].extend(load.latencies)
                errors += load.errors + sum(
                    n for status, n in load.statuses.items() if status not in (200, 201)
                )
    for server in servers.values():
        server.stop()
    rows = []
    for row_id, kind, what in zip(
        ("P7a", "P7b"),
        ("upload", "create"),
        ("POST /lists/{id}/contacts, 100 new contacts", "POST /lists"),
        strict=True,
    ):
        full = percentile(latencies["full", kind], 0.5)
        normal = percentile(latencies["normal", kind], 0.5)
        rows.append(
            Row(
                row_id,
                f"{what}: synchronous=full vs normal, p50",
                f"full {ms(full)} (p99 {ms(percentile(latencies['full', kind], 0.99))})",
                "INFO: the price of durability",
                "INFO" if not errors else f"ERRORS ({errors})",
                baseline=f"normal {ms(normal)} "
                f"(p99 {ms(percentile(latencies['normal', kind], 0.99))})",
                ratio=f"x{full / normal:.2f}, {'+' if full >= normal else '-'}"
                f"{ms(abs(full - normal))}",
                data={
                    "full_p50_ms": full * 1000,
                    "normal_p50_ms": normal * 1000,
                    "requests": len(latencies["full", kind]),
                },
            )
        )
    return rows


async def set_event_writing(server: Process, on: bool) -> None:
    """The bench-only switch of the store's event writing (bench/bare.py EventWriting)."""
    port = server.info["bare_port"]
    path = f"/bench/events?writing={'on' if on else 'off'}"
    result = await download(HOST, port, request_bytes("GET", path, HOST, port))
    if result.status != 200:
        raise RuntimeError(f"{path}: {result.status}")


async def bench_p8(bench: Bench, server: Process) -> list[Row]:
    """What recording events costs a write, as the time one write takes: a contact upload of
    100 contacts (through the API) and a call insert (the store's write path behind a bare
    handler), one request at a time, with event writing on and off in rounds interleaved on off
    off on, on one server and one database; the median of the rounds' p50 ratios."""
    return await writes_on_and_off(
        bench,
        server,
        set_event_writing,
        ("events on", "events off"),
        1.25,
        {
            "P8a": ("upload", "POST /lists/{id}/contacts, 100 contacts: events on vs off"),
            "P8b": ("insert", "call insert (the store's write path): events on vs off"),
        },
    )


async def writes_on_and_off(
    bench: Bench,
    server: Process,
    switch: Callable[[Process, bool], Awaitable[None]],
    labels: tuple[str, str],
    target: float,
    rows: dict[str, tuple[str, str]],
) -> list[Row]:
    """The time one write takes with a bench-only `switch` of the server on and off: a contact
    upload of 100 new contacts (through the API, "upload") and a call insert (the store's write
    path behind a bare handler, "insert"), one request at a time, in rounds interleaved on off
    off on, on one server and one database. A row per `rows` item (id: the write and what it
    says), the median of the rounds' p50 ratios against `target`; `labels` name the on and off
    sides in the table. The switch is left on."""
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
                await switch(server, on)
                for write, (port, make, count, status) in writes.items():
                    load = await run_load(
                        HOST, port, make, connections=1, duration=60, max_requests=count
                    )
                    p50s[(write, on)].append(percentile(load.latencies, 0.5))
                    errors += load.errors + sum(n for c, n in load.statuses.items() if c != status)
    finally:
        await switch(server, True)

    def row(row_id: str, write: str, what: str) -> Row:
        on, off = p50s[(write, True)], p50s[(write, False)]
        ratio = statistics.median(a / b for a, b in zip(on, off, strict=True))
        return Row(
            row_id,
            what,
            f"{labels[0]}: p50 {statistics.median(on) * 1000:.2f} ms",
            f"<= {target:.2f}",
            f"ERRORS ({errors})" if errors else verdict(ratio <= target),
            baseline=f"{labels[1]}: p50 {statistics.median(off) * 1000:.2f} ms",
            ratio=f"{ratio:.2f}",
            data={"on_p50_s": on, "off_p50_s": off, "ratio": round(ratio, 3)},
        )

    return [row(row_id, write, what) for row_id, (write, what) in rows.items()]
