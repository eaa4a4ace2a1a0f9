"""The API's reads against their baselines, rows of `python -m bench`:

- P3 GET /calls?pageSize=100 and P4 GET /users: requests per second against a bare handler
  doing the same store work in the same process;
- P6 the API's RSS while a 100,000-activity timeline streams;
- P9 GET /v1/events?pageSize=100 a million events deep against page 1.
"""

from __future__ import annotations

import asyncio
import json
import statistics

from bench.common import HOST, MB, Row, ms, verdict
from bench.harness import Bench, Process, api_get
from bench.httpload import download, request_bytes
from bench.memory import RSSSampler
from bench.sides import side_by_side, throughput_row


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
        0.8,
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
