"""lastUsedAt: recorded to the minute without a database write per request. The writes are
counted at the store (Keys.touch); the minute is the injected wall clock's, so nothing sleeps."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from store.errors import StoreUnavailable
from tests.helpers import Client

EPOCH = dt.datetime(1970, 1, 1)


@pytest.fixture
def touches(store, monkeypatch):
    """Every Keys.touch the service makes: (workspace id, key id, instant)."""
    made: list[tuple[str, str, dt.datetime]] = []
    original = store.keys.touch

    async def counting(workspace_id, key_id, at):
        made.append((workspace_id, key_id, at))
        await original(workspace_id, key_id, at)

    monkeypatch.setattr(store.keys, "touch", counting)
    return made


def start_of_a_minute(clock) -> dt.datetime:
    """Move the clock to one second past the start of the next minute; that minute."""
    clock.advance(61 - clock.time() % 60)
    return EPOCH + dt.timedelta(minutes=int(clock.time() // 60))


async def test_at_most_one_write_per_key_per_minute(origin, auth, store, clock, touches, ws_a):
    second_record, other = await auth.create(ws_a.id, "second")
    first, second = Client(origin, ws_a.key), Client(origin, other)
    minute = start_of_a_minute(clock)
    for _ in range(3):
        for _ in range(5):
            assert (await first.get("/v1/users")).code == 200
        assert (await second.get("/v1/users")).code == 200
        clock.advance(15)  # still the same minute after three rounds (1 + 45 s)
    await auth.usage.flush()
    assert sorted(key for _, key, _ in touches) == sorted([ws_a.key_id, second_record["id"]])
    assert {at for _, _, at in touches} == {minute}

    clock.advance(60)  # the next minute: one more write for the key used in it
    for _ in range(10):
        assert (await first.get("/v1/users")).code == 200
    await auth.usage.flush()
    assert len(touches) == 3
    assert touches[-1][1:] == (ws_a.key_id, minute + dt.timedelta(minutes=1))

    [record] = [k for k in await store.keys.list(ws_a.id) if k["id"] == ws_a.key_id]
    assert record["lastUsedAt"] == minute + dt.timedelta(minutes=1)
    assert record["lastUsedAt"].second == 0 and record["lastUsedAt"].microsecond == 0


async def test_the_write_is_off_the_request_path(origin, auth, store, clock, monkeypatch, ws_a):
    """With the store's write stuck, requests are still answered; the writes land once they
    can, the uses queued meanwhile folded into one write of the latest minute."""
    release = asyncio.Event()
    written: list[dt.datetime] = []
    original = store.keys.touch

    async def stuck(workspace_id, key_id, at):
        await release.wait()
        written.append(at)
        await original(workspace_id, key_id, at)

    monkeypatch.setattr(store.keys, "touch", stuck)
    client = Client(origin, ws_a.key)
    minute = start_of_a_minute(clock)
    for _ in range(3):
        assert (await client.get("/v1/users")).code == 200
        clock.advance(60)  # a new minute each time: each request queues a write
    assert written == []  # the first write is stuck, and every request was answered
    release.set()
    await auth.usage.flush()
    assert written == [minute, minute + dt.timedelta(minutes=2)]
    [record] = [k for k in await store.keys.list(ws_a.id) if k["id"] == ws_a.key_id]
    assert record["lastUsedAt"] == written[-1]


async def test_last_use_only_moves_forward(store, ws_a):
    later = dt.datetime(2031, 5, 1, 10, 7)
    await store.keys.touch(ws_a.id, ws_a.key_id, later)
    await store.keys.touch(ws_a.id, ws_a.key_id, later - dt.timedelta(minutes=3))
    [record] = await store.keys.list(ws_a.id)
    assert record["lastUsedAt"] == later


async def test_a_failed_write_is_logged_and_requests_go_on(
    origin, auth, store, clock, monkeypatch, ws_a, caplog
):
    async def unavailable(*args):
        raise StoreUnavailable("down")

    monkeypatch.setattr(store.keys, "touch", unavailable)
    client = Client(origin, ws_a.key)
    start_of_a_minute(clock)
    assert (await client.get("/v1/users")).code == 200
    await auth.usage.flush()
    assert "could not record a key's last use (StoreUnavailable)" in caplog.text
    assert (await client.get("/v1/users")).code == 200


async def test_shutdown_writes_the_uses_still_queued(origin, auth, store, clock, ws_a):
    client = Client(origin, ws_a.key)
    minute = start_of_a_minute(clock)
    assert (await client.get("/v1/users")).code == 200
    await auth.usage.stop()
    [record] = await store.keys.list(ws_a.id)
    assert record["lastUsedAt"] == minute
