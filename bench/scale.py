"""`python -m bench.scale`: the API on the embedded SQLite store with 1,000,000 calls in one
workspace: whether its pages, metrics, lookups and uploads stay fast and its memory flat at
that size, each figure side by side with its baseline.

Every figure is measured in this one run against real `workspace-api serve` processes on
loopback (MONGODB_URI unset, WSAPI_SQLITE_PATH the data file, a rate limit too high to
matter), and printed as one table with its target and PASS/MISS:

- L1 GET /v1/calls?pageSize=100, 16 keep-alive clients, interleaved rounds: the API against a
  bare Tornado handler (own process) serving the very bytes the API answered: ratio >= 0.2;
  L2 the API's p99 in those rounds < 25 ms.
- L3 page 1 at 1M calls over page 1 at 10k calls (a second file): <= 2. L4 (information) a
  filtered total (?direction=inbound page 1 counts its matches).
- L5 dialer metrics over the 90 days of calls: < 1 s; L6 /healthz while it runs: < 50 ms.
- L7 a recording's reference (`store.calls.recording_ref`, in-process on the 1M file, random
  calls): < 2 ms.
- L8 100 new contacts into a workspace of 100,000 prospects: p50 < 100 ms; L9 the last 5 of
  40 uploads over the first 5: <= 1.5 (no growth with the uploads already made).
- L10 the API's RSS after all the above with 1M calls: < 200 MB.
- L11/L12 page 1 vs a page 100,000 records deep, by page number (page=1001) and by cursor
  (the nextCursor of page 1000): the cursor's ratio <= 1.5 (a sync client walks every page);
  page numbers informative.
- L13 GET /v1/exports/calls, every call to a client on loopback that reads as fast as it can,
  against the bare limit (bench/scale_export_bare.py: one thread reading the same rows from the
  same file and writing the same bytes to a socket), interleaved: ratio >= 0.5; L14 its
  duration < 30 s; L15 the API's memory growth during it < 64 MB; L16 GET /v1/users p99 while
  it runs < 50 ms.
- L17 `workspace-api import calls` of as many calls (an NDJSON file of dialer bodies, each with
  a providerCallSid, oldest first as a dialer exports its history and as the seeder writes its
  calls) into an empty workspace of a fresh file, while `serve` runs on it, against
  `demo --calls N` seeding a fresh file in the same run (calls per second of each): >= 0.5;
  L17 also reports the size of the file's write-ahead log once the import has exited (the
  import truncates it at its end). L18 the API's GET /v1/users during the import: p99 < 100 ms.
  L19: then a tenth as many calls more, while the API also gets a POST /v1/lists every 0.5 s:
  no error, p99 < 2 s (a write waits for the import's unit under way, store/sqlite/turns.py),
  and the import's rate meanwhile (every write of another process makes the import's writer
  drop its page cache).
  L20 (information): as many calls in random time order into a fresh file again, against the
  same seeding: the worst order a file can come in (every time-keyed index takes its entries
  at random places).

The data files are seeded once (a few minutes for 1M calls) and cached in bench/.data/
(bench/scale_data.py). `--calls N` runs smaller (e.g. 100000 for a quick look).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import os
import random
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from bench.common import HOST, MB, Row, ms, percentile, table, upload_body, verdict
from bench.httpload import download, request_bytes, run_load
from bench.memory import RSSSampler
from bench.processes import stop_process
from bench.scale_data import (
    SMALL_CALLS,
    SMALL_PROSPECTS,
    start_seeding,
    wait_seeded,
    working_copy,
)

REPO = Path(__file__).resolve().parent.parent
# Every row this benchmark reports, in the order it prints them (bench/common.py: the ids).
ROW_IDS = (
    "L1",
    "L2",
    "L3",
    "L4",
    "L11",
    "L12",
    "L13",
    "L14",
    "L15",
    "L16",
    "L5",
    "L6",
    "L7",
    "L8",
    "L9",
    "L17",
    "L18",
    "L19",
    "L20",
    "L10",
)
COLUMNS = (
    ("id", "id"),
    ("figure", "what"),
    ("measured", "measured"),
    ("target", "target"),
    ("result", "result"),
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


# --- processes -------------------------------------------------------------------------------


class Api:
    """A `workspace-api serve` process on one SQLite file."""

    def __init__(self, path: Path, marker: dict, log: Path):
        self.path, self.marker = path, marker
        self.port = free_port()
        self.key = marker["workspaces"][0]["apiKey"]
        env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
        env.update(
            WSAPI_SQLITE_PATH=str(path),
            WSAPI_PORT=str(self.port),
            WSAPI_HOST=HOST,
            WSAPI_RATE_LIMIT_PER_MINUTE=str(10**9),
            WSAPI_LOG_LEVEL="warning",
            WSAPI_PROCESSES="1",
        )
        self.log = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve"],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
        self.pid = self.proc.pid

    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.key}"}

    def request(
        self, path: str, method: str = "GET", body: bytes = b"", extra: dict | None = None
    ) -> bytes:
        headers = self.headers()
        if body:
            headers["Content-Type"] = "application/json"
        headers.update(extra or {})
        return request_bytes(method, path, HOST, self.port, headers, body)

    async def ready(self, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the API on {self.path.name} exited ({self.proc.returncode})")
            try:
                answer = await download(
                    HOST, self.port, request_bytes("GET", "/readyz", HOST, self.port), max_seconds=5
                )
                if answer.status == 200:
                    return
            except OSError:
                pass
            await asyncio.sleep(0.2)
        raise RuntimeError(f"the API on {self.path.name} did not get ready")

    async def get(self, path: str, **kwargs):
        return await download(
            HOST, self.port, self.request(path, **kwargs), keep=True, max_seconds=120
        )

    def rss(self) -> int:
        return psutil.Process(self.pid).memory_info().rss

    def stop(self) -> None:
        stop_process(self.proc, timeout=15)
        self.log.close()


class Bare:
    """bench/scale_bare.py serving `body`."""

    def __init__(self, body: bytes, workdir: Path):
        body_file = workdir / "bare-body.json"
        body_file.write_bytes(body)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.scale_bare", "0", str(body_file)],
            stdout=subprocess.PIPE,
            cwd=REPO,
        )
        self.port = int(self.proc.stdout.readline())
        self.pid = self.proc.pid

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


# --- measurements ----------------------------------------------------------------------------


async def sequential(api: Api, paths: list[str], rounds: int) -> dict[str, list[float]]:
    """Latency (time to the last byte) of each path, one request at a time, the paths
    interleaved round by round so that the machine's load falls on all alike."""
    times: dict[str, list[float]] = {path: [] for path in paths}
    for _ in range(rounds):
        for path in paths:
            answer = await api.get(path)
            if answer.status != 200:
                raise RuntimeError(f"GET {path}: {answer.status} {answer.body[:300]!r}")
            times[path].append(answer.total)
    return times


