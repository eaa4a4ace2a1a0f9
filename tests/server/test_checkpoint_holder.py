"""The service beside a replicator that holds checkpoints back the way Litestream does: another
process keeps a read transaction open on the database file for as long as it likes and runs its
own `PRAGMA wal_checkpoint(PASSIVE)` every so often. Meanwhile the API keeps writing and reading
correctly (its own checkpoints are PASSIVE too, so nobody waits on the held reader), and once
the holder lets go the write-ahead log is copied into the file whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from tests.server.test_backup_proof import cli, live_call, request
from tests.server.test_serve import Server

pytestmark = pytest.mark.sqlite

# A second process with two connections: one holds a read transaction (Litestream's, which
# keeps the log from being copied past the frames it has not shipped yet), the other checkpoints
# PASSIVE every CHECKPOINT_EVERY seconds and prints what it did, one JSON line each time.
HOLDER = """
import json, sqlite3, sys, threading, time
path, every = sys.argv[1], float(sys.argv[2])
reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
reader.execute("PRAGMA busy_timeout=5000")
reader.execute("BEGIN")
held = reader.execute("SELECT count(*) FROM calls").fetchone()[0]
checkpointer = sqlite3.connect(path, isolation_level=None)
checkpointer.execute("PRAGMA busy_timeout=5000")
state = {"held": True}

def release():
    sys.stdin.readline()
    reader.execute("COMMIT")
    state["seen"] = reader.execute("SELECT count(*) FROM calls").fetchone()[0]
    state["held"] = False

threading.Thread(target=release, daemon=True).start()
while True:
    busy, log, done = checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    report = {"held": state["held"], "calls": held, "busy": busy, "log": log, "checkpointed": done}
    report["seen"] = state.get("seen")
    print(json.dumps(report), flush=True)
    time.sleep(every)
"""
CHECKPOINT_EVERY = "0.2"


class Holder:
    """The holder process and the reports it prints, read on a thread of their own."""

    def __init__(self, path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(path), CHECKPOINT_EVERY],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.reports: list[dict] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.reports.append(json.loads(line))

    def wait_for(self, condition, what: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        seen = len(self.reports)
        while True:
            for report in self.reports[seen:]:
                if condition(report):
                    return report
            seen = len(self.reports)
            assert self.process.poll() is None, "the holder died"
            assert time.monotonic() < deadline, f"{what}: {self.reports[-3:]}"
            time.sleep(0.05)

    def let_go(self) -> None:
        self.process.stdin.write("release\n")
        self.process.stdin.flush()

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(10)
        self.reader.join(10)
        self.process.stdin.close()
        self.process.stdout.close()


def test_the_api_writes_and_reads_while_a_replicator_holds_checkpoints(tmp_path):
    path = tmp_path / "api.sqlite3"
    env = {**os.environ, "MONGODB_URI": "", "WSAPI_SECRET": "", "WSAPI_SQLITE_PATH": str(path)}
    workspace = cli(env, "workspaces", "create", "Acme")["workspace"]["id"]
    user = cli(
        env, "users", "create", "--workspace", workspace, "--email", "u@x.example",
        "--first-name", "U", "--last-name", "X",
    )["user"]["id"]  # fmt: skip
    key = cli(
        env, "keys", "create", "--workspace", workspace, "--name", "dialer",
        "--scope", "read,ingest",
    )["apiKey"]  # fmt: skip
    served = {"WSAPI_SQLITE_PATH": str(path), "WSAPI_SECRET": "", "MONGODB_URI": ""}
    server = Server(tmp_path, **served)
    holder = None
    try:
        server.wait_until_up()
        origin = server.origin
        holder = Holder(path)
        holder.wait_for(lambda r: r["held"], "the holder did not start")

        written = []
        for n in range(150):
            status, body = request(origin, key, "POST", "/v1/calls", live_call(user, n))
            assert status == 201, body
            written.append(body["call"]["id"])
            status, body = request(origin, key, "GET", f"/v1/calls/{written[-1]}")
            assert status == 200 and body["call"]["id"] == written[-1], body
        status, body = request(origin, key, "GET", "/v1/calls?pageSize=100")
        assert status == 200 and body["total"] == len(written)
        assert {c["id"] for c in body["calls"]} <= set(written)

        # Held: the checkpoints (the holder's, and the service's own) stop at its snapshot.
        held = holder.wait_for(
            lambda r: r["held"] and 0 <= r["checkpointed"] < r["log"], "no frames held back"
        )
        assert held["calls"] == 0 and held["busy"] == 0

        holder.let_go()
        done = holder.wait_for(
            lambda r: not r["held"] and r["log"] == r["checkpointed"], "the log was not copied"
        )
        assert done["seen"] == len(written)  # the holder saw every write once it let go
        status, body = request(origin, key, "GET", "/v1/calls?pageSize=100")
        assert status == 200 and body["total"] == len(written)
        assert request(origin, key, "POST", "/v1/calls", live_call(user, 0))[0] == 201
    finally:
        if holder is not None:
            holder.stop()
        server.stop()
