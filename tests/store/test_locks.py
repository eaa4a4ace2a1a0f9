"""Leases (MongoDB backend): one holder at a time per workspace and name, expiry, release, turns
first come, first served."""

import asyncio
import datetime as dt

import pytest

from store.clock import utcnow
from store.errors import StoreBusy
from store.mongo.locks import CLAIM
from tests.helpers import wait_for

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


async def test_a_waiter_is_not_starved_by_a_holder_that_takes_the_lease_straight_back(store):
    """Turns are first come, first served: a holder that releases and takes the lease again
    at once (a stream of back-to-back uploads) lets the waiter that was there first in."""
    leases, stop, turns = store.prospects.leases, asyncio.Event(), {"greedy": 0}

    async def greedy():
        while not stop.is_set():
            async with leases.held("ws-a", "job", wait=5):
                turns["greedy"] += 1
                await asyncio.sleep(0.05)

    hog = asyncio.ensure_future(greedy())
    try:
        await wait_for(lambda: turns["greedy"] >= 1, what="the holder's first turn")
        passed = []
        for _ in range(3):  # each time: in after the holder's turn under way, the next at most
            before = turns["greedy"]
            async with leases.held("ws-a", "job", wait=5):
                passed.append(turns["greedy"] - before)
        # Starved, a waiter would see turn after turn go by until its wait ran out (StoreBusy).
        assert max(passed) <= 2, passed
        done = turns["greedy"]  # and the holder goes on taking turns once the waiter is done
        await wait_for(lambda: turns["greedy"] > done, what="the holder's next turn")
    finally:
        stop.set()
        await hog


async def test_the_first_waiter_goes_first(store):
    leases, order = store.prospects.leases, []
    token = await leases.try_acquire("ws-a", "job", ttl=30)

    async def waiter(name):
        async with leases.held("ws-a", "job", wait=5):
            order.append(name)
            await asyncio.sleep(0.02)

    first = asyncio.ensure_future(waiter("first"))
    await asyncio.sleep(0.3)  # the first has been waiting a while when the second comes
    second = asyncio.ensure_future(waiter("second"))
    await asyncio.sleep(0.3)
    await leases.release("ws-a", "job", token)
    await asyncio.gather(first, second)
    assert order == ["first", "second"]


async def test_a_waiter_that_gives_up_withdraws_its_claim(store):
    leases = store.prospects.leases
    token = await leases.try_acquire("ws-a", "job", ttl=30)
    with pytest.raises(StoreBusy):
        async with leases.held("ws-a", "job", wait=0.1):
            pass
    await leases.release("ws-a", "job", token)
    assert await leases.try_acquire("ws-a", "job", ttl=30)  # at once, not a second later


async def test_a_claim_lapses_when_its_waiter_is_gone(store):
    leases = store.prospects.leases
    token = await leases.try_acquire("ws-a", "job", ttl=30)
    before = utcnow()
    await leases.claim_next("ws-a", "job", "gone", before)
    await leases.release("ws-a", "job", token)
    assert await leases.try_acquire("ws-a", "job", ttl=30) is None  # the claimant's turn
    lease = await leases.col.find_one({"_id": "ws-a:job"})
    claimed_until = lease["next"]["until"]
    claim = dt.timedelta(seconds=CLAIM)
    assert before + claim <= claimed_until <= utcnow() + claim  # for CLAIM seconds
    # CLAIM seconds on, as the store sees them: the claim's time has run out.
    await leases.col.update_one(
        {"_id": "ws-a:job"},
        {"$set": {"next.until": claimed_until - dt.timedelta(seconds=CLAIM + 0.001)}},
    )
    assert await leases.try_acquire("ws-a", "job", ttl=30)  # it never came: anyone's