async def bench_throughput(args, big: Api, workdir: Path) -> list[Row]:
    path = "/v1/calls?pageSize=100"
    first = await big.get(path)
    assert first.status == 200, first.body[:300]
    bare = Bare(first.body, workdir)
    try:
        api_request = big.request(path)
        bare_request = request_bytes("GET", path, HOST, bare.port)
        sides = {"api": (big.port, api_request), "bare": (bare.port, bare_request)}
        for port, request in sides.values():  # warm-up, not counted
            await run_load(HOST, port, lambda i, r=request: r, connections=16, duration=args.warmup)
        rps: dict[str, list[float]] = {"api": [], "bare": []}
        latencies: dict[str, list[float]] = {"api": [], "bare": []}
        errors = 0
        for round_index in range(args.rounds):
            order = ["api", "bare"] if round_index % 2 == 0 else ["bare", "api"]
            for name in order:
                port, request = sides[name]
                load = await run_load(
                    HOST, port, lambda i, r=request: r, connections=16, duration=args.round_seconds
                )
                rps[name].append(load.rps)
                latencies[name].extend(load.latencies)
                errors += load.errors
    finally:
        bare.stop()
    ratio = statistics.median(a / b for a, b in zip(rps["api"], rps["bare"], strict=True))
    p99 = percentile(latencies["api"], 0.99)
    api_text = (
        f"API {statistics.median(rps['api']):.0f} req/s vs bare "
        f"{statistics.median(rps['bare']):.0f} req/s: ratio {ratio:.3f}"
    )
    return [
        Row(
            "L1",
            f"GET /calls?pageSize=100, 16 clients ({args.calls:,} calls)",
            api_text,
            ">= 0.2",
            verdict(ratio >= 0.2) if not errors else f"ERRORS ({errors})",
        ),
        Row(
            "L2",
            "API latency in those rounds",
            f"p50 {ms(percentile(latencies['api'], 0.5))}, p99 {ms(p99)} "
            f"(bare p99 {ms(percentile(latencies['bare'], 0.99))})",
            "p99 < 25 ms",
            verdict(p99 < 0.025),
        ),
    ]


