"""W3, E4: how soon an acknowledged write reaches its consumers, with the default configuration
(`sync_settle_seconds` 5, `webhook_poll_seconds` 0.5): one `workspace-api serve` process, one
webhook endpoint on a fast local receiver (bench/webhook_receiver.py, which notes when each
event arrives), and a follower of GET /v1/events that asks again 0.1 s after each caught-up
page (as a client polling its cursor does).

- W3a, W3b: write acknowledged (POST /v1/lists answered 201) -> its `list.created` webhook at
  the receiver; W3a one write every 2 s (an idle workspace), W3b 100 writes per second. p99
  at most 1.5 s, on SQLite (the default backend).
- E4a, E4b: write acknowledged -> its event in a page of GET /v1/events, during W3a and W3b.
  p99 at most 1 s.
- W3c, W3d, E4c, E4d: the same on the wire tier (MongoDB's protocol, the test suite's FerretDB
  server, tests/wire.py), reported (INFO); its busy phase runs at 20 writes per second, which
  that server sustains here (at 100 it fails most writes with 503).

The harness changes only what it must: the receiver's network is allowed (loopback), and the
rate limit is raised above 100 writes per second. Lags are taken on this host's clock, which
the receiver shares.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp

from bench.common import HOST, Row, not_run, percentile, verdict
from bench.webhooks import Serve, receiver_stats
from server.config import load_config
from server.services import open_services

SECRET = "bench-secret-" + "l" * 40
W3_LIMIT, E4_LIMIT = 1.5, 1.0
FOLLOW_PAUSE = 0.1  # the follower's pause after a caught-up page


@dataclasses.dataclass(frozen=True)
class LagSettings:
    idle_every: float = 2.0  # seconds between two writes of W3a
    idle_writes: int = 30
    busy_rate: float = 100.0  # writes per second of W3b
    busy_seconds: float = 15.0
    # The wire tier's server (FerretDB on SQLite, one writer) fails POST /v1/lists at 100 per
    # second on a 2-core machine (503 past the database timeout): it is measured at a rate it
    # sustains.
    wire_busy_rate: float = 20.0


QUICK = LagSettings(idle_every=0.5, idle_writes=3, busy_seconds=1.0)


@contextlib.contextmanager
def database(tier: str, workdir: Path) -> Iterator[dict]:
    """The environment of `serve` on `tier` ("sqlite" or "wire"): a SQLite file, or a wire
    server of its own (started here, stopped after)."""
    if tier == "sqlite":
        yield {"MONGODB_URI": "", "WSAPI_SQLITE_PATH": str(workdir / "latency.sqlite3")}
        return
    from tests.wire import WireServer

    data = workdir / "latency-wire"
    data.mkdir(exist_ok=True)
    server = WireServer(workdir / "latency-wire.log", data).start()
    try:
        yield {"MONGODB_URI": server.uri}
    finally:
        server.stop()


class Follower:
    """Follows GET /v1/events?type=list.created by its cursor; notes when each list's event
    was first in a page."""

    def __init__(self, session: aiohttp.ClientSession, origin: str) -> None:
        self.session, self.origin = session, origin
        self.seen: dict[str, float] = {}
        self.errors = 0
        self.cursor: str | None = None

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            query = f"cursor={self.cursor}" if self.cursor else "type=list.created"
            try:
                async with self.session.get(f"{self.origin}/v1/events?{query}") as r:
                    body = await r.json()
                    arrived = time.time()
            except aiohttp.ClientError:
                self.errors += 1
                await asyncio.sleep(FOLLOW_PAUSE)
                continue
            if r.status != 200:
                self.errors += 1
                await asyncio.sleep(FOLLOW_PAUSE)
                continue
            for event in body["events"]:
                self.seen.setdefault(event["data"]["id"], arrived)
            self.cursor = body["nextCursor"]
            if not body["hasMore"]:
                await asyncio.sleep(FOLLOW_PAUSE)


async def phase(session, serve, rport, user, follower, rate: float, count: int, tag: str) -> dict:
    """`count` writes at `rate` per second (an open loop); the lags of each to the receiver
    and to the follower, once every write arrived at both (or 30 s past the last write)."""
    acknowledged: dict[str, float] = {}
    failed = 0
    start = time.monotonic()

    async def write(number: int) -> None:
        nonlocal failed
        body = {"name": f"Lag {tag} {number}", "ownerUserId": user}
        async with session.post(f"{serve.origin}/v1/lists", json=body) as r:
            if r.status == 201:
                acknowledged[(await r.json())["list"]["id"]] = time.time()
            else:
                failed += 1

    tasks = []
    for number in range(count):
        await asyncio.sleep(max(0.0, start + number / rate - time.monotonic()))
        tasks.append(asyncio.ensure_future(write(number)))
    await asyncio.gather(*tasks)
    arrived: dict[str, float] = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        arrived.update((await receiver_stats(session, rport))["arrived"])
        if all(i in arrived and i in follower.seen for i in acknowledged):
            break
        await asyncio.sleep(0.25)
    hooks = [arrived[i] - at for i, at in acknowledged.items() if i in arrived]
    feed = [follower.seen[i] - at for i, at in acknowledged.items() if i in follower.seen]
    return {
        "hooks": hooks,
        "feed": feed,
        "missing_hooks": count - len(hooks),
        "missing_feed": count - len(feed),
        "failed": failed,
    }


def lag_row(row_id: str, what: str, lags: list[float], missing: int, limit: float, info: bool):
    p99, p50 = percentile(lags, 0.99), percentile(lags, 0.5)
    result = "INFO" if info else verdict(p99 <= limit)
    return Row(
        row_id,
        what,
        f"p99 {p99:.2f} s (p50 {p50:.2f} s, max {max(lags, default=float('nan')):.2f} s)",
        f"<= {limit:g} s" if not info else f"reported (<= {limit:g} s on SQLite)",
        f"ERRORS ({missing} not seen)" if missing else result,
        baseline="default settings: settle 5 s, poll 0.5 s",
        ratio=f"{p99 / limit:.2f}",
        data={"p50": p50, "p99": p99, "samples": len(lags)},
    )


async def tier_rows(bench, s: LagSettings, tier: str, rport: int) -> list[Row]:
    ids = ("W3a", "W3b", "E4a", "E4b") if tier == "sqlite" else ("W3c", "W3d", "E4c", "E4d")
    info = tier != "sqlite"
    name = "SQLite" if tier == "sqlite" else "wire tier"
    with database(tier, bench.workdir) as env:
        env = {
            **env,
            "WSAPI_SECRET": SECRET,
            "WSAPI_RATE_LIMIT_PER_MINUTE": "100000000",
            "WSAPI_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
            "WSAPI_LOG_LEVEL": "warning",
        }
        store, auth = await open_services(load_config(environ=env))
        try:
            workspace = (await store.workspaces.create("Latency bench"))["id"]
            user = (await store.users.create(workspace, "lag@bench.example", "L", "B"))["id"]
            _, key = await auth.create(workspace, "bench")
        finally:
            await store.close()
        serve = Serve(env, bench.workdir / f"latency-{tier}.log")
        try:
            headers = {"Authorization": f"Bearer {key}"}
            async with aiohttp.ClientSession(headers=headers) as session:
                await serve.ready(session)
                url = f"http://{HOST}:{rport}/lag/{tier}"
                hook = {"url": url, "eventTypes": ["list.created"]}
                async with session.post(f"{serve.origin}/v1/webhook-endpoints", json=hook) as r:
                    assert r.status == 201, await r.text()
                await receiver_stats(session, rport)  # reset
                follower, stop = Follower(session, serve.origin), asyncio.Event()
                following = asyncio.ensure_future(follower.run(stop))
                rate = s.busy_rate if tier == "sqlite" else s.wire_busy_rate
                idle = await phase(
                    session, serve, rport, user, follower, 1 / s.idle_every, s.idle_writes, "i"
                )
                busy = await phase(
                    session, serve, rport, user, follower, rate, int(rate * s.busy_seconds), "b"
                )
                stop.set()
                await following
        finally:
            serve.stop()
    idle_what = f"every {s.idle_every:g} s, {name}"
    busy_what = f"{rate:g} writes/s for {s.busy_seconds:g} s, {name}"
    # A write that failed (on the wire tier at 100 writes/s: 503 once the database timeout
    # passes) has no lag: it is counted, and its phase's rows say so.
    rows = []
    for (hook_id, feed_id), what, lags in (
        ((ids[0], ids[2]), idle_what, idle),
        ((ids[1], ids[3]), busy_what, busy),
    ):
        for row_id, kind, key, limit in (
            (hook_id, "webhook", "hooks", W3_LIMIT),
            (feed_id, "in GET /v1/events", "feed", E4_LIMIT),
        ):
            row = lag_row(
                row_id, f"write acked -> {kind}, {what}", lags[key],
                lags[f"missing_{key}"] - lags["failed"], limit, info,
            )  # fmt: skip
            failed = lags["failed"] + (follower.errors if key == "feed" else 0)
            if failed:
                row = dataclasses.replace(row, result=f"{row.result} ({failed} failed requests)")
            rows.append(row)
    return sorted(rows, key=lambda r: r.id)


async def run_rows(bench, only: set[str], quick: bool) -> list[Row]:
    s = QUICK if quick else LagSettings()
    receiver = bench.spawn("bench.webhook_receiver", [], "latency-receiver")
    rport = receiver.info["port"]
    rows = await tier_rows(bench, s, "sqlite", rport)
    try:
        rows += await tier_rows(bench, s, "wire", rport)
    except RuntimeError as exc:  # no wire server here (it is built with Go)
        why = f"NOT RUN: {str(exc).splitlines()[0]}"
        rows += [
            not_run(row_id, "the same on the wire tier", "reported", why)
            for row_id in ("W3c", "W3d", "E4c", "E4d")
        ]
    wanted = {row_id for row_id in ("W3", "E4") if row_id in only}
    return [row for row in rows if row.id[:2] in wanted]
