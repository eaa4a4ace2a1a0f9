"""`python -m bench` (`make bench`): the API's hot paths, each measured against a baseline in
the same run, printed as one table of ratios with targets.

- P1a-P1c the recording relay against nginx relaying the same provider: throughput, relay CPU
  per GiB, and a 1 MiB seek's time to first byte over the provider's own.
- P2 the API's RSS while a 500 MB recording streams to a slow and a fast client.
- P3 GET /calls?pageSize=100 and P4 GET /users: requests per second against a bare handler
  doing the same store work in the same process.
- P5a, P5b contact uploads of 10 and 100 contacts: database round trips per request against
  an upload of 1 (they must not grow with the upload).
- P6 the API's RSS while a 100,000-activity timeline streams.
- P7a, P7b what sqlite_synchronous=full (every commit on disk before the answer) costs an upload
  of 100 contacts and a list creation, against normal, two servers on two files side by side.
- P8a, P8b what recording events costs a write: a contact upload of 100 contacts and a call
  insert with event writing on against off (a bench-only switch), interleaved in one run.
- P9 GET /v1/events?pageSize=100 a million events deep against page 1.
- P10a, P10b webhooks (bench/webhooks.py): deliveries per second from one API process against
  a bare aiohttp loop posting the same pre-signed bodies, and the lag from a write's
  acknowledgement to its delivery at 100 writes per second.
- M1a, M1b what metrics cost (bench/metrics_cost.py): GET /users and the GET /calls page of P3
  with metrics on against off, the same API twice in one process, interleaved.
- S1-S3 streamed responses under abuse (bench/streams.py): stalled readers, concurrent
  timelines.

The processes taking part: the API under test (`bench.server`, with the bare comparison
handlers on a second port), the simulated provider (`bench.provider_proc`), for P1 two nginx
relays of the same provider (`bench.nginx`, installed from Debian when missing), and this one,
which generates the load on loopback and samples the API's RSS. Each figure is measured
against its baseline in the same run, interleaved round by round (A B B A ...).

    python -m bench [--quick] [--only P1,P4] [--json results.json]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

from bench import nginx
from bench.common import HOST, MB, Row, ms, percentile, table, upload_body, verdict
from bench.harness import QUICK, ROOT, Bench, Process, Settings, api_get, dbops
from bench.httpload import download, request_bytes, run_load
from bench.memory import RSSSampler
from bench.sides import side_by_side, throughput_row

# The figures `--only` selects, in the order they are printed, and the rows each reports.
FIGURES = {
    "P1": ("P1a", "P1b", "P1c"),
    "P2": ("P2",),
    "P3": ("P3",),
    "P4": ("P4",),
    "P5": ("P5a", "P5b"),
    "P6": ("P6",),
    "P7": ("P7a", "P7b"),
    "P8": ("P8a", "P8b"),
    "P9": ("P9",),
    "P10": ("P10a", "P10b"),
    "M1": ("M1a", "M1b"),
    "S1": ("S1",),
    "S2": ("S2",),
    "S3": ("S3",),
}
ROW_IDS = tuple(row_id for rows in FIGURES.values() for row_id in rows)
COLUMNS = (
    ("id", "id"),
    ("what", "what"),
    ("measured", "measured"),
    ("baseline (same run)", "baseline"),
    ("ratio / growth", "ratio"),
    ("target", "target"),
    ("result", "result"),
)


# --- the benchmarks --------------------------------------------------------------------------


async def api_against_bare(
    bench: Bench,
    server: Process,
    figure: str,
    what: str,
    api_path: str,
    bare_path: str,
    target: float,
) -> list[Row]:
    """One GET through the API and the same work in a bare handler, side by side."""
    api_port, bare_port = server.info["api_port"], server.info["bare_port"]
    api = api_get(server, api_path)
    bare = request_bytes("GET", bare_path, HOST, bare_port)
    results = await side_by_side(
        bench.settings,
        server.pid,
        {"api": (api_port, lambda i: api), "bare": (bare_port, lambda i: bare)},
    )
    return [throughput_row(figure, what, results["api"], results["bare"], target)]


async def bench_p4(bench: Bench, server: Process) -> list[Row]:
    return await api_against_bare(
        bench,
        server,
        "P4",
        f"GET /users ({bench.settings.users} users) req/s",
        "/v1/users",
        "/bare/users",
        0.75,
    )


async def bench_p3(bench: Bench, server: Process) -> list[Row]:
    return await api_against_bare(
        bench,
        server,
        "P3",
        f"GET /calls?pageSize=100 ({bench.settings.calls} calls) req/s",
        "/v1/calls?pageSize=100",
        "/bare/calls",
        0.8,
    )


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
    for row_id, size in zip(FIGURES["P5"], s.upload_sizes[1:], strict=True):
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


P1_PATHS = ("direct", "nginx-default", "nginx-256k", "api")  # api and its peer adjacent
SEEK = 1024 * 1024  # P1's seek: 1 MiB from the middle of the recording


async def bench_p1(bench: Bench, server: Process) -> list[Row]:
    """The API's relay against the provider itself and against nginx relaying the same bytes
    (default and 256 KiB proxy buffers), side by side: throughput, the relay's CPU per GiB,
    and the time to first byte of a 1 MiB seek."""
    s = bench.settings
    provider_port = bench.start_provider().info["port"]
    ref = bench.refs["p1"]
    basic = base64.b64encode(f"{bench.account}:{bench.token}".encode()).decode()
    media = f"/2010-04-01/Accounts/{bench.account}/Recordings/{ref}.mp3"
    call_id = server.info["recordingCalls"][ref]
    offset = s.p1_bytes // 2
    seek = {"Range": f"bytes={offset}-{offset + SEEK - 1}"}
    processes = {
        "api": psutil.Process(server.pid),
        "provider": psutil.Process(bench.provider.pid),
        "client": psutil.Process(),
    }
    # Each path: (port, whole-file request, seek request, CPU seconds of its relay).
    paths: dict[str, tuple] = {
        "direct": (
            provider_port,
            request_bytes("GET", media, HOST, provider_port, {"Authorization": f"Basic {basic}"}),
            request_bytes(
                "GET", media, HOST, provider_port, {"Authorization": f"Basic {basic}", **seek}
            ),
            None,
        ),
        "api": (
            server.info["api_port"],
            api_get(server, f"/v1/calls/{call_id}/recording"),
            api_get(server, f"/v1/calls/{call_id}/recording", seek),
            lambda: sum(processes["api"].cpu_times()[:2]),
        ),
    }
    binary, why = nginx.ensure_nginx(s.install_nginx)
    proxies = []
    try:
        for config in ("default", "256k"):
            if binary is None:
                break
            proxy = nginx.Nginx(binary, provider_port, config, bench.workdir)
            proxies.append(proxy)
            headers = {"Authorization": f"Basic {basic}"}
            paths[f"nginx-{config}"] = (
                proxy.port,
                request_bytes("GET", media, HOST, proxy.port, headers),
                request_bytes("GET", media, HOST, proxy.port, {**headers, **seek}),
                proxy.cpu_seconds,
            )
        return await _p1_measure(bench, server, paths, processes, why)
    finally:
        for proxy in proxies:
            proxy.stop()


async def _p1_measure(
    bench: Bench, server: Process, paths: dict, processes: dict, why: str
) -> list[Row]:
    s = bench.settings
    names = [name for name in P1_PATHS if name in paths]
    for port, whole, part, _ in paths.values():  # warm-up: connections, caches
        await download(HOST, port, whole, max_seconds=0.5)
        await download(HOST, port, part)
    rates: dict[str, list[float]] = {name: [] for name in names}
    relay_cpu: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, dict[str, float]] = {name: {} for name in names}  # every process, per GiB
    ttfb: dict[str, list[float]] = {name: [] for name in names}
    problems = []
    for round_index in range(s.p1_rounds):
        # A B B A: the API and its peer (nginx 256k) always run back to back, in alternating
        # order, so that a change in the machine's load hits both sides of a pair alike.
        order = names if round_index % 2 == 0 else names[::-1]
        for name in order:
            port, whole, _, relay = paths[name]
            before = {k: sum(p.cpu_times()[:2]) for k, p in processes.items()}
            relay_before = relay() if relay else 0.0
            result = await download(HOST, port, whole, max_seconds=120)
            gib = max(1, result.body_bytes) / 1024**3
            if relay:
                relay_cpu[name].append((relay() - relay_before) / gib)
            for k, p in processes.items():
                spent = sum(p.cpu_times()[:2]) - before[k]
                cpu[name][k] = cpu[name].get(k, 0.0) + spent / gib / s.p1_rounds
            if result.status != 200 or result.body_bytes != s.p1_bytes:
                problems.append(f"{name}: {result.status}, {result.body_bytes} bytes")
            rates[name].append(result.body_bytes / result.total / MB)
    for sample in range(s.p1_seeks):
        order = names if sample % 2 == 0 else names[::-1]
        for name in order:
            port, _, part, _ = paths[name]
            result = await download(HOST, port, part, max_seconds=30)
            if result.status != 206 or result.body_bytes != SEEK:
                problems.append(f"{name} seek: {result.status}, {result.body_bytes} bytes")
            ttfb[name].append(result.ttfb)
    lookup = []  # the store's lookup alone (bare handler, same process and store)
    bare_port = server.info["bare_port"]
    call_id = server.info["recordingCalls"][bench.refs["p1"]]
    lookup_request = request_bytes("GET", f"/bare/recording-ref/{call_id}", HOST, bare_port)
    for _ in range(s.p1_seeks):
        lookup.append((await download(HOST, bare_port, lookup_request)).ttfb)

    def med(values):
        return statistics.median(values) if values else float("nan")

    figures = {
        name: {
            "mb_s": med(rates[name]),
            "ratio_to_direct": med(rates[name]) / med(rates["direct"]),
            # All rounds together: CPU times tick in 10 ms, coarse for one round.
            "relay_cpu_s_per_gib": (
                sum(relay_cpu[name]) / len(relay_cpu[name]) if relay_cpu[name] else None
            ),
            "seek_ttfb_ms": med(ttfb[name]) * 1000,
        }
        for name in names
    }
    data = {
        "paths": figures,
        "mb_s": rates,
        "relay_cpu_s_per_gib_rounds": relay_cpu,
        "cpu_s_per_gib_by_process": {
            n: {k: round(v, 3) for k, v in c.items()} for n, c in cpu.items()
        },
        "seek_ttfb_ms": {n: [round(t * 1000, 3) for t in v] for n, v in ttfb.items()},
        "lookup_ttfb_ms": [round(t * 1000, 3) for t in lookup],
    }
    bench.p1_detail = figures
    api, direct = figures["api"], figures["direct"]
    errors = "ERRORS: " + "; ".join(problems) if problems else None
    rows = []
    peer = figures.get("nginx-256k")
    what = f"recording relay, {s.p1_bytes // MB} MB"
    if peer is None:
        rows.append(
            not_run("P1a", what + ": throughput vs nginx 256 KiB", ">= 1.0", f"NOT RUN: {why}")
        )
        rows.append(
            not_run("P1b", what + ": relay CPU vs nginx 256 KiB", "<= 1.2", f"NOT RUN: {why}")
        )
    else:
        # The median of the per-round ratios (each pair ran back to back), as P3 and P4 do:
        # it resists the load of the rest of the machine better than a ratio of medians.
        ratio = statistics.median(
            a / b for a, b in zip(rates["api"], rates["nginx-256k"], strict=True)
        )
        data.update(
            ratio_to_nginx_256k=round(ratio, 3),
            ratio_of_medians=round(api["mb_s"] / peer["mb_s"], 3),
        )
        rows.append(
            Row(
                "P1a",
                what + ": throughput",
                f"API {api['mb_s']:,.0f} MB/s ({api['ratio_to_direct']:.2f} of direct "
                f"{direct['mb_s']:,.0f})",
                ">= 1.0",
                errors or verdict(ratio >= 1.0),
                baseline=f"nginx 256 KiB {peer['mb_s']:,.0f} MB/s",
                ratio=f"{ratio:.2f}",
                data=data,
            )
        )
        # (psutil's CPU times tick in 10 ms: a --quick transfer can measure 0)
        cpu_ratio = (
            api["relay_cpu_s_per_gib"] / peer["relay_cpu_s_per_gib"]
            if peer["relay_cpu_s_per_gib"]
            else float("nan")
        )
        rows.append(
            Row(
                "P1b",
                what + ": relay CPU per GiB",
                f"API {api['relay_cpu_s_per_gib']:.2f} s/GiB",
                "<= 1.2",
                errors or verdict(cpu_ratio <= 1.2),
                baseline=f"nginx 256 KiB {peer['relay_cpu_s_per_gib']:.2f} s/GiB",
                ratio=f"{cpu_ratio:.2f}",
                data={"cpu_ratio": round(cpu_ratio, 3)},
            )
        )
    extra = api["seek_ttfb_ms"] - direct["seek_ttfb_ms"]
    rows.append(
        Row(
            "P1c",
            "1 MiB seek: time to first byte",
            f"API {api['seek_ttfb_ms']:.2f} ms (store lookup alone {med(lookup) * 1000:.2f} ms)",
            "<= +2 ms",
            errors or verdict(extra <= 2.0),
            baseline=f"direct {direct['seek_ttfb_ms']:.2f} ms",
            ratio=f"+{extra:.2f} ms",
            data={"extra_ms": round(extra, 3)},
        )
    )
    return rows


def p1_table(figures: dict) -> str:
    lines = [
        "| path | MB/s | / direct | relay CPU s/GiB | 1 MiB seek TTFB |",
        "|---|---|---|---|---|",
    ]
    for name, f in figures.items():
        cpu = "-" if f["relay_cpu_s_per_gib"] is None else f"{f['relay_cpu_s_per_gib']:.2f}"
        lines.append(
            f"| {name} | {f['mb_s']:,.0f} | {f['ratio_to_direct']:.2f} | {cpu} | "
            f"{f['seek_ttfb_ms']:.2f} ms |"
        )
    return "\n".join(lines)


async def bench_p2(bench: Bench, server: Process) -> list[Row]:
    s = bench.settings
    ref = bench.refs["p2"]
    call_id = server.info["recordingCalls"][ref]
    port = server.info["api_port"]
    request = api_get(server, f"/v1/calls/{call_id}/recording")
    warm = api_get(server, f"/v1/calls/{call_id}/recording", {"Range": "bytes=0-1048575"})
    await download(HOST, port, warm)
    await download(HOST, port, request, max_seconds=0.3)
    sampler = RSSSampler(server.pid)
    rest = await asyncio.to_thread(sampler.at_rest, 1.0)
    sampler.start()
    slow_task = asyncio.ensure_future(
        download(
            HOST, port, request, rate=s.slow_rate, max_seconds=s.slow_seconds, rcvbuf=64 * 1024
        )
    )
    await asyncio.sleep(min(2.0, s.slow_seconds / 4))  # the slow reader is well under way
    fast = await download(HOST, port, request, max_seconds=120)
    fast_peak = max(sampler.samples)
    slow = await slow_task
    peak = sampler.stop()
    growth = (peak - rest) / MB
    problems = []
    if fast.status != 200 or fast.body_bytes != s.p2_bytes:
        problems.append(f"fast: {fast.status}, {fast.body_bytes} bytes")
    if slow.status != 200:
        problems.append(f"slow: {slow.status}")
    measured = (
        f"peak +{growth:.1f} MB (fast {fast.body_bytes / MB:.0f} MB at "
        f"{fast.body_bytes / fast.total / MB:.0f} MB/s; slow {slow.body_bytes / MB:.1f} MB "
        f"in {slow.total:.0f} s)"
    )
    return [
        Row(
            "P2",
            f"API peak RSS, {s.p2_bytes // MB} MB recording, slow + fast client",
            measured,
            "< 64 MB",
            verdict(growth < 64) if not problems else "ERRORS: " + "; ".join(problems),
            baseline=f"at rest {rest / MB:.0f} MB",
            ratio=f"+{growth:.1f} MB",
            data={
                "rest_mb": rest / MB,
                "peak_mb": peak / MB,
                "growth_mb": growth,
                "peak_during_fast_mb": (fast_peak - rest) / MB,
                "fast_mb_s": fast.body_bytes / fast.total / MB,
                "slow_bytes": slow.body_bytes,
                "slow_seconds": slow.total,
            },
        )
    ]


async def bench_p6(bench: Bench, server: Process) -> list[Row]:
    s = bench.settings
    port = server.info["api_port"]
    request = api_get(server, server.info["activitiesPath"])
    warm = api_get(server, server.info["smallActivitiesPath"])
    await download(HOST, port, warm, keep=True)
    sampler = RSSSampler(server.pid)
    rest = await asyncio.to_thread(sampler.at_rest, 1.0)
    sampler.start()
    runs, problems = [], []
    for _ in range(s.p6_runs):
        result = await download(HOST, port, request, max_seconds=120, keep=True)
        count = count_activities(result.body) if result.status == 200 else None
        if result.status != 200 or count != s.activities:
            problems.append(f"{result.status}, {count} activities")
        runs.append(result)
    peak = sampler.stop()
    growth = (peak - rest) / MB
    ttfb = statistics.median(r.ttfb for r in runs)
    total = statistics.median(r.total for r in runs)
    size = runs[0].body_bytes / MB
    return [
        Row(
            "P6",
            f"GET /prospect-activities, {s.activities:,} activities",
            f"TTFB {ms(ttfb)}, total {ms(total)} ({size:.0f} MB), peak +{growth:.1f} MB",
            "< 100 MB",
            verdict(growth < 100) if not problems else "ERRORS: " + "; ".join(problems),
            baseline=f"at rest {rest / MB:.0f} MB",
            ratio=f"+{growth:.1f} MB",
            data={
                "ttfb_s": [r.ttfb for r in runs],
                "total_s": [r.total for r in runs],
                "body_mb": size,
                "rest_mb": rest / MB,
                "peak_mb": peak / MB,
                "growth_mb": growth,
            },
        )
    ]


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
        FIGURES["P7"],
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


def count_activities(body: bytes) -> int | None:
    """The length of the longest array in the document (the timeline)."""
    try:
        document = json.loads(body)
    except ValueError:
        return None
    best = 0
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            best = max(best, len(value))
        elif isinstance(value, dict):
            stack.extend(v for v in value.values() if isinstance(v, list | dict))
    return best


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
                await set_event_writing(server, on)
                for write, (port, make, count, status) in writes.items():
                    load = await run_load(
                        HOST, port, make, connections=1, duration=60, max_requests=count
                    )
                    p50s[(write, on)].append(percentile(load.latencies, 0.5))
                    errors += load.errors + sum(n for c, n in load.statuses.items() if c != status)
    finally:
        await set_event_writing(server, True)

    def row(row_id: str, write: str, what: str) -> Row:
        on, off = p50s[(write, True)], p50s[(write, False)]
        ratio = statistics.median(a / b for a, b in zip(on, off, strict=True))
        return Row(
            row_id,
            what,
            f"events on: p50 {statistics.median(on) * 1000:.2f} ms",
            "<= 1.25",
            f"ERRORS ({errors})" if errors else verdict(ratio <= 1.25),
            baseline=f"events off: p50 {statistics.median(off) * 1000:.2f} ms",
            ratio=f"{ratio:.2f}",
            data={"on_p50_s": on, "off_p50_s": off, "ratio": round(ratio, 3)},
        )

    return [
        row("P8a", "upload", "POST /lists/{id}/contacts, 100 contacts: events on vs off"),
        row("P8b", "insert", "call insert (the store's write path): events on vs off"),
    ]


async def bench_p9(bench: Bench, server: Process) -> list[Row]:
    """GET /v1/events?pageSize=100 at the feed's start against the same a million events deep
    (by cursor), side by side on one server."""
    s = bench.settings
    port = server.info["api_port"]
    since = server.info["eventsDeepSince"]
    before = await download(
        HOST, port, api_get(server, f"/v1/events?pageSize=100&since={since}"), keep=True
    )
    cursor = json.loads(before.body)["nextCursor"]
    requests = {
        "first": api_get(server, "/v1/events?pageSize=100"),
        "deep": api_get(server, f"/v1/events?pageSize=100&cursor={cursor}"),
    }
    problems = []
    for name, request in requests.items():
        answer = await download(HOST, port, request, keep=True)
        count = len(json.loads(answer.body)["events"]) if answer.status == 200 else None
        if count != 100:
            problems.append(f"{name}: {answer.status}, {count} events")
    results = await side_by_side(
        s, server.pid, {name: (port, lambda i, r=r: r) for name, r in requests.items()}
    )
    first, deep = results["first"], results["deep"]
    ratio = statistics.median(a / b for a, b in zip(first.rps, deep.rps, strict=True) if b)
    errors = first.errors + deep.errors
    result = "ERRORS: " + "; ".join(problems) if problems else None
    return [
        Row(
            "P9",
            f"GET /events?pageSize=100, {s.events:,} events deep vs page 1",
            "deep " + deep.describe(),
            "<= 1.2",
            result or (f"ERRORS ({errors})" if errors else verdict(ratio <= 1.2)),
            baseline="page 1 " + first.describe(),
            ratio=f"{ratio:.2f}",
            data={"first": first.summary(), "deep": deep.summary(), "ratio": round(ratio, 3)},
        )
    ]


# --- the run ---------------------------------------------------------------------------------


def not_run(row_id: str, what: str, target: str, why: str) -> Row:
    return Row(row_id, what, "-", target, why)


async def run_all(
    settings: Settings, only: set[str], workdir: Path, details: dict | None = None
) -> list[Row]:
    """Every figure in `only`; `details` (when given) receives P1's per-path table."""
    bench = Bench(settings, workdir)
    rows: list[Row] = []
    try:
        # 1. Request rates and round trips, on one server (P4, P5, P3) and P1's throughput.
        available = probe_features()
        if only & {"P1", "P3", "P4", "P5", "P8"}:
            args = ["--users", str(settings.users)]
            if available["calls"]:
                args += ["--calls", str(settings.calls)]
            if available["recording"] and "P1" in only:
                args += ["--recording", f"{bench.refs['p1']}={settings.p1_bytes}"]
            main = bench.start_server("server-main", *args, provider=available["recording"])
            features = main.info["features"]
            if "P4" in only:
                rows += await bench_p4(bench, main)
            if "P3" in only:
                rows += (
                    await bench_p3(bench, main)
                    if features["calls"]
                    else [
                        not_run(
                            "P3",
                            "GET /calls?pageSize=100 req/s",
                            ">= 0.8",
                            "NOT RUN: no GET /v1/calls yet",
                        )
                    ]
                )
            if "P5" in only:
                rows += await bench_p5(bench, main)
            if "P8" in only:
                rows += await bench_p8(bench, main)
            if "P1" in only:
                rows += (
                    await bench_p1(bench, main)
                    if features["recording"]
                    else [
                        not_run(row_id, "recording relay", target, "NOT RUN: no recording endpoint")
                        for row_id, target in zip(
                            FIGURES["P1"], (">= 1.0", "<= 1.2", "<= +2 ms"), strict=True
                        )
                    ]
                )
            main.stop()
        # 2. Memory, each on a fresh server so that earlier peaks do not hide later growth.
        if "P2" in only:
            if available["recording"]:
                server = bench.start_server(
                    "server-p2",
                    "--users",
                    "2",
                    "--recording",
                    f"{bench.refs['p2']}={settings.p2_bytes}",
                    provider=True,
                )
                rows += await bench_p2(bench, server)
                server.stop()
            else:
                rows.append(
                    not_run(
                        "P2",
                        "API peak RSS while a recording streams",
                        "< 64 MB",
                        "NOT RUN: no recording endpoint yet",
                    )
                )
        if "P6" in only:
            if available["activities"]:
                server = bench.start_server(
                    "server-p6", "--users", "2", "--activities", str(settings.activities)
                )
                rows += await bench_p6(bench, server)
                server.stop()
            else:
                rows.append(
                    not_run(
                        "P6",
                        "GET /prospect-activities",
                        "< 100 MB",
                        "NOT RUN: no GET /v1/prospect-activities yet",
                    )
                )
        if "P7" in only:
            rows += await bench_p7(bench)
        if "P9" in only:  # its own server: a feed a million events deep
            server = bench.start_server(
                "server-p9", "--users", "2", "--events", str(settings.events)
            )
            rows += await bench_p9(bench, server)
            server.stop()
        if "P10" in only:  # its own serve process, receiver and SQLite file
            from bench import webhooks

            rows += await webhooks.run_rows(bench, only, settings == QUICK)
        if "M1" in only:  # metrics on vs off (bench/metrics_cost.py)
            from bench import metrics_cost

            rows += await metrics_cost.run_rows(bench)
        if only & {"S1", "S2", "S3"}:  # stalled readers, long timelines (bench/streams.py)
            from bench import streams

            rows += await streams.run_rows(bench, only, settings == QUICK)
    finally:
        bench.stop_all()
    if details is not None and bench.p1_detail:
        details["P1"] = bench.p1_detail
    order = {row_id: i for i, row_id in enumerate(ROW_IDS)}
    return sorted(rows, key=lambda r: order[r.id])