async def bench_page_one(args, big: Api, small: Api) -> list[Row]:
    path, filtered = "/v1/calls?pageSize=100", "/v1/calls?pageSize=100&direction=inbound"
    for api in (big, small):
        await sequential(api, [path], 3)  # warm-up
    times_big: list[float] = []
    times_small: list[float] = []
    times_filtered: list[float] = []
    for _ in range(args.samples):
        times_big += (await sequential(big, [path], 1))[path]
        times_small += (await sequential(small, [path], 1))[path]
        times_filtered += (await sequential(big, [filtered], 1))[filtered]
    big_p50, small_p50 = statistics.median(times_big), statistics.median(times_small)
    ratio = big_p50 / small_p50
    return [
        Row(
            "L3",
            f"page 1 at {args.calls:,} calls / page 1 at {SMALL_CALLS:,}",
            f"{ms(big_p50)} / {ms(small_p50)} = {ratio:.2f}",
            "<= 2",
            verdict(ratio <= 2),
        ),
        Row(
            "L4",
            f"(info) filtered page 1 ?direction=inbound (counts; {args.calls:,})",
            f"p50 {ms(statistics.median(times_filtered))}, "
            f"p99 {ms(percentile(times_filtered, 0.99))}",
            "reported",
            "INFO",
        ),
    ]


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
    import sqlite3

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


async def bench_uploads(args, small: Api) -> list[Row]:
    lists = await small.get("/v1/lists?pageSize=100")
    list_id = json.loads(lists.body)["lists"][0]["id"]
    path = f"/v1/lists/{list_id}/contacts"
    run = f"r{os.getpid()}"
    times, total = [], 0
    for n in range(args.uploads):
        answer = await small.get(path, method="POST", body=upload_body(n * 100, 100, run))
        if answer.status != 200:
            raise RuntimeError(f"POST {path}: {answer.status} {answer.body[:300]!r}")
        result = json.loads(answer.body)
        if n and result["totalProspects"] != total + 100:  # 100 new prospects in the list
            raise RuntimeError(f"the upload did not add 100 prospects: {result}")
        total = result["totalProspects"]
        times.append(answer.total)
    p50 = statistics.median(times)
    head, tail = statistics.median(times[:5]), statistics.median(times[-5:])
    growth = tail / head
    return [
        Row(
            "L8",
            f"POST /lists/{{id}}/contacts, 100 new ({args.prospects:,} prospects)",
            f"p50 {ms(p50)}, p99 {ms(percentile(times, 0.99))} ({len(times)} uploads)",
            "p50 < 100 ms",
            verdict(p50 < 0.1),
        ),
        Row(
            "L9",
            f"last 5 / first 5 of {len(times)} uploads",
            f"{ms(tail)} / {ms(head)} = {growth:.2f}",
            "<= 1.5 (flat)",
            verdict(growth <= 1.5),
        ),
    ]


