"""Writers of several processes on one SQLite file take turns (store/sqlite/turns.py): a writer
with units queued back to back lets a writer that was waiting in before its next unit, instead
of taking SQLite's lock straight back while the other polls for it until its timeout."""

from __future__ import annotations

import asyncio
import fcntl
import os
import subprocess
import sys
import threading
import time

import pytest

from store.errors import StoreBusy
from store.sqlite import turns
from store.sqlite.engine import Engine
from store.sqlite.turns import LET_IN, LONGEST_PAUSE, turns_path

pytestmark = pytest.mark.sqlite

HOLD = 0.15  # how long each of the busy writer's units holds the write lock


def hold(conn, seconds: float, inside: threading.Event | None = None) -> None:
    conn.execute("INSERT INTO t (v) VALUES (1)")
    if inside is not None:
        inside.set()  # the write lock is taken
    time.sleep(seconds)


class TurnsTime:
    """store/sqlite/turns.py's `time` in a test: the real clock plus the pauses it was asked
    for, which it records instead of sleeping them (monkeypatched into the module)."""

    def __init__(self) -> None:
        self.paused = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.paused

    def sleep(self, seconds: float) -> None:
        self.paused += seconds


def waiting_writers(path) -> bool:
    """Whether a writer says it waits on the file of turns (a shared flock is held on it)."""
    fd = os.open(turns_path(path), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # and the lock with it
    return False


@pytest.fixture
def engines(tmp_path):
    path = tmp_path / "turns.sqlite3"
    made = [Engine(path, timeout=5.0, readers=1) for _ in range(2)]
    made[0].run_once(lambda conn: conn.execute("CREATE TABLE t (v INTEGER)"))
    yield made
    for engine in made:
        engine.close()


async def test_a_waiting_writer_gets_the_next_turn_of_a_writer_with_units_back_to_back(engines):
    busy, other = engines
    stop, units = asyncio.Event(), [0]

    async def flat_out() -> None:  # several units always queued: the lock is retaken at once
        while not stop.is_set():
            await busy.write(hold, HOLD)
            units[0] += 1

    queued = [asyncio.ensure_future(flat_out()) for _ in range(4)]
    try:
        deadline = time.monotonic() + 30
        while units[0] < 2:  # the busy writer is under way
            assert time.monotonic() < deadline, "the busy writer did not write"
            await asyncio.sleep(0.01)
        passed = []
        for _ in range(5):
            before = units[0]
            await other.write(hold, 0)  # never StoreBusy: it gets a turn
            passed.append(units[0] - before)
    finally:
        stop.set()
        await asyncio.gather(*queued)
    # Each write waits for the unit under way, the next one at most (it may have begun as the
    # write came), never for a run of them (without turns: a unit after another until the
    # write's timeout, about 30 of them).
    assert max(passed) <= 3, passed
    assert units[0] >= 2 + 5  # and the busy writer kept writing meanwhile


async def test_a_writer_that_gives_up_waiting_holds_nobody_up(engines):
    busy, other = engines
    inside = threading.Event()
    long = asyncio.ensure_future(busy.write(hold, 1.0, inside))
    assert await asyncio.to_thread(inside.wait, 30)  # the busy writer holds the lock
    with pytest.raises(StoreBusy):
        await other.write(hold, 0, timeout=0.3)
    await long
    assert not waiting_writers(busy.path)  # nobody is said to wait any more


async def test_a_stuck_waiter_delays_a_writer_by_at_most_the_let_in_time(engines, monkeypatch):
    """A process that says it waits and never takes its turn (stopped, say) delays each unit
    of the others by LET_IN at most; once it is gone, by nothing. The pauses are counted on
    the module's clock (TurnsTime), not waited."""
    busy, _ = engines
    clock = TurnsTime()
    monkeypatch.setattr(turns, "time", clock)
    stuck = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR)\n"
            "fcntl.flock(fd, fcntl.LOCK_SH)\n"
            "print('waiting', flush=True)\n"
            "time.sleep(60)\n",
            str(turns_path(busy.path)),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        await busy.write(hold, 0)  # the file of turns exists
        assert (await asyncio.to_thread(stuck.stdout.readline)).strip() == "waiting"
        before = clock.paused
        await busy.write(hold, 0)
        # It let the waiter in for LET_IN, then went ahead (within one pause of it).
        assert LET_IN <= clock.paused - before < LET_IN + 2 * LONGEST_PAUSE, clock.paused
    finally:
        stuck.kill()
        stuck.communicate()
    assert not waiting_writers(busy.path)  # the dead process's claim went with it
    before = clock.paused
    await busy.write(hold, 0)
    assert clock.paused == before  # nobody to let in: no pause at all
