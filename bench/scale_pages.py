"""Pages of GET /v1/calls at size, rows of `python -m bench.scale` (see its docstring): L1, L2
the API's page against a bare handler serving the same bytes, L3, L4 page 1 at 1M calls
against 10k and a filtered total, L11, L12 a page 100,000 records deep by number and by
cursor."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from bench.common import HOST, Row, ms, percentile, verdict
from bench.httpload import request_bytes, run_load
from bench.scale_api import Api, Bare, sequential
from bench.scale_data import SMALL_CALLS


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
