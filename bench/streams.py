"""Streamed responses under abuse: rows S1, S2 and S3 of `python -m bench`. A workspace's
clients must not be able to pin the API's memory or slow everyone else down by opening
streams and not reading them, or by reading many long ones at once.

S1, S2: 200 clients of one workspace open a recording (S1) or a long timeline (S2) and stop
    reading. The API's RSS growth and the p99 of an ordinary GET /v1/users meanwhile; the
    streams the workspace may hold (`max_streams_per_workspace`, default 16) are admitted, the
    rest get 429, and the admitted ones are cut after `stream_stall_seconds` (5 s here instead
    of 30, so that the run shows the cut).
S3: 50 clients start reading a 5,060-activity timeline at once (twice); the p99 of an ordinary
    GET /v1/users meanwhile (the limit is raised to 64 so that all 50 really stream).

The ordinary requests come from a thread with blocking sockets, so the load's own event loop
does not delay them. Each row runs on a fresh server: `python -m bench.streams` (below) is
bench.server's set-up with the stream settings given on the command line.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import http.client
import os
import socket
import statistics
import threading
import time
from typing import TYPE_CHECKING

import psutil

from bench import seeding
from bench.common import HOST, MB, Row, ms, percentile, verdict
from bench.httpload import download, request_bytes
from bench.memory import RSSSampler

if TYPE_CHECKING:
    from bench.harness import Bench, Process

TIMELINE = 5_060


@dataclasses.dataclass(frozen=True)
class StreamSettings:
    stalled: int = 200
    stalled_activities: int = 30_000  # a timeline far larger than the socket buffers hold
    stall_seconds: float = 5.0  # the bench server's stream_stall_seconds (default 30)
    cut_after: float = 3.0  # seconds past the stall period when the cut ones are counted
    timelines: int = 50
    rounds: int = 2
    baseline_seconds: float = 2.0


QUICK = StreamSettings(
    stalled=40,
    stalled_activities=20_000,
    stall_seconds=1.0,
    cut_after=1.0,
    timelines=10,
    rounds=1,
    baseline_seconds=0.5,
)


# --- the server ------------------------------------------------------------------------------


async def serve(args) -> None:
    from tornado.netutil import bind_sockets

    from bench.server import bench_config, serve_until_stopped
    from server.app import http_server, make_app
    from server.logs import setup_logging
    from server.services import open_services

    config = bench_config(args).replace(
        stream_stall_seconds=args.stall, max_streams_per_workspace=args.max_streams
    )
    setup_logging("warning")  # 200 refused streams are not worth a line each here
    store, auth = await open_services(config)
    recordings = dict(item.split("=", 1) for item in args.recording)
    info = await seeding.seed(
        store,
        auth,
        users=5,
        recordings={ref: int(size) for ref, size in recordings.items()},
        activities=args.activities,
    )
    sockets = bind_sockets(0, HOST)
    http_server(make_app(config, store, auth), config).add_sockets(sockets)
    info.update(pid=os.getpid(), api_port=sockets[0].getsockname()[1])
    await serve_until_stopped(info)


def parse_args(argv=None):
    from bench.server import BENCH_RATE_LIMIT

    parser = argparse.ArgumentParser(prog="python -m bench.streams")
    parser.add_argument("--stall", type=float, default=30.0)
    parser.add_argument("--max-streams", type=int, default=16)
    parser.add_argument("--activities", type=int, default=TIMELINE)
    parser.add_argument("--recording", action="append", default=[], metavar="REF=BYTES")
    parser.add_argument("--provider-url")
    parser.add_argument("--provider-account")
    parser.add_argument("--provider-token")
    parser.add_argument("--rate-limit", type=int, default=BENCH_RATE_LIMIT)
    return parser.parse_args(argv)


# --- the clients -----------------------------------------------------------------------------


class Prober(threading.Thread):
    """GET /v1/users on one keep-alive connection, back to back, timing each answer."""

    def __init__(self, port: int, key: str):
        super().__init__(name="prober", daemon=True)
        self.port, self.key = port, key
        self.latencies: list[float] = []
        self.errors = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        conn = http.client.HTTPConnection(HOST, self.port, timeout=30)
        headers = {"Authorization": f"Bearer {self.key}"}
        while not self.stopping.is_set():
            started = time.perf_counter()
            try:
                conn.request("GET", "/v1/users", headers=headers)
                response = conn.getresponse()
                response.read()
                ok = response.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                conn.close()
                conn = http.client.HTTPConnection(HOST, self.port, timeout=30)
            self.latencies.append(time.perf_counter() - started)
            self.errors += not ok
            self.stopping.wait(0.005)
        conn.close()

    def measure(self, seconds: float) -> list[float]:
        """Latencies seen during the next `seconds` (the thread must be running)."""
        start = len(self.latencies)
        time.sleep(seconds)
        return self.latencies[start:]


class _Stalled(asyncio.Protocol):
    """Sends its request, reads the status line, then never reads again."""

    def __init__(self, request: bytes, status: asyncio.Future):
        self.request, self.status, self.head = request, status, b""

    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        if not self.status.done():
            self.head += data
            if b"\r\n" in self.head:
                self.status.set_result(int(self.head.split(b" ", 2)[1]))
                self.transport.pause_reading()  # and never again

    def connection_lost(self, exc) -> None:
        if not self.status.done():
            self.status.set_result(0)


async def open_stalled(port: int, request: bytes) -> tuple[int, asyncio.Transport]:
    loop = asyncio.get_running_loop()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await loop.sock_connect(sock, (HOST, port))
    status = loop.create_future()
    transport, _ = await loop.create_connection(lambda: _Stalled(request, status), sock=sock)
    return await asyncio.wait_for(status, 30), transport


def established(pid: int, port: int) -> int:
    """The server's open client connections on `port`."""
    return sum(
        1
        for c in psutil.Process(pid).net_connections("tcp")
        if c.laddr and c.laddr.port == port and c.status == "ESTABLISHED"
    )


