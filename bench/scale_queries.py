"""The heavy reads of one request at size, rows of `python -m bench.scale` (see its
docstring): L5, L6 the dialer metrics over 90 days and /healthz while they run, L7 the store's
lookup of a recording's reference."""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import sqlite3
import statistics
import time
from pathlib import Path

from bench.common import HOST, Row, ms, percentile, verdict
from bench.httpload import download, request_bytes
from bench.scale_api import Api


def metrics_path(marker: dict) -> str:
    last = dt.date.fromisoformat(marker["anchor"]) - dt.timedelta(days=1)
    first = last - dt.timedelta(days=89)
    return f"/v1/reporting/dialer-metrics?from={first}&to={last}"


async def bench_metrics(args, big: Api) -> list[Row]:
    path = metrics_path(big.marker)
    health = request_bytes("GET", "/healthz", HOST, big.port)
    durations: list[float] = []
    statuses: list[str] = []
    health_times: list[float] = []
    idle: list[float] = []  # the control: the same probes with no query running
    for _ in range(200):
        idle.append((await download(HOST, big.port, health, max_seconds=60)).total)
        await asyncio.sleep(0.01)
    for _ in range(args.metrics_runs):
        task = asyncio.ensure_future(big.get(path))
        while not task.done():
            answer = await download(HOST, big.port, health, max_seconds=60)
            if not task.done():  # only probes that ran wholly during the query count
                health_times.append(answer.total)
            await asyncio.sleep(0.01)
        answer = task.result()
        durations.append(answer.total)
        if answer.status != 200:  # 503: the query outlasted db_timeout_seconds
            statuses.append(f"{answer.status} after {answer.total:.1f} s")
    worst = percentile(health_times, 1.0)  # nan when no probe ran wholly during a query
    p50 = statistics.median(durations)
    failed = f"; {', '.join(statuses)}" if statuses else ""
    return [
        Row(
            "L5",
            "GET /reporting/dialer-metrics, 90 days",
            f"p50 {ms(p50)} (runs: {', '.join(f'{d * 1000:.0f}' for d in durations)} ms{failed})",
            "< 1 s",
            verdict(p50 < 1 and not statuses),
        ),
        Row(
            "L6",
            "/healthz while that query runs",
            f"max {ms(worst)}, p50 {ms(percentile(health_times, 0.5))} "
            f"({len(health_times)} probes; idle: max {ms(max(idle))}, p50 "
            f"{ms(statistics.median(idle))})",
            "< 50 ms",
            verdict(worst < 0.05),
        ),
    ]


async def bench_recording(args, path: Path, marker: dict) -> list[Row]:
    """The store's lookup of a recording's reference (what the recording handler awaits
    before it asks the provider for the first byte), in-process on the file."""

    from store.database import open_store

    wid = marker["workspaces"][0]["id"]
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        ids = [
            row[0]
            for row in conn.execute(
                'SELECT "_id" FROM calls WHERE workspaceId = ? AND hasRecording = 1 '
                "ORDER BY random() LIMIT ?",
                (wid, args.samples * 10),
            )
        ]
    store = open_store("", "x", sqlite_path=str(path))
    try:
        for call_id in ids[:20]:  # warm-up
            await store.calls.recording_ref(wid, call_id)
        random.Random(7).shuffle(ids)
        times = []
        for call_id in ids:
            started = time.perf_counter()
            ref = await store.calls.recording_ref(wid, call_id)
            times.append(time.perf_counter() - started)
            assert ref, call_id
    finally:
        await store.close()
    p50, p99 = percentile(times, 0.5), percentile(times, 0.99)
    return [
        Row(
            "L7",
            f"recording lookup before the first byte ({len(times)} random calls)",
            f"p50 {ms(p50)}, p99 {ms(p99)}",
            "< 2 ms",
            verdict(p50 < 0.002),
        )
    ]
