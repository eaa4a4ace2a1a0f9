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
  L19: then a tenth as many calls more, while the API also gets a POST /v1/lists every 0.5 s
  and, from a second client with the ingest key, a POST /v1/calls every 0.5 s, between two
  imports of half as many calls each with no writes beside them (the import's rate alone, as
  deep on average): no error, the writes' p99 < 250 ms (a write waits for the import's unit
  under way, store/sqlite/turns.py, and the import writes its calls in units of about 80 ms,
  store/sqlite/units.py), and the import's rate beside the writes >= 0.8 of its rate alone.
  L20 (information): as many calls in random time order into a fresh file again, against the
  same seeding: the worst order a file can come in (every time-keyed index takes its entries
  at random places).

- L21 DELETE /v1/lists/{id} of a list with every prospect of the small file's workspace
  (100,000; joined by `workspace-api import prospects --list`), then the background purge
  until every member has lost it: < 60 s; L22 GET /v1/users every 10 ms meanwhile: p99 <
  100 ms (beside its idle p99).
- L23 PATCH /v1/prospects/{id} on a copy of the big file (1M calls, 100,000 prospects), random
  prospects, interleaved with the same PATCH at 10k calls: p50 < 10 ms.
- L24 100 new contacts into a fresh copy of the small file with as many do-not-call entries as
  calls (1M; imported by `workspace-api import do-not-call`) over the same uploads into a fresh
  copy with none, interleaved: <= 1.2. L25 then 3 POST /v1/do-not-call of 1,000 entries, the
  numbers of 1,000 prospects each: the slowest < 2 s.
- L26 POST /v1/erasures of a prospect with 5,000 activities and 500 recorded calls, on a copy of
  the small file, until the request is `completed` (its recordings deleted at the simulated
  provider): < 10 s; L27 GET /v1/users every 10 ms meanwhile: p99 < 100 ms (beside its idle
  p99). Measured by bench/scale_erasure.py.

The data files are seeded once (a few minutes for 1M calls) and cached in bench/.data/
(bench/scale_data.py). `--calls N` runs smaller (e.g. 100000 for a quick look; also the
do-not-call entries of L24), `--prospects N` the prospects of both files (the list of L21).
The figures are measured by bench/scale_pages.py, scale_export.py, scale_queries.py,
scale_writes.py and scale_lifecycle.py, on the processes of bench/scale_api.py.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.common import MB, Row, table, verdict
from bench.scale_api import Api
from bench.scale_data import (
    SMALL_CALLS,
    SMALL_PROSPECTS,
    start_seeding,
    wait_seeded,
    working_copy,
)
from bench.scale_erasure import bench_erasure
from bench.scale_export import bench_export
from bench.scale_lifecycle import bench_dnc, bench_list_delete, bench_patch
from bench.scale_pages import bench_deep, bench_page_one, bench_throughput
from bench.scale_queries import bench_metrics, bench_recording
from bench.scale_writes import bench_import, bench_uploads, remove_file

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
    "L21",
    "L22",
    "L23",
    "L24",
    "L25",
    "L26",
    "L27",
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
    big_path, big_child = start_seeding(args.calls, args.prospects)
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
        extra: list[Api] = []  # the APIs on further copies, started by the steps that use them

        def on_copy(path: Path, marker: dict, name: str) -> Api:
            api = Api(working_copy(path, f"{name}.sqlite"), marker, workdir / f"api-{name}.log")
            extra.append(api)
            return api

        async def patch_step():
            # PATCH writes: on a copy of the big file, so that the cache never changes.
            big_copy = on_copy(big_path, big_marker, "patch")
            await big_copy.ready()
            return await bench_patch(args, big_copy, small)

        async def dnc_step():
            # Two fresh copies of the small file: one takes the entries, one none.
            none, suppressed = (on_copy(small_path, small_marker, n) for n in ("dnc-none", "dnc"))
            await none.ready()
            await suppressed.ready()
            return await bench_dnc(args, none, suppressed, workdir)

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
                ("lists", lambda: bench_list_delete(args, small, workdir)),
                ("patch", patch_step),
                ("dnc", dnc_step),
                ("erasure", lambda: bench_erasure(args, small_path, small_marker, workdir)),
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
            for api in extra:
                api.stop()
            for copy in [small_copy, *(api.path for api in extra)]:
                remove_file(copy)
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
        help="prospects in the first workspace of both files (default 100,000): the "
        "workspace that takes the uploads, the deleted list's members (L21), the prospects "
        "patched (L23)",
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
        help="steps to run: throughput page deep export metrics recording uploads lists "
        "patch dnc erasure import",
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