def p99(values: list[float]) -> float:
    return percentile(values, 0.99)


# --- the rows --------------------------------------------------------------------------------


def start_server(bench: Bench, name: str, args: list[str], provider: bool = False) -> Process:
    """A `python -m bench.streams` server, a child of `bench` (stopped with the others)."""
    return bench.start_server(name, *args, provider=provider, module="bench.streams")


async def stalled_phase(bench: Bench, server: Process, s: StreamSettings, target: str) -> dict:
    """`s.stalled` clients open `target` and stop reading; the figures while they stall."""
    info, port = server.info, server.info["api_port"]
    headers = {"Authorization": f"Bearer {info['key']}"}
    request = request_bytes("GET", target, HOST, port, headers)
    await download(HOST, port, request, max_seconds=0.3)  # warm-up
    sampler = RSSSampler(server.pid)
    rest = await asyncio.to_thread(sampler.at_rest, 1.0)
    base_connections = established(server.pid, port)
    prober = Prober(port, info["key"])
    prober.start()
    baseline = await asyncio.to_thread(prober.measure, s.baseline_seconds)
    sampler.start()
    opened = await asyncio.gather(*[open_stalled(port, request) for _ in range(s.stalled)])
    statuses = [status for status, _ in opened]
    for status, transport in opened:
        if status != 200:
            transport.abort()  # a refused client goes away (else its connection idles on)
    start = len(prober.latencies)  # while they stall (the burst of 200 requests is over)
    await asyncio.sleep(s.stall_seconds * 0.8)  # all stalled, none cut yet
    during = prober.latencies[start:]
    admitted = established(server.pid, port) - base_connections - 1  # less the prober's
    await asyncio.sleep(s.stall_seconds * 0.2 + s.cut_after)  # past the stall period: cut by now
    left = established(server.pid, port) - base_connections - 1
    peak = sampler.stop()
    prober.stopping.set()
    await asyncio.to_thread(prober.join)
    for _, transport in opened:
        transport.abort()
    return {
        "rest_mb": rest / MB,
        "peak_mb": peak / MB,
        "growth_mb": (peak - rest) / MB,
        "p99_ms": p99(during) * 1000,
        "baseline_p99_ms": p99(baseline) * 1000,
        "probes": len(during),
        "probe_errors": prober.errors,
        "ok": statuses.count(200),
        "refused": statuses.count(429),
        "other": [x for x in statuses if x not in (200, 429)],
        "admitted_open": admitted,
        "open_after_stall": left,
        "stall_seconds": s.stall_seconds,
        "cut_after": s.cut_after,
    }


def stalled_row(row_id: str, what: str, d: dict) -> Row:
    problems = []
    if d["other"]:
        problems.append(f"statuses {sorted(set(d['other']))}")
    if d["probe_errors"]:
        problems.append(f"{d['probe_errors']} ordinary requests failed")
    ok = d["growth_mb"] < 64 and d["p99_ms"] < 100 and d["open_after_stall"] <= 0
    return Row(
        row_id,
        what,
        f"peak +{d['growth_mb']:.1f} MB; GET /v1/users p99 {d['p99_ms']:.1f} ms; {d['ok']} "
        f"admitted, {d['refused']} got 429; admitted still open {d['stall_seconds']:g} s "
        f"+ {d['cut_after']:g} s later: {max(d['open_after_stall'], 0)}",
        "< 64 MB, p99 < 100 ms, all cut",
        verdict(ok) if not problems else "ERRORS: " + "; ".join(problems),
        baseline=f"at rest {d['rest_mb']:.0f} MB; p99 {d['baseline_p99_ms']:.1f} ms without them",
        ratio=f"+{d['growth_mb']:.1f} MB",
        data=d,
    )


