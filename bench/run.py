"""`python -m bench` (`make bench`): the API's hot paths, each measured against a baseline in
the same run, printed as one table of ratios with targets.

- P1a-P1c the recording relay (bench/recordings.py) against nginx relaying the same provider:
  throughput, relay CPU per GiB, and a 1 MiB seek's time to first byte over the provider's own.
- P2 the API's RSS while a 500 MB recording streams to a slow and a fast client.
- P3 GET /calls?pageSize=100 and P4 GET /users (bench/reads.py, with P6 and P9): requests per
  second against a bare handler doing the same store work in the same process.
- P5a, P5b contact uploads of 10 and 100 contacts (bench/writes.py, with P7 and P8): database
  round trips per request against an upload of 1 (they must not grow with the upload).
- P6 the API's RSS while a 100,000-activity timeline streams.
- P7a, P7b what sqlite_synchronous=full (every commit on disk before the answer) costs an upload
  of 100 contacts and a list creation, against normal, two servers on two files side by side.
- P8a, P8b what recording events costs a write: a contact upload of 100 contacts and a call
  insert with event writing on against off (a bench-only switch), interleaved in one run.
- P9 GET /v1/events?pageSize=100 a million events deep against page 1.
- P10a, P10b webhooks (bench/webhooks.py): deliveries per second from one API process against
  a bare aiohttp loop posting the same pre-signed bodies, and the lag from a write's
  acknowledgement to its delivery at 100 writes per second; P10a-wire is P10a on the wire
  tier's database (FerretDB 1.24, tests/wire.py), reported without a target.
- W3a-W3d, E4a-E4d how soon a write reaches its consumers with the default configuration
  (bench/latency.py): write acknowledged -> webhook delivered (W3) and -> in GET /v1/events
  (E4), idle and at 100 writes per second, on SQLite and on the wire tier.
- D1a, D1b what secure_delete (deleted content zeroed in the SQLite file) costs a write: a
  contact upload of 100 contacts and a call insert with it on against off (a bench-only switch),
  interleaved in one run (bench/secure_delete.py).
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
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import Row, not_run, table
from bench.harness import QUICK, ROOT, Bench, Settings
from bench.reads import bench_p3, bench_p4, bench_p6, bench_p9
from bench.recordings import bench_p1, bench_p2, p1_table
from bench.secure_delete import bench_d1
from bench.writes import bench_p5, bench_p7, bench_p8

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
    "P10": ("P10a", "P10b", "P10a-wire"),
    "W3": ("W3a", "W3b", "W3c", "W3d"),
    "E4": ("E4a", "E4b", "E4c", "E4d"),
    "D1": ("D1a", "D1b"),
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


# --- the run ---------------------------------------------------------------------------------


async def run_all(
    settings: Settings, only: set[str], workdir: Path, details: dict | None = None
) -> list[Row]:
    """Every figure in `only`; `details` (when given) receives P1's per-path table."""
    bench = Bench(settings, workdir)
    rows: list[Row] = []
    try:
        # 1. Request rates and round trips, on one server (P4, P5, P3) and P1's throughput.
        available = probe_features()
        if only & {"P1", "P3", "P4", "P5", "P8", "D1"}:
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
            if "D1" in only:
                rows += await bench_d1(bench, main)
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
        if only & {"W3", "E4"}:  # default settings: serve, a receiver, a feed follower
            from bench import latency

            rows += await latency.run_rows(bench, only, settings == QUICK)
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
