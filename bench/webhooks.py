"""P10a, P10b: webhook delivery (webhooks/dispatcher.py) from one `workspace-api serve` process
on a SQLite file to a fast local receiver (bench/webhook_receiver.py).

- P10a sustained deliveries per second: the same events recovered to several endpoints at once
  (every endpoint at its in-flight limit), against a bare aiohttp loop posting the same
  pre-signed bodies to the same receiver with as many requests in flight
  (bench/webhook_bare.py); rounds interleaved (bare api api bare), each rate taken at the
  receiver from its first arrival to its last. Target: at least 0.75.
- P10a-wire the same against the wire tier's database (FerretDB 1.24 as tests/wire.py starts
  it), with an eightieth of the events, one round a side: reported, no target.
- P10b the lag from a write's acknowledgement (POST /v1/lists at 100 per second) to its
  delivery: p99 against the settle period + 1 s (events are pushed once settled).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

from bench.common import HOST, Row, not_run, percentile, verdict
from server.config import load_config
from server.services import open_services
from store.calls import call_document
from store.clock import utcnow
from store.paging import Position

ROOT = Path(__file__).resolve().parent.parent
SECRET = "bench-secret-" + "w" * 40


@dataclasses.dataclass(frozen=True)
class HookSettings:
    events: int = 2000
    endpoints: int = 4
    per_endpoint: int = 4
    rounds: int = 2  # per side, interleaved
    settle: float = 1.0
    lag_rate: float = 100.0  # writes per second
    lag_seconds: float = 15.0


QUICK = HookSettings(events=150, endpoints=2, rounds=1, lag_seconds=2.0)
# P10a-wire: FerretDB reads a whole collection for every query but one on _id (tests/wire.py),
# so its deliveries are kept to an eightieth (200, about two minutes), one round a side.
WIRE = HookSettings(events=25, rounds=1)
# And in --quick mode (which checks that every row runs): a few deliveries.
QUICK_WIRE = HookSettings(events=10, endpoints=1, rounds=1)


class Serve:
    """`workspace-api serve` on a free port with `env`; ready once /readyz answers."""

    def __init__(self, env: dict, log: Path) -> None:
        import socket

        with socket.socket() as probe:
            probe.bind((HOST, 0))
            self.port = probe.getsockname()[1]
        self.origin = f"http://{HOST}:{self.port}"
        self.log = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve", "--port", str(self.port)],
            cwd=ROOT,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
        )

    async def ready(self, session: aiohttp.ClientSession, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "serve exited"
            try:
                async with session.get(f"{self.origin}/readyz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
        raise RuntimeError("serve did not get ready")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


async def receiver_stats(session: aiohttp.ClientSession, port: int) -> dict:
    async with session.get(f"http://{HOST}:{port}/stats") as response:
        return json.loads(await response.read())


def rate(stats: dict) -> float:
    if stats["count"] < 2 or not stats["last"] or stats["last"] <= stats["first"]:
        return float("nan")
    return (stats["count"] - 1) / (stats["last"] - stats["first"])


async def run_rows(bench, only: set[str], quick: bool) -> list[Row]:
    s = QUICK if quick else HookSettings()
    receiver = bench.spawn("bench.webhook_receiver", [], "webhook-receiver")
    rport = receiver.info["port"]
    env = {
        "MONGODB_URI": "",
        "WSAPI_SQLITE_PATH": str(bench.workdir / "webhooks.sqlite3"),
        "WSAPI_SECRET": SECRET,
        "WSAPI_SYNC_SETTLE_SECONDS": str(s.settle),
        "WSAPI_RATE_LIMIT_PER_MINUTE": "100000000",
        "WSAPI_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        "WSAPI_WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT": str(s.per_endpoint),
        "WSAPI_WEBHOOK_POLL_SECONDS": "0.1",
        "WSAPI_LOG_LEVEL": "warning",
    }
    rows: list[Row] = []
    if "P10" not in only:
        return rows
    async with served(env, bench, "webhook-serve") as (store, workspace, user, session, serve):
        rows += await p10a(s, store, workspace, user, session, serve, rport, bench)
        rows += await p10b(s, user, session, serve, rport)
    rows += await p10a_wire(QUICK_WIRE if quick else WIRE, env, rport, bench)
    return rows


@contextlib.asynccontextmanager
async def served(env: dict, bench, name: str):
    """A `workspace-api serve` process on `env`'s database, with a workspace, a user and a
    session holding the workspace's key; (store, workspace, user, session, serve)."""
    store, auth = await open_services(load_config(environ=env))
    workspace = (await store.workspaces.create("Webhook bench"))["id"]
    user = (await store.users.create(workspace, "bench@hooks.example", "B", "H"))["id"]
    _, key = await auth.create(workspace, "bench")
    headers = {"Authorization": f"Bearer {key}"}
    serve = Serve(env, bench.workdir / f"{name}.log")
    try:
        async with aiohttp.ClientSession(headers=headers) as session:
            await serve.ready(session)
            yield store, workspace, user, session, serve
    finally:
        serve.stop()
        await store.close()


