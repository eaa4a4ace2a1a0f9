"""The embedded store's rate-limit counters (store/sqlite/ratecounts.py): a table in a file
mapped by every process that opens the database, counted exactly under a flock lock, whose
expired windows make room for new ones."""

import asyncio
import collections
import datetime as dt
import os
import random
import subprocess
import sys
import textwrap

import pytest

from store.errors import StoreBusy
from store.sqlite import ratecounts
from store.sqlite.ratecounts import SharedCounters

T0 = dt.datetime(2027, 1, 15, 12, 0)
MINUTE = dt.timedelta(minutes=1)


@pytest.fixture
def small_table(monkeypatch):
    """A table of 8 slots, so that windows collide and fill it."""
    monkeypatch.setattr(ratecounts, "SLOTS", 8)
    monkeypatch.setattr(ratecounts, "SIZE", ratecounts.HEADER + 8 * ratecounts.SLOT.size)


async def test_counts_are_exact_per_workspace_and_window(tmp_path, small_table):
    counters = SharedCounters(tmp_path / "db-ratelimit")
    rng = random.Random(3)
    expected = collections.Counter()
    for _ in range(2000):  # 6 workspaces x 1 window in 8 slots: long probe chains
        workspace = f"ws-{rng.randrange(6)}"
        expected[workspace] += 1
        assert await counters.hit(workspace, T0, T0 + 2 * MINUTE) == expected[workspace]
    for workspace, count in expected.items():
        assert await counters.count(workspace, T0) == count
    assert await counters.count("ws-other", T0) == 0
    assert await counters.count("ws-0", T0 + MINUTE) == 0  # another window of the same one
    counters.close()
    reopened = SharedCounters(tmp_path / "db-ratelimit")  # the counts survive a restart
    assert await reopened.count("ws-0", T0) == expected["ws-0"]
    reopened.close()


async def test_expired_windows_make_room_and_a_full_table_is_busy(tmp_path, small_table):
    counters = SharedCounters(tmp_path / "db-ratelimit")
    for index in range(8):
        assert await counters.hit(f"ws-{index}", T0, T0 + 2 * MINUTE) == 1
    with pytest.raises(StoreBusy):  # nine windows alive at once do not fit in eight slots
        await counters.hit("ws-8", T0, T0 + 2 * MINUTE)
    assert await counters.count("ws-0", T0) == 1  # nothing was overwritten
    later = T0 + 2 * MINUTE  # every window above has expired: their slots are reused
    for index in range(8, 16):
        assert await counters.hit(f"ws-{index}", later, later + 2 * MINUTE) == 1
        assert await counters.hit(f"ws-{index}", later, later + 2 * MINUTE) == 2
    assert await counters.count("ws-0", T0) == 0
    counters.close()


def test_a_foreign_or_torn_file_is_started_again(tmp_path):
    path = tmp_path / "db-ratelimit"
    path.write_bytes(b"not a counter table")
    counters = SharedCounters(path)
    assert path.stat().st_size == ratecounts.SIZE
    assert path.read_bytes()[: ratecounts.HEADER] == ratecounts.MAGIC
    counters.close()


HITTER = textwrap.dedent("""
    import asyncio, datetime as dt, sys
    from store.sqlite.ratecounts import SharedCounters
    async def main():
        counters = SharedCounters(__import__("pathlib").Path(sys.argv[1]))
        t0 = dt.datetime(2027, 1, 15, 12, 0)
        for i in range(int(sys.argv[2])):
            await counters.hit("ws-" + str(i % 3), t0, t0 + dt.timedelta(minutes=2))
    asyncio.run(main())
""")


async def test_processes_sharing_the_file_count_exactly(tmp_path):
    path = tmp_path / "db-ratelimit"
    SharedCounters(path).close()
    children = [
        subprocess.Popen([sys.executable, "-c", HITTER, str(path), "3000"], cwd=os.getcwd())
        for _ in range(3)
    ]
    assert [child.wait(60) for child in children] == [0, 0, 0]
    counters = SharedCounters(path)
    assert [await counters.count(f"ws-{i}", T0) for i in range(3)] == [3000, 3000, 3000]
    counters.close()


async def test_a_lock_held_too_long_elsewhere_is_busy_not_a_wait(tmp_path, monkeypatch):
    monkeypatch.setattr(ratecounts, "LOCK_WAIT", 0.3)
    path = tmp_path / "db-ratelimit"
    counters = SharedCounters(path)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR);"
            " fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(30)",
            str(path),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline().strip() == b"held"
        ticks = 0

        async def ticker():  # the event loop keeps running while the lock is awaited
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        task = asyncio.ensure_future(ticker())
        with pytest.raises(StoreBusy):
            await counters.hit("ws-a", T0, T0 + 2 * MINUTE)
        task.cancel()
        assert ticks >= 10
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    assert await counters.hit("ws-a", T0, T0 + 2 * MINUTE) == 1  # released with its process
    counters.close()


def _count_in_child(counters: SharedCounters, hits: int) -> None:
    async def run():
        for _ in range(hits):
            await counters.hit("ws-f", T0, T0 + 2 * MINUTE)

    asyncio.run(run())


async def test_a_forked_child_takes_its_own_lock(tmp_path):
    """`serve --processes N` forks: a child that inherited the counters must still exclude its
    parent (a flock belongs to the open file, so the child opens its own)."""
    import multiprocessing

    counters = SharedCounters(tmp_path / "db-ratelimit")
    await counters.hit("ws-f", T0, T0 + 2 * MINUTE)
    children = [
        multiprocessing.get_context("fork").Process(target=_count_in_child, args=(counters, 3000))
        for _ in range(2)
    ]
    for child in children:
        child.start()
    for _ in range(3000):
        await counters.hit("ws-f", T0, T0 + 2 * MINUTE)
        await asyncio.sleep(0)
    for child in children:
        child.join(60)
        assert child.exitcode == 0
    assert await counters.count("ws-f", T0) == 1 + 3 * 3000
    counters.close()


def allocated(path) -> int:
    return os.stat(path).st_blocks * 512


def sparse_copy(path, sparse) -> None:
    """A copy of the counters file at `path` that has no disk blocks where it holds zeros."""
    with open(path, "rb") as source, open(sparse, "wb") as target:
        target.write(source.read(ratecounts.HEADER))
        data = source.read()
        for offset in range(0, len(data), 4096):
            page = data[offset : offset + 4096]
            if page.strip(b"\0"):
                target.seek(ratecounts.HEADER + offset)
                target.write(page)
        target.truncate(ratecounts.SIZE)


async def test_the_file_is_allocated_on_disk_when_created_and_when_opened(tmp_path):
    """No page of the mapping may lack a disk block: a store into one on a full disk would be
    a SIGBUS (tests/server/test_full_disk.py). A sparse file an older version left is allocated
    when it is opened, its counts kept."""
    path = tmp_path / "db-ratelimit"
    counters = SharedCounters(path)
    assert allocated(path) >= ratecounts.SIZE
    assert await counters.hit("ws", T0, T0 + 2 * MINUTE) == 1
    counters.close()
    sparse = tmp_path / "old-ratelimit"
    sparse_copy(path, sparse)  # an older version's file: holes where nothing was counted
    assert allocated(sparse) < ratecounts.SIZE // 4
    reopened = SharedCounters(sparse)
    assert allocated(sparse) >= ratecounts.SIZE
    assert await reopened.count("ws", T0) == 1
    reopened.close()
