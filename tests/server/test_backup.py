"""`workspace-api backup` and `restore` refuse what they must: an existing backup path, a
MongoDB store, a restore while a process has the file open (a running `serve`, a plain SQLite
connection), and a backup that is damaged or not one of this service's files. A restore never
lets the old write-ahead log reach the new file. Real processes on real files."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from tests.server.test_serve import Server, get

pytestmark = pytest.mark.long


def file_env(path) -> dict:
    return {**os.environ, "MONGODB_URI": "", "WSAPI_SECRET": "", "WSAPI_SQLITE_PATH": str(path)}


def run(env: dict, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def answer(env: dict, *argv: str) -> dict:
    done = run(env, *argv, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def workspaces(path) -> list[str]:
    conn = sqlite3.connect(
        path, uri=True
    )  # closed at once: an open connection would refuse a restore
    try:
        return [row[0] for row in conn.execute("SELECT name FROM workspaces ORDER BY name")]
    finally:
        conn.close()


@pytest.fixture
def populated(tmp_path):
    """A database file with one workspace, and its environment."""
    path = tmp_path / "data" / "api.sqlite3"
    env = file_env(path)
    answer(env, "workspaces", "create", "Before")
    return path, env


@pytest.mark.sqlite
def test_backup_prints_size_and_time_and_never_replaces_a_file(tmp_path, populated):
    _, env = populated
    target = tmp_path / "copy.sqlite3"
    done = run(env, "backup", "--to", str(target))
    assert done.returncode == 0, done.stderr
    assert f"bytes: {target.stat().st_size}" in done.stdout and "seconds: " in done.stdout
    assert "integrityCheck: ok" in done.stdout
    assert workspaces(target) == ["Before"]

    before = target.read_bytes()
    done = run(env, "backup", "--to", str(target))
    assert done.returncode == 1 and "exists" in done.stderr
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no partial


@pytest.mark.parametrize("command", ["backup", "restore"])
def test_a_mongodb_store_is_refused_naming_mongodump(tmp_path, command):
    """Before any connection: on the wire tier its server, elsewhere an address nobody serves."""
    uri = os.environ.get("MONGODB_URI", "")
    uri = uri if uri.startswith("mongodb") else "mongodb://127.0.0.1:1/"
    env = {**os.environ, "MONGODB_URI": uri, "WSAPI_SECRET": "s" * 40}
    option = "--to" if command == "backup" else "--from"
    done = run(env, command, option, str(tmp_path / "x.sqlite3"))
    assert done.returncode == 2
    assert "mongodump" in done.stderr and "--oplog" in done.stderr
    assert not (tmp_path / "x.sqlite3").exists()


@pytest.mark.sqlite
def test_restore_is_refused_while_serve_or_any_connection_has_the_file_open(tmp_path, populated):
    path, env = populated
    backup = tmp_path / "backup.sqlite3"
    answer(env, "backup", "--to", str(backup))
    answer(env, "workspaces", "create", "After")

    server = Server(tmp_path, WSAPI_SQLITE_PATH=str(path), WSAPI_SECRET="", MONGODB_URI="")
    try:
        server.wait_until_up()
        done = run(env, "restore", "--from", str(backup))
        assert done.returncode == 1 and "has the database file" in done.stderr, done.stderr
        assert get(f"{server.origin}/readyz")[0] == 200  # untouched, still serving
    finally:
        server.stop()
    assert workspaces(path) == ["After", "Before"]

    # A process that merely holds a connection (a sqlite3 shell, a script) counts too.
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_OPEN, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout.readline() == b"open\n"
        done = run(env, "restore", "--from", str(backup))
        assert done.returncode == 1 and "has the database file" in done.stderr, done.stderr
    finally:
        holder.stdin.close()
        holder.wait(30)
        holder.stdout.close()
    assert workspaces(path) == ["After", "Before"]

    restored = answer(env, "restore", "--from", str(backup))  # nobody uses it now
    assert restored["integrityCheck"] == "ok"
    assert workspaces(path) == ["Before"]
    assert oct(path.stat().st_mode & 0o777) == "0o600"


HOLD_OPEN = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("SELECT count(*) FROM workspaces").fetchall()
print("open", flush=True)
sys.stdin.read()
"""