async def bench_s1(bench: Bench, s: StreamSettings) -> list[Row]:
    ref = bench.refs["p2"]  # the provider serves it (P2's recording: far more than buffers hold)
    server = start_server(
        bench,
        "server-s1",
        [
            "--stall",
            str(s.stall_seconds),
            "--recording",
            f"{ref}={bench.settings.p2_bytes}",
            "--activities",
            "0",
        ],
        provider=True,
    )
    path = f"/v1/calls/{server.info['recordingCalls'][ref]}/recording"
    d = await stalled_phase(bench, server, s, path)
    server.stop()
    return [stalled_row("S1", f"{s.stalled} stalled recording readers (one workspace)", d)]


async def bench_s2(bench: Bench, s: StreamSettings) -> list[Row]:
    server = start_server(
        bench,
        "server-s2",
        ["--stall", str(s.stall_seconds), "--activities", str(s.stalled_activities)],
    )
    d = await stalled_phase(bench, server, s, server.info["activitiesPath"])
    server.stop()
    return [
        stalled_row(
            "S2",
            f"{s.stalled} stalled timeline readers "
            f"({s.stalled_activities:,} activities, one workspace)",
            d,
        )
    ]


async def bench_s3(bench: Bench, s: StreamSettings) -> list[Row]:
    """50 clients start reading the timeline at once, each once (twice over)."""
    server = start_server(bench, "server-s3", ["--max-streams", "64"])  # all 50 stream
    info, port = server.info, server.info["api_port"]
    request = request_bytes(
        "GET", info["activitiesPath"], HOST, port, {"Authorization": f"Bearer {info['key']}"}
    )
    first = await download(HOST, port, request, keep=True)
    whole = first.status == 200 and first.body.count(b'"occurredAt"') == TIMELINE
    prober = Prober(port, info["key"])
    prober.start()
    baseline = await asyncio.to_thread(prober.measure, s.baseline_seconds)
    start = len(prober.latencies)
    started = time.perf_counter()
    results = []
    for _ in range(s.rounds):
        results += await asyncio.gather(
            *[download(HOST, port, request, max_seconds=120) for _ in range(s.timelines)]
        )
    elapsed = time.perf_counter() - started
    during = prober.latencies[start:]
    prober.stopping.set()
    await asyncio.to_thread(prober.join)
    server.stop()
    failed = [r.status for r in results if r.status != 200 or not r.complete]
    problems = [f"{len(failed)} timelines failed ({sorted(set(failed))})"] if failed else []
    if not whole:
        problems.append("the timeline was not whole")
    if prober.errors:
        problems.append(f"{prober.errors} ordinary requests failed")
    ttfb = statistics.median(r.ttfb for r in results)
    return [
        Row(
            "S3",
            f"GET /v1/users while {s.timelines} clients read a {TIMELINE:,}-activity "
            f"timeline at once (x{s.rounds})",
            f"p99 {ms(p99(during))}, max {ms(max(during, default=0))} ({len(during)} requests "
            f"in {elapsed:.1f} s; timeline TTFB median {ms(ttfb)})",
            "p99 < 200 ms",
            verdict(p99(during) < 0.2) if not problems else "ERRORS: " + "; ".join(problems),
            baseline=f"p99 {ms(p99(baseline))} alone",
            ratio=f"{p99(during) / max(p99(baseline), 1e-6):.1f}x",
            data={
                "p99_ms": p99(during) * 1000,
                "max_ms": max(during, default=0) * 1000,
                "baseline_p99_ms": p99(baseline) * 1000,
                "probes": len(during),
                "timelines": len(results),
                "seconds": elapsed,
                "ttfb_ms": sorted(r.ttfb * 1000 for r in results),
            },
        )
    ]


async def run_rows(bench: Bench, only: set[str], quick: bool) -> list[Row]:
    """The rows of `only` among S1, S2, S3, on servers started through `bench`."""
    s = QUICK if quick else StreamSettings()
    rows = []
    if "S1" in only:
        rows += await bench_s1(bench, s)
    if "S2" in only:
        rows += await bench_s2(bench, s)
    if "S3" in only:
        rows += await bench_s3(bench, s)
    return rows


if __name__ == "__main__":
    asyncio.run(serve(parse_args()))
