"""Writers of several processes on one SQLite file take turns (store/sqlite/turns.py): a writer
with units queued back to back lets a writer that was waiting in before its next unit, instead
of taking SQLite's lock straight back while the other polls for it until its timeout."""

from __future__ import annotations

import asyncio
import fcntl
import os
import subprocess
import sys
import time

import pytest

from store.errors import StoreBusy
from store.sqlite.engine import Engine
from store.sqlite.turns import LET_IN, turns_path

pytestmark = pytest.mark.sqlite

HOLD = 0.15  # how long each of the busy writer's units holds the write lock


def hold(conn, seconds: float) -> None:
    conn.execute("INSERT INTO t (v) VALUES (1)")
    time.sleep(seconds)


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
        await asyncio.sleep(0.3)
        waits = []
        for _ in range(5):
            started = time.monotonic()
            await other.write(hold, 0)
            waits.append(time.monotonic() - started)
    finally:
        stop.set()
        await asyncio.gather(*queued)
    # Each write waits for the unit under way (HOLD) and little else, never for the timeout.
    assert max(waits) < HOLD + LET_IN + 0.5, waits
    assert units[0] >= 5  # and the busy writer kept writing meanwhile


async def test_a_writer_that_gives_up_waiting_holds_nobody_up(engines):
    busy, other = engines
    long = asyncio.ensure_future(busy.write(hold, 1.0))
    await asyncio.sleep(0.2)
    with pytest.raises(StoreBusy):
        await other.write(hold, 0, timeout=0.3)
    await long
    started = time.monotonic()
    await busy.write(hold, 0)
    assert time.monotonic() - started < LET_IN / 2  # nobody is said to wait any more


async def test_a_stuck_waiter_delays_a_writer_by_at_most_the_let_in_time(engines):
    """A process that says it waits and never takes its turn (stopped, say) delays each unit
    of the others by LET_IN at most; once it is gone, by nothing."""
    busy, _ = engines
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
        started = time.monotonic()
        await busy.write(hold, 0)
        assert LET_IN * 0.8 <= time.monotonic() - started < LET_IN + 0.5
    finally:
        stuck.kill()
        stuck.communicate()
    fd = os.open(turns_path(busy.path), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the dead process's claim went with it
    finally:
        os.close(fd)
    started = time.monotonic()
    await busy.write(hold, 0)
    assert time.monotonic() - started < LET_IN / 2
