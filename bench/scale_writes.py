"""Writes at size, rows of `python -m bench.scale` (see its docstring): L8, L9 uploads of
100 new contacts into a workspace of 100,000 prospects, and L17 to L20 `workspace-api import
calls` beside a serving API, against the demo's seeding of as many calls."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.common import Row, ms, percentile, upload_body, verdict
from bench.scale_api import REPO, Api


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
        # L19: a tenth more calls at that depth, while the API is also written to, between
        # two imports of half as many alone (its rate alone: as deep on average).
        owner = owners(target, workspace)[0]
        half = more // 2
        alone: list[Imported] = []
        first_sid = args.calls
        for count, writer in ((half, None), (more, owner), (more - half, None)):
            write_call_lines(lines, target, workspace, count, seed=8 + first_sid, first=first_sid)
            first_sid += count
            run = await import_beside(api, env_import, workspace, lines, writer)
            if writer is None:
                alone.append(run)
            else:
                second = run
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
    lists, calls = second.writes, second.calls
    writes = lists + calls
    write_p99 = percentile(writes, 0.99)
    alone_rate = sum(a.imported for a in alone) / sum(a.seconds for a in alone)
    beside_rate = second.imported / second.seconds
    beside_ratio = beside_rate / alone_rate
    alone_failed = next((a for a in alone if a.failed(a.expected)), None)
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
            f"POST /v1/lists and POST /v1/calls (two clients) while {more:,} more calls are "
            "imported; the import's rate then / alone (same run)",
            f"p50 {ms(percentile(writes, 0.5))}, p99 {ms(write_p99)} ({len(writes)} writes; "
            f"lists p99 {ms(percentile(lists, 0.99))}, calls p99 {ms(percentile(calls, 0.99))}); "
            f"{beside_rate:,.0f} calls/s vs {alone_rate:,.0f} calls/s alone: "
            f"{beside_ratio:.2f}",
            "no error, p99 < 250 ms, rate >= 0.8",
            second.problem()
            if second.failed(more)
            else alone_failed.problem()
            if alone_failed is not None
            else verdict(write_p99 < 0.25 and beside_ratio >= 0.8),
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
    writes: list[float]  # POST /v1/lists
    calls: list[float]  # POST /v1/calls
    errors: int
    wal_bytes: int  # the file's write-ahead log when the import had exited
    expected: int  # the lines of its file

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
    time every 50 ms; with `owner`, also a POST /v1/lists (owned by that user) every 0.5 s
    and, from another client with the workspace's ingest key, a POST /v1/calls (a call of that
    user, a new providerCallSid each) every 0.5 s."""
    with open(lines, "rb") as source:
        expected = sum(1 for _ in source)
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
    calls: list[float] = []
    errors, next_write = 0, started
    waiting = asyncio.ensure_future(proc.communicate())

    async def dialer() -> int:
        """The other client: a call recorded every 0.5 s while the import runs."""
        failed, due = 0, started + 0.25
        key = api.marker["workspaces"][0]["ingestApiKey"]
        while not waiting.done():
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            due += 0.5
            if waiting.done():
                break
            body = json.dumps(api_call_body(owner or "", started, len(calls)))
            wrote = await api.get(
                "/v1/calls",
                method="POST",
                body=body.encode(),
                extra={"Authorization": f"Bearer {key}"},
            )
            failed += wrote.status != 201
            if not waiting.done():
                calls.append(wrote.total)
        return failed

    other = asyncio.ensure_future(dialer()) if owner is not None else None
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
    if other is not None:
        errors += await other
    out, _ = waiting.result()
    seconds = time.monotonic() - started
    wal = Path(f"{env['WSAPI_SQLITE_PATH']}-wal")
    wal_bytes = wal.stat().st_size if wal.exists() else 0
    summary = json.loads(out) if out else {}
    assert proc.returncode is not None
    return Imported(
        seconds,
        summary.get("created", 0),
        proc.returncode,
        reads,
        writes,
        calls,
        errors,
        wal_bytes,
        expected,
    )


def api_call_body(user: str, stamp: float, n: int) -> dict:
    """A finished call for POST /v1/calls, given by contact (a new prospect each time)."""
    ended = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    started = ended - dt.timedelta(seconds=70)
    return {
        "userId": user,
        "prospect": {"phoneNumber": f"+1646555{n % 10000:04d}"},
        "direction": "outbound",
        "disposition": "connected",
        "fromNumber": "+12125550100",
        "toNumber": f"+1646555{n % 10000:04d}",
        "startedAt": started.isoformat() + "Z",
        "answeredAt": (started + dt.timedelta(seconds=9)).isoformat() + "Z",
        "endedAt": ended.isoformat() + "Z",
        "providerCallSid": f"CA{int(stamp * 1000):016x}{n:016x}",
    }


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
