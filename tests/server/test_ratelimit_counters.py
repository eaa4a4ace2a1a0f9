"""Which counters the rate limiter uses, and the in-memory ones for a process-private store."""

from __future__ import annotations

import datetime as dt
import types

from server.ratelimit import LocalCounters, RateLimiter, counters_for
from tests.helpers import FakeClock


def test_counters_follow_where_the_data_lives():
    shared = object()
    store = types.SimpleNamespace(ratelimits=shared, process_private=False)
    assert counters_for(store) is shared
    store.process_private = True
    assert isinstance(counters_for(store), LocalCounters)


def test_only_a_throwaway_store_is_private_to_its_process(store, config):
    assert store.process_private is (config.mongodb_uri == "memory")


async def test_local_counters_count_exactly_per_workspace_and_window():
    clock = FakeClock(1_800_000_000.0)
    limiter = RateLimiter(LocalCounters(), 3, clock=clock)
    start, end = limiter.window_of("ws-a", clock.time())
    clock.set(start + 1)
    verdicts = [await limiter.hit("ws-a") for _ in range(4)]
    assert [v.allowed for v in verdicts] == [True, True, True, False]
    assert [v.remaining for v in verdicts] == [2, 1, 0, 0]
    assert (await limiter.hit("ws-b")).remaining == 2  # another workspace: its own quota
    clock.set(end + 0.5)  # the next window starts afresh
    assert (await limiter.hit("ws-a")).remaining == 2


async def test_local_counters_forget_only_windows_that_are_over():
    counters = LocalCounters()
    clock = FakeClock(1_800_000_000.0)
    limiter = RateLimiter(counters, 10**6, clock=clock)
    for n in range(3000):  # many workspaces in one window: nothing may be forgotten
        await limiter.hit(f"ws-{n}")
    assert (await limiter.hit("ws-0")).remaining == 10**6 - 2
    clock.advance(3 * 60)  # two windows later, the old counters go at the next pruning
    for n in range(3000):
        await limiter.hit(f"new-{n}")
    assert len(counters._counts) <= 3000 + 1024
    assert (await limiter.hit("ws-0")).remaining == 10**6 - 1


async def test_local_counters_read_a_window_without_counting_in_it():
    counters = LocalCounters()
    start = dt.datetime(2027, 1, 4, 9, 0)
    expire = start + dt.timedelta(minutes=2)
    assert await counters.count("ws-a", start) == 0
    await counters.hit("ws-a", start, expire)
    await counters.hit("ws-a", start, expire)
    assert await counters.count("ws-a", start) == 2
    assert await counters.count("ws-a", start) == 2  # reading did not count
    assert await counters.count("ws-b", start) == 0
    assert await counters.count("ws-a", expire) == 0  # another window
