"""Leases (MongoDB backend): one holder at a time per workspace and name, expiry, release."""

import asyncio
import datetime as dt

import pytest

from store.errors import StoreBusy

pytestmark = pytest.mark.mongodb


async def test_one_holder_at_a_time_per_workspace(store):
    leases = store.prospects.leases
    token = await leases.try_acquire("ws-a", "job", ttl=30)
    assert token
    assert await leases.try_acquire("ws-a", "job", ttl=30) is None
    other = await leases.try_acquire("ws-b", "job", ttl=30)  # other workspaces are unaffected
    assert other
    await leases.release("ws-a", "job", "not-the-token")  # only the holder releases
    assert await leases.try_acquire("ws-a", "job", ttl=30) is None
    await leases.release("ws-a", "job", token)
    assert await leases.try_acquire("ws-a", "job", ttl=30)


async def test_an_expired_lease_is_taken_over(store):
    leases = store.prospects.leases
    await leases.col.insert_one(
        {
            "_id": "ws-a:job",
            "workspaceId": "ws-a",
            "token": "dead",
            "expiresAt": dt.datetime(2000, 1, 1),
        }
    )
    assert await leases.try_acquire("ws-a", "job", ttl=30)


async def test_held_waits_for_the_holder_and_gives_up_with_store_busy(store):
    leases, order = store.prospects.leases, []

    async def worker(name, hold):
        async with leases.held("ws-a", "job", wait=5):
            order.append(f"{name} in")
            await asyncio.sleep(hold)
            order.append(f"{name} out")

    await asyncio.gather(worker("first", 0.05), worker("second", 0))
    assert order in (
        ["first in", "first out", "second in", "second out"],
        ["second in", "second out", "first in", "first out"],
    )
    token = await leases.try_acquire("ws-a", "job", ttl=30)
    with pytest.raises(StoreBusy):
        async with leases.held("ws-a", "job", wait=0.05):
            pass
    await leases.release("ws-a", "job", token)


async def test_the_lease_is_released_when_the_block_fails(store):
    leases = store.prospects.leases
    with pytest.raises(RuntimeError):
        async with leases.held("ws-a", "job"):
            raise RuntimeError("boom")
    assert await leases.try_acquire("ws-a", "job", ttl=30)