async def p10a_wire(s: HookSettings, env: dict, rport: int, bench) -> list[Row]:
    """P10a against the wire tier's database: FerretDB 1.24 as tests/wire.py starts it."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import wire  # type: ignore[import-not-found]  # tests/wire.py
    finally:
        sys.path.remove(str(ROOT / "tests"))
    what = f"webhook deliveries/s on FerretDB, {s.endpoints} endpoints x {s.per_endpoint} in flight"
    try:
        server = wire.WireServer(bench.workdir / "wire-server.log", bench.workdir / "wire-data")
        server.start()
    except RuntimeError as exc:
        return [not_run("P10a-wire", what, "reported", f"NOT RUN: {str(exc).splitlines()[0]}")]
    wire_env = {**env, "MONGODB_URI": server.uri, "WSAPI_SQLITE_PATH": ""}
    try:
        async with served(wire_env, bench, "webhook-serve-wire") as (
            store,
            workspace,
            user,
            session,
            serve,
        ):
            [row] = await p10a(s, store, workspace, user, session, serve, rport, bench)
    finally:
        server.stop()
    row = dataclasses.replace(row, id="P10a-wire", what=what, target="reported")
    return [row if row.result.startswith("ERRORS") else dataclasses.replace(row, result="INFO")]


async def p10a(s, store, workspace, user, session, serve, rport, bench) -> list[Row]:
    # The events: calls inserted through the store, recorded with their events.
    since = utcnow()
    now = utcnow()
    for start in range(0, s.events, 100):
        docs = [
            call_document(
                workspace,
                user_id=user,
                prospect_id=f"00000000-0000-4000-8000-{n:012d}",
                direction="outbound",
                disposition="connected",
                from_number="+12125550100",
                to_number="+12125550199",
                started_at=now - dt.timedelta(minutes=2),
                answered_at=now - dt.timedelta(minutes=1),
                ended_at=now,
            )
            for n in range(start, min(start + 100, s.events))
        ]
        await store.calls.insert_documents(workspace, docs)
    await asyncio.sleep(s.settle + 0.2)
    bodies, position = [], Position(since, "")
    while True:
        page = await store.events.page(workspace, position, utcnow(), 100)
        bodies += [(event.id, event.text) for event in page.events]
        if not page.has_more:
            break
        position = page.events[-1].position
    total = len(bodies) * s.endpoints
    bodies_file = bench.workdir / "webhook-bodies.json"
    bodies_file.write_text(json.dumps(bodies * s.endpoints))
    concurrency = s.endpoints * s.per_endpoint
    rates: dict[str, list[float]] = {"api": [], "bare": []}
    errors = 0

    async def bare() -> float:
        nonlocal errors
        result = await asyncio.to_thread(
            subprocess.run,
            [
                sys.executable,
                "-m",
                "bench.webhook_bare",
                str(bodies_file),
                f"http://{HOST}:{rport}/fast/bare",
                str(concurrency),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        errors += json.loads(result.stdout)["errors"]
        stats = await receiver_stats(session, rport)
        errors += total - stats["count"]
        return rate(stats)

    async def api(round_index: int) -> float:
        nonlocal errors
        made = []
        for number in range(s.endpoints):
            url = f"http://{HOST}:{rport}/fast/{round_index}-{number}"
            async with session.post(f"{serve.origin}/v1/webhook-endpoints", json={"url": url}) as r:
                made.append((await r.json())["webhookEndpoint"]["id"])
        stamp = since.isoformat(timespec="milliseconds") + "Z"
        for endpoint in made:
            path = f"{serve.origin}/v1/webhook-endpoints/{endpoint}/recover"
            async with session.post(path, json={"since": stamp}) as r:
                assert r.status == 202, await r.text()
        deadline = time.monotonic() + 600
        seen = {"count": 0, "first": None, "last": None}
        while seen["count"] < total and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            stats = await receiver_stats(session, rport)  # reads and resets: add up
            seen["count"] += stats["count"]
            seen["first"] = seen["first"] or stats["first"]
            seen["last"] = stats["last"] or seen["last"]
        errors += total - seen["count"]
        for endpoint in made:
            async with session.delete(f"{serve.origin}/v1/webhook-endpoints/{endpoint}"):
                pass
        return rate(seen)

    await receiver_stats(session, rport)  # reset
    for round_index in range(s.rounds):
        order = ("bare", "api") if round_index % 2 == 0 else ("api", "bare")
        for side in order:
            rates[side].append(await (bare() if side == "bare" else api(round_index)))
    api_rate, bare_rate = statistics.median(rates["api"]), statistics.median(rates["bare"])
    ratio = api_rate / bare_rate
    return [
        Row(
            "P10a",
            f"webhook deliveries/s, {s.endpoints} endpoints x {s.per_endpoint} in flight",
            f"dispatcher {api_rate:,.0f}/s",
            ">= 0.75",
            f"ERRORS ({errors})" if errors else verdict(ratio >= 0.75),
            baseline=f"bare aiohttp loop {bare_rate:,.0f}/s",
            ratio=f"{ratio:.2f}",
            data={"api": rates["api"], "bare": rates["bare"], "deliveries": total},
        )
    ]


async def p10b(s, user, session, serve, rport) -> list[Row]:
    url = f"http://{HOST}:{rport}/lag/p10b"
    async with session.post(
        f"{serve.origin}/v1/webhook-endpoints", json={"url": url, "eventTypes": ["list.created"]}
    ) as r:
        assert r.status == 201, await r.text()
    await receiver_stats(session, rport)  # reset
    acknowledged: dict[str, float] = {}
    count = int(s.lag_rate * s.lag_seconds)
    start = time.monotonic()

    async def write(number: int) -> None:
        body = {"name": f"Lag {number}", "ownerUserId": user}
        async with session.post(f"{serve.origin}/v1/lists", json=body) as r:
            if r.status == 201:
                acknowledged[(await r.json())["list"]["id"]] = time.time()

    tasks = []
    for number in range(count):  # open loop: one write every 1/rate s, whatever answers take
        await asyncio.sleep(max(0.0, start + number / s.lag_rate - time.monotonic()))
        tasks.append(asyncio.ensure_future(write(number)))
    await asyncio.gather(*tasks)
    arrived: dict[str, float] = {}
    deadline = time.monotonic() + s.settle + 30
    while len(arrived) < len(acknowledged) and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        arrived.update((await receiver_stats(session, rport))["arrived"])
    lags = [arrived[i] - at for i, at in acknowledged.items() if i in arrived]
    missing = count - len(lags)
    p99, limit = percentile(lags, 0.99), s.settle + 1.0
    return [
        Row(
            "P10b",
            f"write acknowledged -> delivered, {s.lag_rate:g} writes/s for {s.lag_seconds:g} s",
            f"p99 {p99:.2f} s (p50 {percentile(lags, 0.5):.2f} s)",
            f"< {limit:g} s",
            f"ERRORS ({missing} not delivered)" if missing else verdict(p99 < limit),
            baseline=f"settle {s.settle:g} s + 1 s",
            ratio=f"{p99 / limit:.2f}",
            data={"p50": percentile(lags, 0.5), "p99": p99, "writes": count},
        )
    ]
