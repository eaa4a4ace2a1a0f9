"""Prospect lifecycle and do-not-call at size, rows of `python -m bench.scale` (see its
docstring): L21, L22 deleting a list of `--prospects` members (the DELETE, then the background
purge until every member has lost it) and GET /v1/users meanwhile against idle; L23 PATCH
/v1/prospects/{id} at `--calls` calls against the same PATCH at 10,000 calls; L24 a 100-contact
upload with `--calls` do-not-call entries in the workspace against the same upload with none;
L25 adding 1,000 do-not-call entries that touch 1,000 prospects."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import sqlite3
import statistics
import sys
import time
from pathlib import Path

from bench.common import Row, ms, percentile, upload_body, verdict
from bench.scale_api import REPO, Api

PURGE_LIMIT = 600.0  # seconds the bench waits for a purge before it reports the row failed


def read_rows(path: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Rows of a read-only query on the API's file (WAL readers never wait for its writer)."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return conn.execute(sql, params).fetchall()


def workspace_of(api: Api) -> str:
    return api.marker["workspaces"][0]["id"]


async def run_import(api: Api, kind: str, lines: Path, *extra: str) -> dict:
    """`workspace-api import KIND` of `lines` into the API's first workspace, a process of its
    own beside the serving API; its summary. Raises when it fails or rejects a line."""
    env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
    env.update(WSAPI_SQLITE_PATH=str(api.path), WSAPI_LOG_LEVEL="warning")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server.cli",
        "import",
        kind,
        "--workspace",
        workspace_of(api),
        *extra,
        str(lines),
        env=env,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await proc.communicate()
    summary = json.loads(out) if out else {}
    if proc.returncode != 0 or summary.get("rejected"):
        raise RuntimeError(f"import {kind}: exit {proc.returncode}, {summary}")
    return summary


async def call(api: Api, path: str, method: str = "GET", body: dict | None = None, ok=200):
    answer = await api.get(
        path, method=method, body=json.dumps(body).encode() if body is not None else b""
    )
    if answer.status != ok:
        raise RuntimeError(f"{method} {path}: {answer.status} {answer.body[:300]!r}")
    return answer


async def idle_reads(api: Api, count: int) -> list[float]:
    """GET /v1/users one request at a time every 10 ms with nothing else running."""
    times = []
    for _ in range(count):
        times.append((await call(api, "/v1/users")).total)
        await asyncio.sleep(0.01)
    return times


async def bench_list_delete(args, small: Api, workdir: Path) -> list[Row]:
    """L21, L22: a list with every prospect of the workspace as a member (joined by `workspace-api
    import prospects --list`), deleted; GET /v1/users probed every 10 ms until the file shows the
    purge done, against as many probes before it with nothing running."""
    workspace = workspace_of(small)
    owner = read_rows(
        small.path,
        "SELECT _id FROM users WHERE workspaceId = ? AND deletedAt IS NULL LIMIT 1",
        (workspace,),
    )[0][0]
    created = await call(
        small, "/v1/lists", "POST", {"name": "Bench purge", "ownerUserId": owner}, ok=201
    )
    list_id = json.loads(created.body)["list"]["id"]
    lines = workdir / "members.ndjson"
    fields = ("firstName", "lastName", "phoneNumber", "email", "companyName", "jobTitle")
    rows = read_rows(
        small.path,
        f"SELECT {', '.join(fields)} FROM prospects WHERE workspaceId = ? AND deletedAt IS NULL "
        "AND NOT COALESCE(doNotCall, 0)",
        (workspace,),
    )
    with open(lines, "w") as out:
        for row in rows:
            out.write(json.dumps({k: v for k, v in zip(fields, row, strict=True) if v}) + "\n")
    await run_import(small, "prospects", lines, "--list", list_id)
    lines.unlink()
    members_sql = "SELECT COUNT(*) FROM memberships WHERE workspaceId = ? AND listId = ?"
    members = read_rows(small.path, members_sql, (workspace, list_id))[0][0]
    idle = await idle_reads(small, 200)
    reads: list[float] = []
    started = time.monotonic()
    await call(small, f"/v1/lists/{list_id}", "DELETE", ok=204)
    done, next_look = None, started
    while done is None and time.monotonic() - started < PURGE_LIMIT:
        answer = await call(small, "/v1/users")
        now = time.monotonic()
        if now >= next_look:
            next_look = now + 0.1
            waiting = read_rows(small.path, 'SELECT 1 FROM list_purges WHERE "_id" = ?', (list_id,))
            if not waiting:
                done = time.monotonic() - started
                break
        reads.append(answer.total)
        await asyncio.sleep(0.01)
    left = read_rows(small.path, members_sql, (workspace, list_id))[0][0]
    failed = done is None or left
    return [
        Row(
            "L21",
            f"DELETE /v1/lists/{{id}} of {members:,} members, until every member lost it",
            f"{done:.1f} s ({members / max(done, 1e-9):,.0f} members/s)"
            if done is not None
            else f"not done in {PURGE_LIMIT:.0f} s",
            "< 60 s",
            f"ERRORS ({left:,} members left)" if failed else verdict(done < 60),
            data={"seconds": done, "members": members},
        ),
        users_meanwhile("L22", "that purge", reads, idle),
    ]


def users_meanwhile(row_id: str, during: str, reads: list[float], idle: list[float]) -> Row:
    """The row of GET /v1/users latencies (`reads`, seconds) while `during` ran, against the
    same reads idle: p99 under 100 ms."""
    p99, idle_p99 = percentile(reads, 0.99), percentile(idle, 0.99)
    return Row(
        row_id,
        f"GET /v1/users during {during}",
        f"p99 {ms(p99)}, p50 {ms(percentile(reads, 0.5))} ({len(reads)} probes; "
        f"idle p99 {ms(idle_p99)})",
        "p99 < 100 ms",
        verdict(p99 < 0.1),
        baseline=f"idle p99 {ms(idle_p99)}",
        data={"during": reads, "idle": idle},
    )


async def bench_patch(args, big: Api, small: Api) -> list[Row]:
    """L23: PATCH /v1/prospects/{id} (a new jobTitle: a real change, its event recorded) of
    random prospects of the big file's workspace, interleaved with the same on the small
    file's (10,000 calls, as many prospects)."""
    rng = random.Random(23)
    sides = {}
    for name, api in (("big", big), ("small", small)):
        ids = [
            r[0]
            for r in read_rows(
                api.path,
                "SELECT _id FROM prospects WHERE workspaceId = ? AND deletedAt IS NULL",
                (workspace_of(api),),
            )
        ]
        sides[name] = (api, ids, [])
    count = max(args.samples * 5, 10)
    for n in range(count):
        order = ("big", "small") if n % 2 else ("small", "big")
        for name in order:
            api, ids, times = sides[name]
            path = f"/v1/prospects/{rng.choice(ids)}"
            answer = await call(api, path, "PATCH", {"jobTitle": f"Bench title {n}"})
            times.append(answer.total)
    big_times, small_times = sides["big"][2], sides["small"][2]
    p50, base = statistics.median(big_times), statistics.median(small_times)
    return [
        Row(
            "L23",
            f"PATCH /v1/prospects/{{id}}, {args.calls:,} calls, "
            f"{len(sides['big'][1]):,} prospects / at 10,000 calls",
            f"p50 {ms(p50)}, p99 {ms(percentile(big_times, 0.99))} ({count} each) vs p50 "
            f"{ms(base)}: {p50 / base:.2f}",
            "p50 < 10 ms",
            verdict(p50 < 0.01),
            baseline=f"p50 {ms(base)}",
            ratio=f"{p50 / base:.2f}",
            data={"big": big_times, "small": small_times},
        )
    ]


