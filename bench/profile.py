"""Profile the API process while one benchmark's load runs against it (py-spy, sampling).

    python -m bench.profile users|calls|contacts|activities|recording [--seconds 8]

Starts a bench server seeded for the target, attaches `py-spy record` to it, drives the
target's load for `--seconds`, and prints the functions that held the most samples, inclusive
and self. Needs py-spy (`pip install -e '.[bench]'`) and permission to ptrace the server
(root, or kernel.yama.ptrace_scope=0). Raw samples are kept with --raw FILE (flamegraph input).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import HOST, MB, upload_body
from bench.harness import Bench, Settings, api_get
from bench.httpload import download, run_load

TARGETS = ("users", "calls", "contacts", "activities", "recording")


def summarize(raw: Path, top: int = 30) -> str:
    """Inclusive and self sample shares per function (file:line dropped) from py-spy raw."""
    inclusive: collections.Counter = collections.Counter()
    own: collections.Counter = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        for frame in set(frames):
            inclusive[frame] += n
        own[frames[-1]] += n
    lines = [f"{total} samples", "--- inclusive"]
    skip = ("asyncio/", "<frozen runpy>", "bench/server.py")
    shown = [(f, n) for f, n in inclusive.most_common() if not any(s in f for s in skip)]
    lines += [f"{100 * n / total:5.1f}%  {f}" for f, n in shown[:top]]
    lines.append("--- self")
    lines += [f"{100 * n / total:5.1f}%  {f}" for f, n in own.most_common(top // 2)]
    return "\n".join(lines)


async def drive(target: str, bench: Bench, server, seconds: float) -> str:
    port = server.info["api_port"]
    if target in ("users", "calls"):
        path = "/v1/users" if target == "users" else "/v1/calls?pageSize=100"
        request = api_get(server, path)
        result = await run_load(HOST, port, lambda i: request, connections=8, duration=seconds)
        return f"{result.rps:,.0f} req/s, statuses {dict(result.statuses)}"
    if target == "contacts":
        path = f"/v1/lists/{server.info['listId']}/contacts"
        headers = {
            "Authorization": f"Bearer {server.info['key']}",
            "Content-Type": "application/json",
        }
        from bench.httpload import request_bytes

        def make(i: int) -> bytes:
            return request_bytes(
                "POST", path, HOST, port, headers, upload_body(i * 100, 100, "profile")
            )

        result = await run_load(HOST, port, make, connections=1, duration=seconds)
        return f"{result.requests} uploads of 100 contacts, statuses {dict(result.statuses)}"
    if target == "activities":
        request = api_get(server, server.info["activitiesPath"])
        deadline, runs = time.monotonic() + seconds, 0
        while time.monotonic() < deadline:
            await download(HOST, port, request, max_seconds=120)
            runs += 1
        return f"{runs} timelines read"
    ref = bench.refs["p1"]
    request = api_get(server, f"/v1/calls/{server.info['recordingCalls'][ref]}/recording")
    deadline, moved, spent = time.monotonic() + seconds, 0, 0.0
    while time.monotonic() < deadline:
        left = max(0.1, deadline - time.monotonic())
        result = await download(HOST, port, request, max_seconds=left)
        moved, spent = moved + result.body_bytes, spent + result.total
    return f"{moved / MB:,.0f} MB at {moved / spent / MB:,.0f} MB/s"


async def main(args) -> int:
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        print("py-spy is not installed: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    settings = Settings()
    workdir = Path(tempfile.mkdtemp(prefix="wsapi-profile-"))
    bench = Bench(settings, workdir)
    server_args = {
        "users": ["--users", "25"],
        "calls": ["--calls", str(settings.calls)],
        "contacts": [],
        "activities": ["--activities", str(settings.activities)],
        "recording": ["--recording", f"{bench.refs['p1']}={settings.p1_bytes}"],
    }
    raw = Path(args.raw) if args.raw else workdir / "profile.txt"
    try:
        server = bench.start_server(
            "server-profile", *server_args[args.target], provider=args.target == "recording"
        )
        await drive(args.target, bench, server, 1.0)  # warm-up, not sampled
        recorder = subprocess.Popen(
            [
                spy,
                "record",
                "--pid",
                str(server.pid),
                "--format",
                "raw",
                "--rate",
                "250",
                "--duration",
                str(int(args.seconds) + 1),
                "--output",
                str(raw),
                "--nonblocking",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await asyncio.sleep(0.5)
        print(await drive(args.target, bench, server, args.seconds))
        await asyncio.to_thread(recorder.wait, 60)
    finally:
        bench.stop_all()
    if not raw.exists():
        print("py-spy recorded nothing (is ptrace allowed?)", file=sys.stderr)
        return 1
    print(summarize(raw, args.top))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.profile")
    parser.add_argument("target", choices=TARGETS)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--raw", help="keep py-spy's raw samples here")
    sys.exit(asyncio.run(main(parser.parse_args())))
