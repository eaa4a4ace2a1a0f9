"""The per-workspace rate limit: a fixed window whose counters are shared where the data is.

Every key of a workspace, the console and every server process that shares the database draw
on one quota, counted exactly (store.ratelimits). With MongoDB each request costs one atomic
upsert, the only exact way for several hosts to agree (cheaper schemes were measured, see
docs/performance.md: block reservation under-admits across processes). With the SQLite file,
whose processes all run on one host, the counters live in a memory-mapped file beside the
database under a flock lock (store/sqlite/ratecounts.py): a few microseconds on the event
loop, where a database write per request cost a write transaction on the writer thread. With
a store whose data lives in this process alone (MONGODB_URI=memory) no other process can share
the quota, so `LocalCounters` count in memory, just as exactly, for about 3 us. Responses
describe the quota with the IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10/11):

    RateLimit-Policy: "workspace";q=600;w=60
    RateLimit: "workspace";r=<requests left in this window>;t=<seconds until it ends>

Windows are aligned per workspace (offset by a hash of its id) so that workspaces do not all
reset, and retry, at the same second.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import zlib

from store.clock import SYSTEM_CLOCK, Clock
from store.contract import RateCounters, Store

EPOCH = dt.datetime(1970, 1, 1)
POLICY = "workspace"


class LocalCounters:
    """Window counters in this process's memory: exact when the store is private to this
    process, since then no other process can count against the same quota."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, dt.datetime], tuple[int, dt.datetime]] = {}
        self._prune_at = 1024

    async def hit(
        self, workspace_id: str, window_start: dt.datetime, expire_at: dt.datetime
    ) -> int:
        key = (workspace_id, window_start)
        entry = self._counts.get(key)
        count = entry[0] + 1 if entry else 1
        self._counts[key] = (count, expire_at)
        if len(self._counts) > self._prune_at:  # forget windows that are over
            self._counts = {k: v for k, v in self._counts.items() if v[1] > window_start}
            self._prune_at = max(1024, 2 * len(self._counts))
        return count

    async def count(self, workspace_id: str, window_start: dt.datetime) -> int:
        entry = self._counts.get((workspace_id, window_start))
        return entry[0] if entry else 0


def counters_for(store: Store) -> RateCounters:
    """The cheapest exact counters for `store`: in memory when its data is private to this
    process (`process_private`: MONGODB_URI=memory), else the store's shared counters."""
    return LocalCounters() if store.process_private else store.ratelimits


@dataclasses.dataclass(frozen=True)
class Verdict:
    allowed: bool
    remaining: int
    reset: int  # seconds until the window ends (at least 1)
    headers: dict[str, str]


class RateLimiter:
    def __init__(
        self,
        counters: RateCounters,
        limit: int,
        window: int = 60,
        clock: Clock = SYSTEM_CLOCK,
        name: str = POLICY,
    ) -> None:
        """`counters` is store.ratelimits or `LocalCounters` (see `counters_for`); windows are
        measured in `clock`'s wall time (Unix seconds). A limit `name`d other than "workspace"
        (the provider's callbacks) counts in windows of its own."""
        self.counters = counters
        self.limit = limit
        self.window = window
        self.clock = clock
        self.name = name
        self.key_prefix = "" if name == POLICY else f"{name}:"
        self.policy = f'"{name}";q={limit};w={window}'

    def window_of(self, workspace_id: str, now: float) -> tuple[float, float]:
        """The (start, end) in Unix seconds of the workspace's window that contains `now`."""
        offset = zlib.crc32(workspace_id.encode()) % self.window
        start = math.floor((now - offset) / self.window) * self.window + offset
        return start, start + self.window

    async def hit(self, workspace_id: str) -> Verdict:
        """Count one request of the workspace and say whether it may proceed."""
        now = self.clock.time()
        start, end = self.window_of(workspace_id, now)
        count = await self.counters.hit(
            self.key_prefix + workspace_id,
            EPOCH + dt.timedelta(seconds=start),
            # Kept one window longer than needed, so hosts with slightly skewed clocks still
            # find the window's counter instead of starting it again.
            EPOCH + dt.timedelta(seconds=end + self.window),
        )
        remaining = max(0, self.limit - count)
        reset = max(1, math.ceil(end - now))
        headers = {
            "RateLimit-Policy": self.policy,
            "RateLimit": f'"{self.name}";r={remaining};t={reset}',
        }
        return Verdict(count <= self.limit, remaining, reset, headers)
