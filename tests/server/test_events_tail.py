"""`workspace-api events tail`, a real process: from the configured store (this tier's: a SQLite
file, or the wire tier's server) and through a running API, it prints each new event as one
JSON line as it arrives, only the types asked for, and Ctrl-C ends it with exit code 0."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from server.config import load_config
from server.services import open_services
from store.clock import utcnow
from tests.helpers import TEST_SECRET, Client, make_workspace, running_demo, test_environ

STARTED: list[Tail] = []


async def from_now() -> str:
    """A --since instant after every event recorded so far: the tail's start then does not
    depend on how long its process takes to begin reading (returns once that instant passed)."""
    at = utcnow() + dt.timedelta(milliseconds=2)
    while utcnow() <= at:
        await asyncio.sleep(0.001)
    return at.isoformat(timespec="milliseconds") + "Z"


@pytest.fixture(autouse=True)
def stop_tails():
    """Every tail a test started ends with it, its pipes closed."""
    yield
    while STARTED:
        STARTED.pop().close()


class Tail:
    """`workspace-api events tail ...` with its stdout read line by line on a thread."""

    def __init__(self, *args: str, env: dict) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "events", "tail", "--poll-seconds", "0.1", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.errors = ""
        STARTED.append(self)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    async def events(self, count: int, timeout: float = 30) -> list[dict]:
        found, deadline = [], time.monotonic() + timeout
        while len(found) < count:
            assert self.process.poll() is None, self.process.stderr.read()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, f"only {found} arrived"
            try:
                found.append(json.loads(self.lines.get_nowait()))
            except queue.Empty:
                await asyncio.sleep(0.05)
        return found

    def interrupt(self) -> tuple[int, str]:
        """Ctrl-C: the exit code and what it wrote on stderr."""
        self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(15)
        finally:
            self.close()
        return code, self.errors

    def close(self) -> None:
        """Kill it if it still runs; keep its stderr in `errors`; close its pipes."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.reader.join(10)  # it has read to the end of the output
        if self.process.stderr is not None and not self.process.stderr.closed:
            self.errors = self.process.stderr.read()
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


async def test_tail_prints_a_workspaces_new_events_from_the_store_until_ctrl_c(tmp_path):
    base = test_environ()
    env = {
        "MONGODB_URI": base["MONGODB_URI"] if base["MONGODB_URI"] != "memory" else "",
        "WSAPI_SQLITE_PATH": str(tmp_path / "store.sqlite3"),
        "WSAPI_DATABASE": base["WSAPI_DATABASE"],
        "WSAPI_SECRET": TEST_SECRET,
        "WSAPI_SYNC_SETTLE_SECONDS": "0.2",
    }
    store, auth = await open_services(load_config(environ=env))
    try:
        ws = await make_workspace(store, auth, "Tail")
        other = await make_workspace(store, auth, "Other")
        owner = ws.users[0]["id"]
        await store.lists.create(ws.id, "Before the tail", owner)  # not new: not printed
        since = await from_now()
        tail = Tail("--workspace", ws.id, "--since", since, env=env)
        typed = Tail(
            "--workspace", ws.id, "--type", "call.updated,list.updated", "--since", since, env=env
        )
        created = await store.lists.create(ws.id, "During the tail", owner)
        await store.lists.create(other.id, "Another workspace's", other.users[0]["id"])
        updated = await store.lists.set_count(ws.id, created["id"], 3)
        first = await tail.events(2)
        assert [e["type"] for e in first] == ["list.created", "list.updated"]
        assert (
            first[0]["data"]["id"] == created["id"] and first[0]["data"]["name"] == created["name"]
        )
        assert first[1]["data"]["prospectsCount"] == updated["prospectsCount"] == 3
        assert [e["type"] for e in await typed.events(1)] == ["list.updated"]
        for process in (tail, typed):
            code, errors = process.interrupt()
            assert code == 0 and "Traceback" not in errors, errors
            assert process.lines.empty()  # nothing else: not the other workspace's list
    finally:
        if not store.embedded:
            await store.drop()
        await store.close()


async def test_tail_follows_a_running_api_with_its_key(tmp_path):
    with running_demo(
        tmp_path,
        "--calls",
        "20",
        "--prospects",
        "20",
        "--timeline",
        "0",
        "--sync-settle-seconds",
        "0.2",
    ) as (_, keys, _log):
        base, key = keys["baseUrl"], keys["workspaces"][0]["apiKey"]
        tail = Tail("--base-url", base, "--api-key", key, "--since", await from_now(), env={})
        client = Client(base.removesuffix("/v1"), key)
        owner = (await client.get("/v1/users")).json()["users"][0]["id"]
        created = (await client.post("/v1/lists", {"name": "Tailed", "ownerUserId": owner})).json()
        [event] = await tail.events(1)
        assert event["type"] == "list.created" and event["data"] == created["list"]
        code, errors = tail.interrupt()
        assert code == 0 and "Traceback" not in errors, errors
        refused = Tail("--base-url", base, "--api-key", "not-a-key", env={})
        assert refused.process.wait(30) == 1
        refused.close()
        assert "401" in refused.errors
