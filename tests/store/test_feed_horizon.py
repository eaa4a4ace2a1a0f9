"""On MongoDB the feed's order comes from the writers' clocks, which may differ between the
processes and hosts that share the database: a write stamped by a clock that runs behind must
still land after every position a reader has handed out (the feed horizon,
store/mongo/events.py). SQLite's writers share one host's clock and commit one at a time, in
the feed's order (store/sqlite/events.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from store.clock import utcnow
from store.events import EPOCH, EventClock
from store.paging import Position
from tests.helpers import FakeClock

WS = "ws-horizon"
START = Position(EPOCH, "")


# SQLite's writers share one host's clock and commit in the feed's order: MongoDB only.
pytestmark = pytest.mark.mongodb


async def test_a_write_stamped_by_a_clock_an_hour_behind_is_not_passed(store):
    before = await store.lists.create(WS, "Before", "u1")
    page = await store.events.page(WS, START, utcnow(), 100)
    assert [e.type for e in page.events] == ["list.created"]
    cursor = page.resume(START)
    behind = FakeClock()
    behind.advance(-3600)  # another host, its clock an hour behind this one's
    writer = store.events.writer
    writer.clock = EventClock(behind)
    late = await store.lists.create(WS, "From the slow host", "u1")
    page = await store.events.page(WS, cursor, utcnow(), 100)
    assert [(e.type, e.text.count(late["id"])) for e in page.events] == [("list.created", 1)]
    assert before["id"] not in page.events[0].text
    assert page.events[0].occurred_at > utcnow() - dt.timedelta(
        minutes=1
    )  # stamped past the horizon


async def test_behind_a_reader_whose_clock_runs_ahead_the_others_read_as_far_as_it_did(
    store,
):
    """A host whose clock runs an hour ahead moves the horizon an hour on, and later writes are
    stamped past it; once that host has read them, a host with a right clock reads them too
    (up to the horizon as stored), rather than an hour later."""
    writer = store.events.writer
    ahead = FakeClock()
    ahead.advance(3600)
    own_now = writer.now

    async def read_ahead(after: Position):
        writer.now = ahead.now
        try:
            return await store.events.page(WS, after, utcnow(), 100)
        finally:
            writer.now = own_now

    first = await read_ahead(START)
    created = await store.lists.create(WS, "After the fast reader", "u1")  # stamped past it
    ahead.advance(1)
    seen_there = await read_ahead(first.resume(START))
    assert [created["id"] in e.text for e in seen_there.events] == [True]
    page = await store.events.page(WS, START, utcnow(), 100)  # this host's clock: behind it
    assert [created["id"] in e.text for e in page.events] == [True]


async def test_the_horizon_is_raised_and_read_back_as_a_majority_holds_it(store):
    """On a replica set a horizon only this member holds could be rolled back by a failover,
    and a writer on the new primary could then stamp events behind positions already handed
    out: the raise waits for a majority, and the horizon read back is a majority's."""
    horizons = store.events.horizons
    assert horizons.write_concern.document == {"w": "majority"}
    assert horizons.read_concern.level == "majority"


async def test_without_a_horizon_a_majority_holds_the_page_stops_at_the_settle_bound(
    store, monkeypatch
):
    """The raise finds a horizon ahead (another reader's), but a majority does not hold one
    yet: the page reads only up to `settled_before`, as a feed with a settle period does."""
    await store.lists.create(WS, "Settled", "u1")
    ahead = FakeClock()
    ahead.advance(3600)
    writer, own_now = store.events.writer, store.events.writer.now
    writer.now = ahead.now  # another reader, its clock ahead, raised the horizon
    try:
        await store.events.page(WS, START, utcnow(), 100)
    finally:
        writer.now = own_now
    fresh = await store.lists.create(WS, "Fresh", "u1")  # stamped past the (raised) horizon

    async def not_held_by_a_majority(*args, **kwargs):
        return None

    monkeypatch.setattr(store.events.horizons, "find_one", not_held_by_a_majority)
    bound = utcnow() - dt.timedelta(minutes=5)
    page = await store.events.page(WS, START, bound, 100)
    assert page.settled <= bound
    assert all(fresh["id"] not in e.text for e in page.events)
