"""On SQLite the background workers of every serving process (the webhook dispatcher's fan-out
and delivery claims, a deleted list's purge, the erasure worker) look before they write: with
nothing to take, they take no write lock. Beside a long writer of another process (an import),
an idle worker would otherwise wait for each of its transactions, and an API write queued behind
it on this process's writer would then wait for the next one too (the writers take turns)."""

from __future__ import annotations

import asyncio
import datetime as dt
import sqlite3

import pytest

from store.clock import utcnow
from tests.store.test_webhook_claims import LEASE, endpoint_with

pytestmark = pytest.mark.sqlite

BOUND = 30  # a hang bound: a worker that waited for the lock would fail with StoreBusy first


async def idle_work(store, at: dt.datetime) -> tuple:
    """What each worker takes at `at`."""
    return (
        await asyncio.wait_for(store.webhook_endpoints.claim_fanout(at, LEASE, 10), BOUND),
        await asyncio.wait_for(store.webhook_deliveries.claim(at, LEASE, 10, 2), BOUND),
        await asyncio.wait_for(store.lists.purge(100), BOUND),
        await asyncio.wait_for(store.erasures.claim(at, "idle-worker"), BOUND),
    )


async def test_idle_workers_take_no_write_lock(store, ws_a):
    endpoint = await endpoint_with(store, ws_a.id, 3)  # its fan-out and deliveries due from now
    now = utcnow()  # as endpoint_with's
    lock = sqlite3.connect(store.engine.path, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # another process's writer, in the middle of a long unit
    try:
        assert await idle_work(store, now - dt.timedelta(hours=1)) == ([], [], 0, None)
    finally:
        lock.execute("ROLLBACK")
        lock.close()

    # Their look is no stricter than their claim: what is due is taken.
    fanouts, deliveries, purged, erasure = await idle_work(store, now)
    assert [claim.endpoint_id for claim in fanouts] == [endpoint]
    assert sorted(claim.endpoint_id for claim in deliveries) == [endpoint, endpoint]
    assert (purged, erasure) == (0, None)


async def test_deliveries_another_owner_holds_are_no_reason_to_write(store, ws_a):
    """A leased delivery keeps its due instant: an idle dispatcher that finds every due delivery
    held by another owner's live leases takes no write lock either; one more due is taken."""
    await endpoint_with(store, ws_a.id, 3)
    now = utcnow()
    held = await store.webhook_deliveries.claim(now, LEASE, 10, 4, owner="busy")
    assert len(held) == 3
    lock = sqlite3.connect(store.engine.path, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    try:
        claim = store.webhook_deliveries.claim(now, LEASE, 10, 4, owner="idle")
        assert await asyncio.wait_for(claim, BOUND) == []
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    await store.webhook_deliveries.release(held[:1], now)
    [again] = await store.webhook_deliveries.claim(now, LEASE, 10, 4, owner="idle")
    assert again.delivery_id == held[0].delivery_id
