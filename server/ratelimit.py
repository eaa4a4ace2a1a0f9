"""The per-workspace rate limit: a fixed window whose counters live in the store.

Every key of a workspace, the console and every server process that shares the database draw
on one quota. Each request costs one atomic upsert (store.ratelimits). Responses describe the
quota with the IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10/11):

    RateLimit-Policy: "workspace";q=600;w=60
    RateLimit: "workspace";r=<requests left in this window>;t=<seconds until it ends>

Windows are aligned per workspace (offset by a hash of its id) so that workspaces do not all
reset, and retry, at the same second.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import time
import zlib

EPOCH = dt.datetime(1970, 1, 1)
POLICY = "workspace"


@dataclasses.dataclass(frozen=True)
class Verdict:
    allowed: bool
    remaining: int
    reset: int  # seconds until the window ends (at least 1)
    headers: dict[str, str]


class RateLimiter:
    def __init__(self, counters, limit: int, window: int = 60, clock=time.time):
        """`counters` is store.ratelimits; `clock` returns Unix time in seconds (injectable)."""
        self.counters = counters
        self.limit = limit
        self.window = window
        self.clock = clock
        self.policy = f'"{POLICY}";q={limit};w={window}'

    def window_of(self, workspace_id: str, now: float) -> tuple[float, float]:
        """The (start, end) in Unix seconds of the workspace's window that contains `now`."""
        offset = zlib.crc32(workspace_id.encode()) % self.window
        start = math.floor((now - offset) / self.window) * self.window + offset
        return start, start + self.window

    async def hit(self, workspace_id: str) -> Verdict:
        """Count one request of the workspace and say whether it may proceed."""
        now = self.clock()
        start, end = self.window_of(workspace_id, now)
        count = await self.counters.hit(
            workspace_id, EPOCH + dt.timedelta(seconds=start),
            # Kept one window longer than needed, so hosts with slightly skewed clocks still
            # find the window's counter instead of starting it again.
            EPOCH + dt.timedelta(seconds=end + self.window))
        remaining = max(0, self.limit - count)
        reset = max(1, math.ceil(end - now))
        headers = {"RateLimit-Policy": self.policy,
                   "RateLimit": f'"{POLICY}";r={remaining};t={reset}'}
        return Verdict(count <= self.limit, remaining, reset, headers)
