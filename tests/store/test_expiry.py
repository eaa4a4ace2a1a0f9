"""The expiry sweep (store.sweep_expired): records past their expiry time are deleted in bounded
batches and the others stay, on every backend; TTL indexes are not needed for it (FerretDB has
none). The background task that runs it in `serve`: tests/server/test_expiry_sweep.py."""

import datetime as dt

import pytest

from handlers.idempotency import LOCK, TTL
from store.clock import utcnow


async def claim(store, key: str, now: dt.datetime) -> None:
    assert (await store.idempotency.begin("ws-a", key, "print", now, LOCK, TTL)).claimed


async def test_expired_idempotency_records_go_in_bounded_batches(store):
    now = utcnow()
    await claim(store, "live", now)
    for i in range(5):  # claimed two days ago: expired a day ago
        await claim(store, f"old-{i}", now - 2 * TTL)
    assert await store.sweep_expired(now, batch=2, max_batches=1) == 2  # bounded
    assert len(await store.documents("idempotency")) == 4
    assert await store.sweep_expired(now, batch=2) == 3  # the rest, in two more batches
    assert [doc["key"] for doc in await store.documents("idempotency")] == ["live"]
    assert await store.sweep_expired(now) == 0


async def test_a_claim_leaves_other_expired_records_to_the_sweep(store):
    """A request's claim does a bounded amount of work: it never deletes the expired records of
    other keys (or of other workspaces), which the sweep removes in its bounded batches."""
    now = utcnow()
    for i in range(3):
        await claim(store, f"old-{i}", now - 2 * TTL)
    assert (await store.idempotency.begin("ws-b", "old-b", "p", now - 2 * TTL, LOCK, TTL)).claimed
    await claim(store, "new", now)
    await claim(store, "old-0", now)  # an expired record of the key itself is claimed anew
    keys = sorted(doc["key"] for doc in await store.documents("idempotency"))
    assert keys == ["new", "old-0", "old-1", "old-2", "old-b"]
    assert await store.sweep_expired(now) == 3
    keys = sorted(doc["key"] for doc in await store.documents("idempotency"))
    assert keys == ["new", "old-0"]


@pytest.mark.mongodb
async def test_expired_rate_limit_windows_and_leases_go(store):
    now = utcnow()
    minute = dt.timedelta(minutes=1)
    await store.ratelimits.hit("ws-a", now - 3 * minute, now - minute)  # over a minute ago
    await store.ratelimits.hit("ws-a", now, now + 2 * minute)
    leases = store.prospects.leases
    assert await leases.try_acquire("ws-a", "short", ttl=0.001)
    assert await leases.try_acquire("ws-a", "long", ttl=600)
    later = now + dt.timedelta(seconds=5)  # the short lease has expired by then
    assert await store.sweep_expired(later) == 2
    assert [doc["windowStart"] for doc in await store.documents("rate_limits")] == [now]
    assert [doc["_id"] for doc in await store.documents("leases")] == ["ws-a:long"]
    assert await store.ratelimits.count("ws-a", now) == 1
