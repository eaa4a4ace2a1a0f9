"""GET /v1/exports/calls at size, rows of `python -m bench.scale` (see its docstring): L13 to
L16, every call exported against the bare limit (bench/scale_export_bare.py), its duration,
the API's memory meanwhile, and GET /v1/users while it runs."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.common import HOST, MB, Row, ms, percentile, verdict
from bench.httpload import download, request_bytes
from bench.memory import RSSSampler
from bench.scale_api import REPO, Api


class _Drain(asyncio.BufferedProtocol):
    """The bare export's client: reads into one buffer as fast as it can until the peer closes,
    counting bytes (as bench.httpload's download does for the API)."""

    def __init__(self, done: asyncio.Future):
        self.view = memoryview(bytearray(1024 * 1024))
        self.done, self.bytes, self.started = done, 0, 0.0

    def connection_made(self, transport) -> None:
        self.started = time.perf_counter()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.view

    def buffer_updated(self, nbytes: int) -> None:
        self.bytes += nbytes

    def connection_lost(self, exc) -> None:
        if not self.done.done():
            self.done.set_result((self.bytes, time.perf_counter() - self.started))


async def bare_export(path: Path, workspace_id: str) -> tuple[int, float]:
    """(bytes, seconds) of the bare limit exporting every settled call of the workspace."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    server = await loop.create_server(lambda: _Drain(done), HOST, 0)
    port = server.sockets[0].getsockname()[1]
    settled = int((time.time() - 5) * 1000)  # sync_settle_seconds' default, as the API's
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.scale_export_bare",
        str(path),
        workspace_id,
        str(settled),
        str(port),
        stdout=subprocess.DEVNULL,
        cwd=REPO,
    )
    try:
        return await asyncio.wait_for(done, 300)
    finally:
        await proc.wait()
        server.close()


async def bench_export(args, big: Api) -> list[Row]:
    """Every call through GET /v1/exports/calls against the bare limit, interleaved (B A A B
    ...), the API's memory sampled during each export; then one more export while GET
    /v1/users is probed one request at a time."""
    wid = big.marker["workspaces"][0]["id"]
    path = "/v1/exports/calls"
    await bare_export(big.path, wid)  # warm-up: the file's pages in the OS cache
    rates: dict[str, list[float]] = {"api": [], "bare": []}
    seconds: list[float] = []
    growth: list[int] = []
    sizes: set[int] = set()
    errors: list[str] = []
    for round_index in range(args.export_rounds):
        order = ["bare", "api"] if round_index % 2 == 0 else ["api", "bare"]
        for side in order:
            if side == "bare":
                size, took = await bare_export(big.path, wid)
            else:
                sampler = RSSSampler(big.pid)
                before = sampler.rss()
                sampler.start()
                answer = await download(HOST, big.port, big.request(path), max_seconds=300)
                growth.append(sampler.stop() - before)
                size, took = answer.body_bytes, answer.total
                seconds.append(took)
                if answer.status != 200 or not answer.complete:
                    errors.append(f"{answer.status} complete={answer.complete}")
            sizes.add(size)
            rates[side].append(size / took)
    if len(sizes) != 1:
        errors.append(f"the two sides sent different bytes: {sorted(sizes)}")
    users = request_bytes("GET", "/v1/users", HOST, big.port, big.headers())
    idle = [(await download(HOST, big.port, users)).total for _ in range(100)]
    probes: list[float] = []
    task = asyncio.ensure_future(download(HOST, big.port, big.request(path), max_seconds=300))
    while not task.done():
        answer = await download(HOST, big.port, users, max_seconds=60)
        if not task.done():  # only probes that ran wholly during the export count
            probes.append(answer.total)
            if answer.status != 200:
                errors.append(f"/v1/users {answer.status}")
        await asyncio.sleep(0.01)
    if not task.result().complete:
        errors.append("the probed export did not complete")
    api_rate, bare_rate = statistics.median(rates["api"]), statistics.median(rates["bare"])
    ratio = api_rate / bare_rate
    slowest, worst_growth = max(seconds), max(growth)
    p99 = percentile(probes, 0.99)
    failed = f"ERRORS ({'; '.join(errors[:3])})" if errors else None
    size_text = f"{next(iter(sizes)) / MB:.0f} MB" if len(sizes) == 1 else "sizes differ"
    return [
        Row(
            "L13",
            f"GET /v1/exports/calls ({args.calls:,} calls, {size_text}) / bare limit",
            f"{api_rate / MB:.0f} MB/s vs {bare_rate / MB:.0f} MB/s: ratio {ratio:.2f}",
            ">= 0.5",
            failed or verdict(ratio >= 0.5),
        ),
        Row(
            "L14",
            "the export's duration",
            f"{', '.join(f'{s:.1f}' for s in seconds)} s",
            "< 30 s",
            failed or verdict(slowest < 30),
        ),
        Row(
            "L15",
            "API RSS growth during an export",
            f"max {worst_growth / MB:.1f} MB ({', '.join(f'{g / MB:.1f}' for g in growth)})",
            "< 64 MB",
            failed or verdict(worst_growth < 64 * MB),
        ),
        Row(
            "L16",
            "GET /v1/users while an export runs",
            f"p99 {ms(p99)}, p50 {ms(percentile(probes, 0.5))} ({len(probes)} probes; idle "
            f"p99 {ms(percentile(idle, 0.99))})",
            "p99 < 50 ms",
            failed or verdict(p99 < 0.05),
        ),
    ]