_FEATURES: dict | None = None


def probe_features() -> dict:
    """Which endpoints the service has, asked of the code once (imports only, no server)."""
    global _FEATURES
    if _FEATURES is None:
        code = (
            "import json; from bench.server import route_exists; print(json.dumps({"
            "'calls': route_exists('/v1/calls'), "
            "'recording': route_exists('/v1/calls/x/recording'), "
            "'activities': route_exists('/v1/prospect-activities')}))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout
        _FEATURES = json.loads(out)
    return _FEATURES


def figures_of(ids: str) -> set[str]:
    """The figures that comma-separated figure or row ids name (P1b names P1); unknown ids
    raise ValueError."""
    figure_of = {row_id.upper(): figure for figure, rows in FIGURES.items() for row_id in rows}
    figure_of.update((figure, figure) for figure in FIGURES)
    names = [x.strip().upper() for x in ids.split(",") if x.strip()]
    unknown = sorted(name for name in names if name not in figure_of)
    if unknown:
        raise ValueError(f"unknown ids: {', '.join(unknown)}")
    return {figure_of[name] for name in names}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__.rpartition("\n\n    python -m bench")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes and durations (smoke)")
    parser.add_argument(
        "--only", help="comma-separated figures or rows, e.g. P4,P5 or P1c (default: all)"
    )
    parser.add_argument("--json", help="also write the rows with their raw figures here")
    parser.add_argument("--keep-logs", action="store_true", help="keep the servers' logs")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else Settings()
    try:
        only = figures_of(args.only) if args.only else set(FIGURES)
    except ValueError as exc:
        parser.error(str(exc))
    workdir = Path(tempfile.mkdtemp(prefix="wsapi-bench-"))
    started = time.monotonic()
    load_before = os.getloadavg()
    try:
        details: dict = {}
        rows = asyncio.run(run_all(settings, only, workdir, details))
    finally:
        if not args.keep_logs:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"logs: {workdir}", file=sys.stderr)
    elapsed = time.monotonic() - started
    print(table(rows, COLUMNS))
    if "P1" in details:
        print("\nP1, every path side by side (medians):\n" + p1_table(details["P1"]))
    load = f"load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after"
    print(
        f"\n{len(rows)} rows in {elapsed:.0f} s on {os.cpu_count()} CPUs ({load})"
        f"{' (quick mode: sizes too small to mean anything)' if args.quick else ''}"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "elapsed_s": elapsed,
                    "quick": args.quick,
                    "loadavg_before": load_before,
                    "loadavg_after": os.getloadavg(),
                    "details": details,
                    "rows": [dataclasses.asdict(r) for r in rows],
                },
                indent=2,
            )
            + "\n"
        )
    return 0