def write_entries(path: Path, count: int) -> None:
    """`count` do-not-call lines, half phone numbers (+1646..., never an uploaded contact's)
    and half emails, as a CRM's opt-out export."""
    with open(path, "w") as out:
        for n in range(count):
            if n % 2:
                out.write(f"optout{n}@dnc.bench.example\n")
            else:
                out.write(f"+1646{2_000_000 + n // 2:07d}\n")


async def bench_dnc(args, small: Api, suppressed: Api, workdir: Path) -> list[Row]:
    """L24: the same 100-contact uploads into `small` (no entry) and `suppressed` (a copy of the
    same file with `--calls` entries imported), interleaved. L25: then 1,000 entries, the phone
    numbers of 1,000 prospects of `suppressed`, in one POST /v1/do-not-call, 3 times."""
    lines = workdir / "dnc.txt"
    entries = args.calls
    write_entries(lines, entries)
    started = time.monotonic()
    await run_import(suppressed, "do-not-call", lines, "--reason", "crm")
    imported = time.monotonic() - started
    lines.unlink()
    paths = {}
    for api in (small, suppressed):
        first = json.loads((await call(api, "/v1/lists?pageSize=100")).body)["lists"][0]["id"]
        paths[api.port] = f"/v1/lists/{first}/contacts"
    times: dict[int, list[float]] = {small.port: [], suppressed.port: []}
    run = f"d{os.getpid()}"
    for n in range(args.uploads):
        body = upload_body(5_000_000 + n * 100, 100, run)
        for api in (small, suppressed) if n % 2 else (suppressed, small):
            answer = await api.get(paths[api.port], method="POST", body=body)
            result = json.loads(answer.body) if answer.status == 200 else {}
            if result.get("acceptedContacts") != 100 or result.get("suppressedContacts"):
                raise RuntimeError(f"upload: {answer.status} {answer.body[:300]!r}")
            times[api.port].append(answer.total)
    with_entries = statistics.median(times[suppressed.port])
    without = statistics.median(times[small.port])
    ratio = with_entries / without
    # L25: prospects of the workspace not suppressed yet, 1,000 distinct numbers per request.
    phones = [
        r[0]
        for r in read_rows(
            suppressed.path,
            "SELECT DISTINCT phoneE164 FROM prospects WHERE workspaceId = ? AND deletedAt IS NULL"
            " AND phoneE164 IS NOT NULL AND NOT COALESCE(doNotCall, 0) "
            "AND phoneE164 NOT LIKE '+1212%'",
            (workspace_of(suppressed),),
        )
    ]
    size = min(1000, len(phones) // 3)
    adds, touched = [], []
    for n in range(3):
        chosen = phones[n * size : (n + 1) * size]
        body = {"entries": [{"phoneNumber": p} for p in chosen], "reason": "crm"}
        answer = await call(suppressed, "/v1/do-not-call", "POST", body)
        outcomes = {r["outcome"] for r in json.loads(answer.body)["results"]}
        if outcomes != {"added"}:
            raise RuntimeError(f"POST /v1/do-not-call: outcomes {outcomes}")
        adds.append(answer.total)
        marks = ",".join("?" * len(chosen))
        touched.append(
            read_rows(
                suppressed.path,
                f"SELECT COUNT(*) FROM prospects WHERE workspaceId = ? AND doNotCall = 1 "
                f"AND phoneE164 IN ({marks})",
                (workspace_of(suppressed), *chosen),
            )[0][0]
        )
    worst = max(adds)
    return [
        Row(
            "L24",
            f"upload of 100 new contacts, {entries:,} do-not-call entries / none",
            f"p50 {ms(with_entries)} vs {ms(without)}: {ratio:.2f} ({args.uploads} each); "
            f"the entries imported in {imported:.0f} s",
            "<= 1.2",
            verdict(ratio <= 1.2),
            baseline=f"p50 {ms(without)}",
            ratio=f"{ratio:.2f}",
            data={"with": times[suppressed.port], "without": times[small.port]},
        ),
        Row(
            "L25",
            f"POST /v1/do-not-call, {size:,} entries touching {size:,} prospects (3 times)",
            f"max {ms(worst)} ({', '.join(ms(t) for t in adds)}); prospects now "
            f"doNotCall: {', '.join(f'{t:,}' for t in touched)}",
            "< 2 s",
            f"ERRORS (touched {touched})"
            if min(touched, default=0) < size
            else verdict(worst < 2.0),
            data={"seconds": adds, "touched": touched},
        ),
    ]
