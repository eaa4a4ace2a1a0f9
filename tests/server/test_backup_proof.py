"""The proof of `workspace-api backup`: taken while `workspace-api import` writes 200,000 calls
and the API is written, on one SQLite file, by real processes. The copy passes the integrity
check and holds every call acknowledged before the backup started; restored in place of the
file, `serve` answers every route family, and an events client whose cursor predates the
backup goes on with no gap and no repeat."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

from tests.server.test_serve import Server

pytestmark = [pytest.mark.sqlite, pytest.mark.long]

IMPORTED = 200_000
SETTLE = "1"  # sync_settle_seconds: events show once this old


def request(origin: str, key: str, method: str, path: str, body: dict | None = None):
    """(status, parsed JSON body or None) of one request."""
    headers = {"Authorization": f"Bearer {key}"}
    data = None
    if body is not None:
        data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
    req = urllib.request.Request(f"{origin}{path}", data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            raw, status, kind = response.read(), response.status, response.headers["Content-Type"]
    except urllib.error.HTTPError as exc:
        raw, status, kind = exc.read(), exc.code, exc.headers["Content-Type"]
    parsed = json.loads(raw) if raw and "json" in (kind or "") and "ndjson" not in kind else None
    return status, parsed


def cli(env: dict, *argv: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", *argv, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def write_history(path, user: str) -> None:
    """IMPORTED finished calls in time order (as dialers export history), one a minute."""
    line = (
        '{"userId":"%s","direction":"outbound","disposition":"connected",'
        '"fromNumber":"+12125550142","toNumber":"+14155550111",'
        '"startedAt":"%sZ","endedAt":"%sZ","providerCallSid":"CA%032x",'
        '"prospect":{"email":"p%d@x.example"}}\n'
    )
    start = 1735689600  # 2025-01-01T00:00:00Z
    with open(path, "w") as out:
        for n in range(IMPORTED):
            at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + 60 * n))
            ended = at[:-2] + "30"
            out.write(line % (user, at, ended, n, n % 500))


def live_call(user: str, n: int) -> dict:
    return {
        "userId": user,
        "direction": "inbound",
        "disposition": "connected",
        "fromNumber": "+14155550100",
        "toNumber": "+12125550142",
        "startedAt": "2026-01-05T10:00:00Z",
        "endedAt": "2026-01-05T10:00:30Z",
        "prospect": {"email": f"live{n % 50}@x.example"},
    }


class LiveWriter(threading.Thread):
    """Records calls through the API, one after another, keeping the ids acknowledged (201)."""

    def __init__(self, origin: str, key: str, user: str) -> None:
        super().__init__(daemon=True)
        self.origin, self.key, self.user = origin, key, user
        self.acknowledged: list[str] = []
        self.failures: list[tuple[int, object]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.stopping.is_set():
            status, body = request(
                self.origin, self.key, "POST", "/v1/calls", live_call(self.user, n)
            )
            if status == 201:
                self.acknowledged.append(body["call"]["id"])
            else:
                self.failures.append((status, body))
            n += 1
            self.stopping.wait(0.01)  # a steady stream, not a flood


def follow(origin: str, key: str, cursor: str) -> tuple[list[str], str]:
    """The ids of every event from `cursor` on, and the cursor to go on from."""
    ids: list[str] = []
    while True:
        status, body = request(origin, key, "GET", f"/v1/events?cursor={cursor}")
        assert status == 200, body
        ids += [event["id"] for event in body["events"]]
        cursor = body["nextCursor"]
        if not body["hasMore"]:
            return ids, cursor


def wait_for(condition, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_a_backup_during_an_import_and_api_writes_restores_whole(tmp_path):
    path = tmp_path / "data" / "api.sqlite3"
    copy = tmp_path / "backups" / "api-1.sqlite3"
    copy.parent.mkdir()
    env = {
        **os.environ,
        "MONGODB_URI": "",
        "WSAPI_SECRET": "",  # the key-signing secret kept in the file, restored with it
        "WSAPI_SQLITE_PATH": str(path),
        "WSAPI_SYNC_SETTLE_SECONDS": SETTLE,
        "WSAPI_RATE_LIMIT_PER_MINUTE": "1000000",
        # An API write waits for the import's batch under way (the writers take turns); on a
        # busy shared machine that can pass the default 5 s, which is not what this test checks.
        "WSAPI_DB_TIMEOUT_SECONDS": "30",
    }
    served = {k: v for k, v in env.items() if k.startswith("WSAPI_") or k == "MONGODB_URI"}
    live_ws = cli(env, "workspaces", "create", "Live")["workspace"]["id"]
    imports_ws = cli(env, "workspaces", "create", "Imports")["workspace"]["id"]
    users = {}
    for workspace in (live_ws, imports_ws):
        users[workspace] = cli(
            env, "users", "create", "--workspace", workspace, "--email", "u@x.example",
            "--first-name", "U", "--last-name", "X",
        )["user"]["id"]  # fmt: skip
    live_key = cli(
        env, "keys", "create", "--workspace", live_ws, "--name", "crm",
        "--scope", "read,write,ingest",
    )["apiKey"]  # fmt: skip
    imports_key = cli(env, "keys", "create", "--workspace", imports_ws, "--name", "r")["apiKey"]
    history = tmp_path / "calls.ndjson"
    write_history(history, users[imports_ws])

    server = Server(tmp_path, **served)
    importing = None
    writer = None
    try:
        server.wait_until_up()
        origin = server.origin
        # The events client starts before anything happens in its workspace but the creation
        # of its user (`users create` records user.created: here already, or still to show).
        status, body = request(origin, live_key, "GET", "/v1/events")
        assert status == 200 and {e["type"] for e in body["events"]} <= {"user.created"}
        first_ids = [event["id"] for event in body["events"]]
        start_cursor = body["nextCursor"]

        writer = LiveWriter(origin, live_key, users[live_ws])
        writer.start()
        importing = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "import", "calls", "--workspace", imports_ws,
             str(history)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip

        def imported() -> int:
            assert importing.poll() is None, "the import ended early"
            status, body = request(origin, imports_key, "GET", "/v1/calls?pageSize=50")
            assert status == 200, body
            return body["total"]

        # Into the import (past its first unit of 5,000 calls, server/importer.py BATCH), with
        # events to read: the client reads up to a cursor...
        wait_for(lambda: imported() >= 6_000, "the import did not get going")
        assert importing.poll() is None
        wait_for(lambda: follow(origin, live_key, start_cursor)[0], "no live events shown")
        before_ids, client_cursor = follow(origin, live_key, start_cursor)
        # ...and the backup starts, while both keep writing.
        imported_before = imported()
        acknowledged_before = list(writer.acknowledged)
        assert importing.poll() is None, "the import ended before the backup started"
        summary = cli(env, "backup", "--to", str(copy))
    finally:
        if writer is not None:
            writer.stopping.set()
            writer.join(60)
        if importing is not None:
            importing.terminate()
            importing.wait(60)
        server.stop()  # killed: its write-ahead log stays beside the file
    assert writer.failures == []  # not one API write failed, the backup's time included
    assert summary["integrityCheck"] == "ok" and summary["bytes"] == copy.stat().st_size
    assert oct(copy.stat().st_mode & 0o777) == "0o600"

    # The copy on its own: whole, and everything acknowledged before the backup started.
    with contextlib.closing(sqlite3.connect(copy)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        count = conn.execute("SELECT count(*) FROM calls WHERE workspaceId = ?", (imports_ws,))
        in_copy = count.fetchone()[0]
        live_ids = {row[0] for row in conn.execute(
            'SELECT "_id" FROM calls WHERE workspaceId = ?', (live_ws,)
        )}  # fmt: skip
        copy_events = [row[0] for row in conn.execute(
            'SELECT "_id" FROM events WHERE workspaceId = ? ORDER BY "_id"', (live_ws,)
        )]  # fmt: skip
    assert imported_before <= in_copy < IMPORTED  # taken in the middle of the import
    assert set(acknowledged_before) <= live_ids

    # Restored in place of the file (its old log left beside it by the killed server).
    assert path.with_name(path.name + "-wal").exists()
    restored = cli(env, "restore", "--from", str(copy))
    assert restored["integrityCheck"] == "ok"
    assert not path.with_name(path.name + "-wal").exists()
    server = Server(tmp_path, **served)
    try:
        server.wait_until_up()
        origin = server.origin
        # The client goes on from its cursor: no event twice, none missing.
        after_ids, cursor = follow(origin, live_key, client_cursor)
        feed = first_ids + before_ids + after_ids
        assert len(set(feed)) == len(feed), "an event came twice"
        assert feed == copy_events, "the feed does not match the copy's events"
        answers_every_route_family(origin, live_key, users[live_ws], sorted(live_ids)[0])
        # New writes on the restored file go on in the same feed.
        wait_for(lambda: follow(origin, live_key, cursor)[0], "no event after the restore", 60)
        more, _ = follow(origin, live_key, cursor)
        assert set(more).isdisjoint(feed) and all(event > feed[-1] for event in more)
    finally:
        server.stop()


def answers_every_route_family(origin: str, key: str, user: str, call_id: str) -> None:
    """One request or more per route family of the API on the restored file, each answered as
    on any healthy file."""
    status, body = request(origin, key, "POST", "/v1/lists", {"name": "L", "ownerUserId": user})
    assert status == 201, body
    list_id = body["list"]["id"]
    contacts = {"contacts": [{"email": "restored@x.example", "firstName": "R"}]}
    status, body = request(origin, key, "POST", f"/v1/lists/{list_id}/contacts", contacts)
    assert status in (200, 201), body
    status, body = request(origin, key, "GET", "/v1/prospects")
    assert status == 200, body
    prospect_id = body["prospects"][0]["id"]
    note = {
        "prospectId": prospect_id,
        "type": "note",
        "occurredAt": "2026-01-05T11:00:00Z",
        "details": {"text": "after the restore"},
    }
    cases = [
        ("GET", "/healthz", None, 200),
        ("GET", "/readyz", None, 200),
        ("GET", "/v1/api-key", None, 200),
        ("GET", "/v1/users", None, 200),
        ("GET", "/v1/lists", None, 200),
        ("GET", f"/v1/lists/{list_id}", None, 200),
        ("GET", "/v1/calls", None, 200),
        ("GET", f"/v1/calls/{call_id}", None, 200),
        ("PATCH", f"/v1/calls/{call_id}", {"notes": "after the restore"}, 200),
        ("POST", "/v1/calls", live_call(user, 0), 201),
        ("POST", "/v1/calls/batch", {"calls": [live_call(user, 1)]}, 200),
        ("GET", f"/v1/calls/{call_id}/recording", None, 404),  # it has none
        ("GET", f"/v1/prospect-activities?prospectId={prospect_id}", None, 200),
        ("POST", "/v1/prospect-activities", note, 201),
        ("GET", "/v1/exports/calls", None, 200),
        ("GET", "/v1/exports/prospects", None, 200),
        ("GET", "/v1/exports/lists", None, 200),
        ("GET", "/v1/exports/activities", None, 200),
        ("GET", "/v1/events", None, 200),
        ("GET", "/v1/webhook-endpoints", None, 200),
        ("GET", "/v1/reporting/dialer-metrics?from=2026-01-01&to=2026-01-31", None, 200),
        ("GET", "/v1/openapi.json", None, 200),
        ("GET", "/reference", None, 200),
    ]
    for method, path, body, expected in cases:
        status, answer = request(origin, key, method, path, body)
        assert status == expected, (method, path, status, answer)