async def bench_deep(args, big: Api) -> list[Row]:
    """Page 1 and a page 100,000 records deep, by page number and by cursor: a cursor page
    must cost the same at any depth (a sync client walks them all)."""
    depth_page = min(1001, max(2, args.calls // 100))
    pages = []
    for number in (1, depth_page - 1):
        answer = await big.get(f"/v1/calls?pageSize=100&page={number}")
        body = json.loads(answer.body)
        if answer.status != 200 or not body.get("nextCursor"):
            raise RuntimeError(f"page {number}: {answer.status} {answer.body[-300:]!r}")
        pages.append(body)
    cursor_shallow, cursor_deep = pages[0]["nextCursor"], pages[1]["nextCursor"]
    paths = {
        "page 1": "/v1/calls?pageSize=100&page=1",
        "page deep": f"/v1/calls?pageSize=100&page={depth_page}",
        "cursor 2": f"/v1/calls?pageSize=100&cursor={cursor_shallow}",
        "cursor deep": f"/v1/calls?pageSize=100&cursor={cursor_deep}",
    }
    # Same records either way: the deep cursor page is the deep numbered page.
    by_cursor = json.loads((await big.get(paths["cursor deep"])).body)["calls"]
    by_number = json.loads((await big.get(paths["page deep"])).body)["calls"]
    if [c["id"] for c in by_cursor] != [c["id"] for c in by_number]:
        raise RuntimeError("the deep cursor page is not the deep numbered page")
    await sequential(big, list(paths.values()), 2)  # warm-up
    times = await sequential(big, list(paths.values()), args.samples)
    p50 = {name: statistics.median(times[path]) for name, path in paths.items()}
    depth = (depth_page - 1) * 100
    page_ratio = p50["page deep"] / p50["page 1"]
    cursor_ratio = p50["cursor deep"] / p50["cursor 2"]
    return [
        Row(
            "L11",
            f"page number: page {depth_page} ({depth:,} deep) / page 1",
            f"{ms(p50['page deep'])} / {ms(p50['page 1'])} = {page_ratio:.2f}",
            "may grow",
            "INFO",
        ),
        Row(
            "L12",
            f"cursor: {depth:,} deep / 100 deep",
            f"{ms(p50['cursor deep'])} / {ms(p50['cursor 2'])} = {cursor_ratio:.2f}",
            "<= 1.5 (flat)",
            verdict(cursor_ratio <= 1.5),
        ),
    ]


def write_call_lines(
    path: Path,
    target: Path,
    workspace_id: str,
    count: int,
    seed: int = 7,
    first: int = 0,
    ordered: bool = True,
) -> None:
    """`count` call bodies of the workspace in `target` (its users and prospects), one per line,
    as a dialer's history: 90 days back, each with its own providerCallSid (numbered from
    `first`). `ordered`: oldest first, as a dialer exports its history (and as demo seeding
    writes its calls); else in random time order."""
    with sqlite3.connect(f"file:{target}?mode=ro", uri=True) as conn:
        users = [
            r[0]
            for r in conn.execute(
                "SELECT _id FROM users WHERE workspaceId = ? AND deletedAt IS NULL", (workspace_id,)
            )
        ]
        prospects = [
            r[0]
            for r in conn.execute(
                "SELECT _id FROM prospects WHERE workspaceId = ?", (workspace_id,)
            )
        ]
        lists = [
            r[0]
            for r in conn.execute("SELECT _id FROM lists WHERE workspaceId = ?", (workspace_id,))
        ]
    rng = random.Random(seed)
    end = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0) - dt.timedelta(hours=1)
    dispositions = ["connected"] * 3 + ["no_answer"] * 4 + ["voicemail"] * 2 + ["busy", "failed"]
    ago = [rng.randint(0, 90 * 86400) for _ in range(count)]
    if ordered:
        ago.sort(reverse=True)
    with open(path, "w") as out:
        for n in range(count):
            started = end - dt.timedelta(seconds=ago[n])
            disposition = rng.choice(dispositions)
            talk = rng.randint(20, 600) if disposition in ("connected", "voicemail") else 0
            body = {
                "userId": rng.choice(users),
                "prospectId": rng.choice(prospects),
                "listId": rng.choice(lists) if rng.random() < 0.8 else None,
                "direction": "outbound" if rng.random() < 0.92 else "inbound",
                "disposition": disposition,
                "fromNumber": f"+1212555{100 + rng.randint(0, 9):04d}",
                "toNumber": f"+1415555{rng.randint(0, 9999):04d}",
                "startedAt": started.isoformat() + "Z",
                "answeredAt": (started + dt.timedelta(seconds=9)).isoformat() + "Z"
                if talk
                else None,
                "endedAt": (started + dt.timedelta(seconds=9 + talk)).isoformat() + "Z",
                "meetingBooked": disposition == "connected" and rng.random() < 0.1,
                "notes": "Interested; call back next week" if talk and rng.random() < 0.3 else None,
                "providerCallSid": f"CA{first + n:032x}",
            }
            if talk and rng.random() < 0.8:
                body["recordingSid"] = f"RE{rng.getrandbits(128):032x}"
                body["recordingDurationSeconds"] = talk
            out.write(json.dumps(body) + "\n")


async def bench_import(args, workdir: Path) -> list[Row]:
    """L17 to L20: see the module's docstring."""
    seeded, target = workdir / "seeded.sqlite", workdir / "import.sqlite"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "BENCH_SCALE_DATA": str(workdir)}
    env.pop("MONGODB_URI", None)
    # The baseline: demo seeding of N calls (and a tenth more in the second workspace).
    seeding = await seeded_file(seeded, env, args.calls)
    with sqlite3.connect(seeded) as conn:
        seeded_calls = conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    seed_rate = seeded_calls / seeding["seedSeconds"]
    remove_file(seeded)
    lines = workdir / "calls.ndjson"
    more = max(args.calls // 10, 1000)
    marker = await empty_workspace(target, env)
    workspace = marker["workspaces"][0]["id"]
    api = Api(target, marker, workdir / "api-import.log")
    try:
        await api.ready()
        env_import = {**env, "WSAPI_SQLITE_PATH": str(target), "WSAPI_LOG_LEVEL": "warning"}
        write_call_lines(lines, target, workspace, args.calls)
        first = await import_beside(api, env_import, workspace, lines, None)
        # L19: a tenth more calls at that depth, while the API is also written to.
        write_call_lines(lines, target, workspace, more, seed=8, first=args.calls)
        owner = owners(target, workspace)[0]
        second = await import_beside(api, env_import, workspace, lines, owner)
    finally:
        api.stop()
        remove_file(target)
    # L20: as many calls in random time order, into a fresh file again.
    marker = await empty_workspace(target, env)
    api = Api(target, marker, workdir / "api-import-shuffled.log")
    try:
        await api.ready()
        workspace = marker["workspaces"][0]["id"]
        write_call_lines(lines, target, workspace, args.calls, ordered=False)
        shuffled = await import_beside(api, env_import, workspace, lines, None)
    finally:
        api.stop()
        remove_file(target)
        lines.unlink(missing_ok=True)
    rate = first.imported / first.seconds
    ratio = rate / seed_rate
    p99 = percentile(first.reads, 0.99)
    writes = second.writes
    write_p99 = percentile(writes, 0.99)
    shuffled_rate = shuffled.imported / shuffled.seconds
    return [
        Row(
            "L17",
            f"import {args.calls:,} calls / demo seeding (calls per second, same run)",
            f"{rate:,.0f}/s ({first.seconds:.0f} s) vs {seed_rate:,.0f}/s "
            f"({seeded_calls:,} calls in {seeding['seedSeconds']:.0f} s): {ratio:.2f}; "
            f"write-ahead log after it {first.wal_bytes / 1e6:,.1f} MB",
            ">= 0.5",
            first.problem() if first.failed(args.calls) else verdict(ratio >= 0.5),
        ),
        Row(
            "L18",
            "GET /v1/users while the import runs",
            f"p50 {ms(percentile(first.reads, 0.5))}, p99 {ms(p99)} ({len(first.reads)} probes)",
            "p99 < 100 ms",
            f"ERRORS ({first.errors})" if first.errors else verdict(p99 < 0.1),
        ),
        Row(
            "L19",
            f"POST /v1/lists while {more:,} more calls are imported (the import's rate then)",
            f"p50 {ms(percentile(writes, 0.5))}, p99 {ms(write_p99)} ({len(writes)} probes); "
            f"{second.imported / second.seconds:,.0f} calls/s",
            "no error, p99 < 2 s",
            second.problem() if second.failed(more) else verdict(write_p99 < 2.0),
        ),
        Row(
            "L20",
            f"import {args.calls:,} calls in random time order / demo seeding",
            f"{shuffled_rate:,.0f}/s ({shuffled.seconds:.0f} s) vs {seed_rate:,.0f}/s: "
            f"{shuffled_rate / seed_rate:.2f}",
            "reported",
            shuffled.problem() if shuffled.failed(args.calls) else "INFO",
        ),
    ]


async def empty_workspace(path: Path, env: dict) -> dict:
    """A fresh file with the seeder's workspaces, users, lists and prospects and no calls; its
    marker."""
    return await seeded_file(path, env, 0)


async def seeded_file(path: Path, env: dict, calls: int) -> dict:
    """A fresh file seeded by the demo's seeder with `calls` calls (and 500 prospects); its
    marker, with the seeding's time (bench/scale_data.py)."""
    from bench.scale_data import read_marker

    await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "bench.scale_data", str(path), str(calls), "500"],
        env=env,
        cwd=REPO,
        check=True,
        stderr=subprocess.DEVNULL,
    )
    marker = read_marker(path)
    assert marker is not None
    return marker