KILLED_WRITER = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA wal_autocheckpoint=0")
conn.execute("INSERT INTO workspaces (_id, name, createdAt) VALUES ('x', 'Only in the log', 0)")
os._exit(0)  # dies without closing: its commit stays in the write-ahead log
"""


@pytest.mark.sqlite
def test_the_old_write_ahead_log_never_reaches_the_restored_file(tmp_path, populated):
    path, env = populated
    backup = tmp_path / "backup.sqlite3"
    answer(env, "backup", "--to", str(backup))
    subprocess.run([sys.executable, "-c", KILLED_WRITER, str(path)], check=True, timeout=60)
    wal = path.with_name(path.name + "-wal")
    # Read-only: a connection that may write would copy the log into the file as it closes.
    assert workspaces(f"file:{path}?mode=ro") == ["Before", "Only in the log"]
    assert wal.stat().st_size > 0

    answer(env, "restore", "--from", str(backup))
    assert not wal.exists() or wal.stat().st_size == 0
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    assert workspaces(path) == ["Before"]
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".")) == []


@pytest.mark.sqlite
def test_a_damaged_backup_or_another_database_is_not_restored(tmp_path, populated):
    path, env = populated
    backup = tmp_path / "backup.sqlite3"
    answer(env, "backup", "--to", str(backup))
    original = path.read_bytes()

    damaged = tmp_path / "damaged.sqlite3"
    data = bytearray(backup.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for offset in range(2 * page, len(data), page):  # every page past the schema's
        data[offset : offset + 64] = b"\xff" * 64
    damaged.write_bytes(bytes(data))
    other = tmp_path / "other.sqlite3"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.close()

    for source, reason in (
        (damaged, "cannot be restored"),
        (other, "not a Workspace Data API database"),
        (tmp_path / "missing.sqlite3", "no backup file"),
    ):
        done = run(env, "restore", "--from", str(source))
        assert done.returncode == 1 and reason in done.stderr, (source, done.stderr)
        assert path.read_bytes() == original
    assert workspaces(path) == ["Before"]
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".")) == []


@pytest.mark.sqlite
def test_a_backup_from_before_a_table_was_added_is_restored_and_gains_it(tmp_path, populated):
    """A backup an older version wrote lacks the tables added since (store.sqlite.schema's
    ADDED_TABLES): it is restored, and the table is there once the file opens."""
    path, env = populated
    backup = tmp_path / "backup.sqlite3"
    answer(env, "backup", "--to", str(backup))
    conn = sqlite3.connect(backup)
    conn.execute("DROP TABLE webhook_leases")
    conn.commit()
    conn.close()
    answer(env, "workspaces", "create", "After")
    done = run(env, "restore", "--from", str(backup))
    assert done.returncode == 0, done.stderr
    assert workspaces(path) == ["Before"]
    answer(env, "workspaces", "list")  # opens the file
    conn = sqlite3.connect(path)
    try:
        found = conn.execute("SELECT name FROM sqlite_schema WHERE name = 'webhook_leases'")
        assert found.fetchall() == [("webhook_leases",)]
    finally:
        conn.close()


@pytest.mark.sqlite
def test_the_service_writes_while_a_backup_runs_and_the_copy_is_its_first_snapshot(
    tmp_path, populated, monkeypatch
):
    """Between two steps of the backup (one page each), the API records a call and answers 201:
    the writer never waits for the backup. The copy is the database as the backup started: the
    call is not in it (a backup started over after the write would hold it), and it is whole."""
    from store.sqlite import backup
    from tests.server.test_backup_proof import live_call, request

    path, env = populated
    workspace = answer(env, "workspaces", "create", "Writes")["workspace"]["id"]
    user = answer(
        env, "users", "create", "--workspace", workspace, "--email", "u@x.example",
        "--first-name", "U", "--last-name", "X",
    )["user"]["id"]  # fmt: skip
    key = answer(env, "keys", "create", "--workspace", workspace, "--name", "k", "--scope",
                 "read,ingest")["apiKey"]  # fmt: skip
    server = Server(tmp_path, WSAPI_SQLITE_PATH=str(path), WSAPI_SECRET="", MONGODB_URI="")
    written: list[str] = []
    steps: list[int] = []

    def progress(copied: int, total: int) -> None:
        steps.append(copied)
        if len(steps) == 1:  # the backup is under way: its read transaction is open
            status, body = request(server.origin, key, "POST", "/v1/calls", live_call(user, 0))
            assert status == 201, body
            written.append(body["call"]["id"])

    monkeypatch.setattr(backup, "STEP_PAGES", 1)
    copy = tmp_path / "copy.sqlite3"
    try:
        server.wait_until_up()
        backup.copy_online(path, copy, progress=progress)
    finally:
        server.stop()
    assert len(steps) > 2 and written  # several steps, the write between the first two
    assert backup.problems(copy) == []
    conn = sqlite3.connect(copy)
    try:
        assert conn.execute('SELECT count(*) FROM calls WHERE "_id" = ?', written).fetchone() == (
            0,
        )
        assert conn.execute("SELECT count(*) FROM workspaces").fetchone() == (2,)
    finally:
        conn.close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute('SELECT count(*) FROM calls WHERE "_id" = ?', written).fetchone() == (
            1,
        )
    finally:
        conn.close()
