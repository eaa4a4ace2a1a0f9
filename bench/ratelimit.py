"""What one rate-limit decision costs, per scheme: is there a cheaper exact one?

Times `RateLimiter.hit` around each kind of counter, each exact across processes unless said:

- `LocalCounters` (in this process's memory: exact when the store is private to the process;
  also the limiter's own Python cost, since the counter itself is a dict update);
- SQLite: one ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING`` per request on a WAL file
  (exact across the processes that share the file: SQLite serialises writers);
- the SQLite store's counters (store/sqlite/ratecounts.py): a table in a shared memory-mapped
  file under an ``fcntl`` lock (exact across the processes of one host, which is every process
  that can share a SQLite file);
- block reservation (each process takes blocks of the quota with one upsert; NOT exact across
  processes: unused blocks of an idle process are lost to the others until the window ends).

    python -m bench.ratelimit [--requests 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from pathlib import Path

from bench.server import bench_config
from server.ratelimit import LocalCounters, RateLimiter
from store.sqlite.ratecounts import SharedCounters


class SQLiteCounters:
    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(
            "CREATE TABLE rate_limits (workspace_id TEXT, window_start TEXT, "
            "count INTEGER, expire_at TEXT, PRIMARY KEY (workspace_id, "
            "window_start)) WITHOUT ROWID"
        )

    async def hit(self, workspace_id, window_start, expire_at) -> int:
        return self.db.execute(
            "INSERT INTO rate_limits VALUES (?, ?, 1, ?) ON CONFLICT (workspace_id, "
            "window_start) DO UPDATE SET count = count + 1 RETURNING count",
            (workspace_id, window_start.isoformat(), expire_at.isoformat()),
        ).fetchone()[0]


class BlockCounters:
    """Block reservation over the embedded store's counter (not exact across processes)."""

    def __init__(self, counters, limit: int) -> None:
        self.counters, self.limit = counters, limit
        self.blocks: dict = {}

    async def hit(self, workspace_id, window_start, expire_at) -> int:
        key = (workspace_id, window_start)
        before, size, used = self.blocks.get(key, (0, 0, 0))
        if used >= size:
            size = max(1, min(50, (self.limit - before - size) // 10))
            # (a real version passes `size` as the $inc; the embedded counter counts one:
            # the cost measured is the same single upsert per block)
            before, used = await self.counters.hit(workspace_id, window_start, expire_at), 0
        self.blocks[key] = (before, size, used + 1)
        return before + used


async def timed(limiter: RateLimiter, requests: int) -> float:
    for _ in range(200):  # warm-up
        await limiter.hit("ws-warm")
    started = time.perf_counter()
    for _ in range(requests):
        await limiter.hit("ws-bench")
    return (time.perf_counter() - started) / requests


async def main(requests: int) -> None:
    from server.services import open_services

    class Args:
        rate_limit, provider_url, provider_account, provider_token = 10**9, "", "", ""

    store, _ = await open_services(bench_config(Args))
    limit = 10**9
    with tempfile.TemporaryDirectory() as tmp:
        schemes = {
            "in-memory counters (LocalCounters, MONGODB_URI=memory)": LocalCounters(),
            "SQLite upsert RETURNING (WAL)": SQLiteCounters(Path(tmp) / "rl.sqlite"),
            "shared mapped file + flock (the SQLite store's)": SharedCounters(Path(tmp) / "rl.map"),
            "block reservation, embedded (NOT exact)": BlockCounters(store.ratelimits, limit),
        }
        results = {name: [] for name in schemes}
        for round_index in range(3):
            names = list(schemes) if round_index % 2 == 0 else list(schemes)[::-1]
            for name in names:
                limiter = RateLimiter(schemes[name], limit)
                results[name].append(await timed(limiter, requests // 3))
    print("| scheme | us per request (best of 3 rounds) |")
    print("|---|---|")
    for name, values in results.items():
        print(f"| {name} | {min(values) * 1e6:.1f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.ratelimit")
    parser.add_argument("--requests", type=int, default=20000)
    asyncio.run(main(parser.parse_args().requests))