def remove_file(path: Path) -> None:
    """A SQLite file with what lies beside it."""
    for suffix in ("", "-wal", "-shm", "-turns", "-ratelimit", ".json"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


@dataclasses.dataclass
class Imported:
    """An import run beside the API: its figures and what the probes of the API measured."""

    seconds: float
    imported: int
    exit: int
    reads: list[float]
    writes: list[float]
    errors: int
    wal_bytes: int  # the file's write-ahead log when the import had exited

    def failed(self, expected: int) -> bool:
        """Whether the import did not create every one of its `expected` lines, or a probe of
        the API failed."""
        return self.exit != 0 or self.imported != expected or self.errors > 0

    def problem(self) -> str:
        """The result column of a row whose run failed."""
        return f"ERRORS (exit {self.exit}, {self.imported:,} imported, {self.errors} failed)"


async def import_beside(
    api: Api, env: dict, workspace: str, lines: Path, owner: str | None
) -> Imported:
    """`workspace-api import calls` of `lines` while the API is probed: GET /v1/users one at a
    time every 50 ms; with `owner`, a POST /v1/lists (owned by that user) every 0.5 s too."""
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server.cli",
        "import",
        "calls",
        "--workspace",
        workspace,
        str(lines),
        env=env,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    reads: list[float] = []
    writes: list[float] = []
    errors, next_write = 0, started
    waiting = asyncio.ensure_future(proc.communicate())
    while not waiting.done():
        answer = await api.get("/v1/users")
        errors += answer.status != 200
        if not waiting.done():
            reads.append(answer.total)
        if owner is not None and time.monotonic() >= next_write:
            next_write += 0.5
            body = json.dumps({"name": f"During {len(writes)}", "ownerUserId": owner})
            wrote = await api.get("/v1/lists", method="POST", body=body.encode())
            errors += wrote.status != 201
            if not waiting.done():
                writes.append(wrote.total)
        await asyncio.sleep(0.05)
    out, _ = waiting.result()
    seconds = time.monotonic() - started
    wal = Path(f"{env['WSAPI_SQLITE_PATH']}-wal")
    wal_bytes = wal.stat().st_size if wal.exists() else 0
    summary = json.loads(out) if out else {}
    assert proc.returncode is not None
    return Imported(
        seconds, summary.get("created", 0), proc.returncode, reads, writes, errors, wal_bytes
    )


def owners(path: Path, workspace_id: str) -> list[str]:
    """The workspace's users (any can own a list)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return [
            row[0]
            for row in conn.execute(
                "SELECT _id FROM users WHERE workspaceId = ? AND deletedAt IS NULL",
                (workspace_id,),
            )
        ]


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


# --- the run ---------------------------------------------------------------------------------


def load_note() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} cores"


def report(row: Row) -> None:
    print(
        f"    {row.id} {row.what.strip()}: {row.measured} (target {row.target}: {row.result})",
        file=sys.stderr,
    )


async def run(args) -> list[Row]:
    if args.only and set(args.only) == {"import"}:  # seeds files of its own: no cached data
        print(f"... import ({load_note()})", file=sys.stderr)
        with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
            rows = await bench_import(args, Path(tmp))
        for row in rows:
            report(row)
        return rows
    started = time.monotonic()
    big_path, big_child = start_seeding(args.calls, 500)
    small_path, small_child = start_seeding(SMALL_CALLS, args.prospects)
    big_marker = wait_seeded(big_path, big_child)
    small_marker = wait_seeded(small_path, small_child)
    print(
        f"data ready after {time.monotonic() - started:.0f} s "
        f"(cached: {big_child is None and small_child is None}); {load_note()}",
        file=sys.stderr,
    )
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        workdir = Path(tmp)
        small_copy = working_copy(small_path, "uploads.sqlite")
        big = Api(big_path, big_marker, workdir / "api-big.log")
        small = Api(small_copy, small_marker, workdir / "api-small.log")
        try:
            await big.ready()
            await small.ready()
            steps = [
                ("throughput", lambda: bench_throughput(args, big, workdir)),
                ("page 1", lambda: bench_page_one(args, big, small)),
                ("deep pages", lambda: bench_deep(args, big)),
                ("export", lambda: bench_export(args, big)),
                ("metrics", lambda: bench_metrics(args, big)),
                ("recording", lambda: bench_recording(args, big_path, big_marker)),
                ("uploads", lambda: bench_uploads(args, small)),
                ("import", lambda: bench_import(args, workdir)),
            ]
            for name, step in steps:
                if args.only and name.split()[0] not in args.only:
                    continue
                print(f"... {name} ({load_note()})", file=sys.stderr)
                for row in await step():
                    report(row)
                    rows.append(row)
            rss = big.rss()
            rows.append(
                Row(
                    "L10",
                    f"API process RSS after the runs ({args.calls:,} calls)",
                    f"{rss / MB:.0f} MB",
                    "< 200 MB",
                    verdict(rss < 200 * MB),
                )
            )
        except BaseException:
            for log in workdir.glob("api-*.log"):
                text = log.read_text(errors="replace").strip()
                if text:
                    print(
                        f"--- {log.name} (last lines)\n" + "\n".join(text.splitlines()[-10:]),
                        file=sys.stderr,
                    )
            raise
        finally:
            big.stop()
            small.stop()
            small_copy.unlink(missing_ok=True)
            for suffix in ("-wal", "-shm"):
                Path(f"{small_copy}{suffix}").unlink(missing_ok=True)
    return rows


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--calls",
        type=int,
        default=1_000_000,
        help="calls in the big workspace (default 1,000,000; seeded once, cached in bench/.data/)",
    )
    parser.add_argument(
        "--prospects",
        type=int,
        default=SMALL_PROSPECTS,
        help="prospects in the workspace that takes the uploads (default "
        "100,000; its file also has the 10k calls of page 1's baseline)",
    )
    parser.add_argument("--rounds", type=int, default=4, help="throughput rounds per side")
    parser.add_argument("--round-seconds", type=float, default=4.0)
    parser.add_argument("--warmup", type=float, default=1.5)
    parser.add_argument(
        "--samples", type=int, default=40, help="sequential samples per latency figure"
    )
    parser.add_argument("--metrics-runs", type=int, default=3)
    parser.add_argument(
        "--export-rounds", type=int, default=2, help="export rounds per side (L13 to L15)"
    )
    parser.add_argument("--uploads", type=int, default=40)
    parser.add_argument(
        "--only",
        nargs="*",
        default=None,
        help="steps to run: throughput page deep export metrics recording uploads import",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    rows = asyncio.run(run(args))
    print(f"\nbench.scale: SQLite store, {args.calls:,} calls in one workspace; {load_note()}")
    print(table(rows, COLUMNS))
    if args.json:
        Path(args.json).write_text(json.dumps([dataclasses.asdict(r) for r in rows], indent=2))
    return 0  # like `python -m bench`: the table is the result


if __name__ == "__main__":
    sys.exit(main())
