"""The store's threads run under SCHED_BATCH (store/sqlite/threads.py): a unit handed to one wakes
it without taking the core from the event loop. The event loop's own thread keeps the default
policy. In one process, and in a real `workspace-api serve`."""

from __future__ import annotations

import os
import threading

import pytest

from store.sqlite.engine import Engine
from store.sqlite.threads import yield_on_wakeup
from tests.helpers import ready_pids, serving, wait_for

pytestmark = [
    pytest.mark.sqlite,
    pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="a Linux scheduling policy"),
]


def policy_of_this_thread(conn) -> tuple[str, int]:
    return threading.current_thread().name, os.sched_getscheduler(0)


def policy(tid: int | None) -> int | None:
    """The scheduling policy of a thread of this machine, None once it has ended."""
    try:
        return os.sched_getscheduler(tid) if tid else None
    except ProcessLookupError:
        return None


async def test_units_run_under_sched_batch_and_the_caller_keeps_its_policy(tmp_path):
    engine = Engine(tmp_path / "threads.sqlite3", timeout=5.0, readers=1)
    try:
        engine.run_once(lambda conn: conn.execute("CREATE TABLE t (v INTEGER)"))
        writer = await engine.write(policy_of_this_thread)
        reader = await engine.read(policy_of_this_thread)
        quick = await engine.read(policy_of_this_thread, quick=True)
        names = {writer[0], reader[0], quick[0]}
        assert names == {"sqlite-writer_0", "sqlite-reader_0", "sqlite-quick_0"}
        assert {writer[1], reader[1], quick[1]} == {os.SCHED_BATCH}
        assert os.sched_getscheduler(0) == os.SCHED_OTHER  # the event loop's thread

        await engine.write(lambda conn: conn.execute("INSERT INTO t (v) VALUES (1)"))

        def checkpoints_batch() -> bool:  # the thread that copies the log after the writes
            found = [t for t in threading.enumerate() if t.name.startswith("sqlite-checkpoint")]
            return bool(found) and all(policy(t.native_id) == os.SCHED_BATCH for t in found)

        await wait_for(checkpoints_batch, timeout=30, what="the checkpoints under SCHED_BATCH")
    finally:
        engine.close()


def test_a_thread_that_asks_is_put_under_sched_batch():
    seen = []

    def run() -> None:
        seen.append((yield_on_wakeup(), os.sched_getscheduler(0)))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [(True, os.SCHED_BATCH)]
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # only the thread that asked


async def test_a_serve_process_runs_its_event_loop_at_the_default_policy_and_its_store_under_batch(
    tmp_path,
):
    env = {
        "MONGODB_URI": "",
        "WSAPI_SQLITE_PATH": str(tmp_path / "serve.sqlite3"),
        "WSAPI_SECRET": "s" * 40,
        "WSAPI_LOG_LEVEL": "info",  # its access lines name its pid
    }
    with serving(tmp_path, env=env) as (_, log):
        await wait_for(lambda: ready_pids(log), what="the /readyz answer in the access log")
        (pid,) = ready_pids(log)
        policies = {tid: policy(tid) for tid in map(int, os.listdir(f"/proc/{pid}/task"))}
    assert policies.pop(pid) == os.SCHED_OTHER  # the event loop's thread
    # The writer, the quick reader and the readers (and the checkpoints, once started).
    assert sum(found == os.SCHED_BATCH for found in policies.values()) >= 3, policies
