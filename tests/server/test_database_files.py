"""The SQLite file when it cannot be used: at start-up a file that cannot be opened, is not a
database, is truncated, is empty, or cannot be written ends `serve` (and the admin commands)
with one line saying what, which file and what to do, and exit code 2; at run time damaged
pages are 503 for the requests that touch them, readiness fails, and the log says so once
without a traceback. Real files, real processes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import subprocess
import sys

import pytest

from server.config import load_config
from server.services import open_services
from tests.helpers import Client, make_workspace, test_environ

pytestmark = [pytest.mark.sqlite, pytest.mark.long]

SECRET = test_environ()["WSAPI_SECRET"]


def file_environ(path, **extra) -> dict:
    return {
        **os.environ,
        "MONGODB_URI": "",
        "WSAPI_SQLITE_PATH": str(path),
        "WSAPI_SECRET": SECRET,
        **extra,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=file_environ(path),
    )


def refused(path, *fragments: str) -> None:
    """`serve` (one process and several) and an admin command refuse the file with exit code 2
    and one line on stderr naming it and what to do; nothing is created beside it."""
    folder = path.parent if path.parent.is_dir() else path.parent.parent
    before = sorted(os.listdir(folder))
    for argv in (
        ("serve", "--port", str(free_port())),
        ("serve", "--port", str(free_port()), "--processes", "2"),
        ("workspaces", "create", "Refused"),
    ):
        done = run(path, *argv)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, (argv, done.stderr)
        assert len(lines) == 1 and "Traceback" not in done.stderr, (argv, done.stderr)
        assert lines[0].startswith("workspace-api: the database file ") and str(path) in lines[0]
        for fragment in fragments:
            assert fragment in lines[0], (fragment, lines[0])
    assert sorted(os.listdir(folder)) == before


def written_file(path, lists: int = 0) -> None:
    """A real database file at `path` with a workspace and `lists` lists, closed cleanly."""
    environ = test_environ(MONGODB_URI="", WSAPI_SQLITE_PATH=str(path))

    async def write() -> None:
        store, auth = await open_services(load_config(environ=environ))
        try:
            workspace = await make_workspace(store, auth, "Files")
            owner = workspace.users[0]["id"]
            for i in range(lists):
                await store.lists.create(workspace.id, f"list {i} " + "x" * 400, owner)
        finally:
            await store.close()

    asyncio.run(write())


def test_an_empty_file_is_refused(tmp_path):
    path = tmp_path / "empty.sqlite3"
    path.touch()
    refused(path, "is empty (0 bytes)", "delete it", "restore it from a backup")
    assert path.stat().st_size == 0  # left as it was


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    path = tmp_path / "notes.sqlite3"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    refused(path, "is not a SQLite database", "restore it from a backup")


def test_a_truncated_file_is_refused(tmp_path):
    path = tmp_path / "cut.sqlite3"
    written_file(path, lists=200)
    wal = tmp_path / "cut.sqlite3-wal"
    assert not wal.exists() or not wal.stat().st_size  # all of it is in the file
    size = path.stat().st_size
    os.truncate(path, size // 2)
    refused(path, "is truncated", f"{size // 2} bytes", "restore it from a backup")


def test_a_directory_is_refused(tmp_path):
    path = tmp_path / "a-directory"
    path.mkdir()
    refused(path, "is not a file")


def test_a_file_under_a_file_cannot_be_opened(tmp_path):
    (tmp_path / "plain").write_text("x")
    path = tmp_path / "plain" / "db.sqlite3"
    refused(path, "cannot be opened (Not a directory)", "check the path")


def test_a_new_file_is_created_whole_and_owner_only(tmp_path):
    path = tmp_path / "new" / "db.sqlite3"
    done = run(path, "workspaces", "create", "New")
    assert done.returncode == 0, done.stderr
    assert path.read_bytes().startswith(b"SQLite format 3\x00")
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == []


def test_a_new_file_is_in_wal_mode_before_any_connection_opens_it(tmp_path):
    """The engine's threads open their connections at once: none of them has to switch the
    journal mode (two connections doing that at the same moment can fail with SQLITE_BUSY)."""
    from store.sqlite.opening import check

    path = tmp_path / "db.sqlite3"
    check(path, lambda conn: conn.execute("CREATE TABLE t (a)"))
    assert path.read_bytes()[18:20] == b"\x02\x02"  # write and read versions 2: WAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.sqlite3"]


@contextlib.contextmanager
def mounted_tmpfs(directory, size: str):
    directory.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(
            "cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN, as in CI): "
            + (done.stderr.strip() or f"mount exited {done.returncode}")
        )
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], capture_output=True)


def test_a_file_that_cannot_be_written_is_refused(tmp_path):
    """A read-only file system (root ignores file modes, so a read-only mount it is)."""
    with mounted_tmpfs(tmp_path / "ro", "8m") as directory:
        path = directory / "db.sqlite3"
        written_file(path)
        subprocess.run(["mount", "-o", "remount,ro", str(directory)], check=True)
        done = run(path, "serve", "--port", str(free_port()))
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert str(path) in lines[0] and "cannot be written" in lines[0]
        assert "read-only" in lines[0]


# --- damaged pages at run time -------------------------------------------------------------


@pytest.fixture
def damaged(io_loop, tmp_path):
    """A database file whose lists span many pages, a quarter of them overwritten."""
    path = tmp_path / "damaged.sqlite3"
    environ = test_environ(MONGODB_URI="", WSAPI_SQLITE_PATH=str(path))

    async def seed():
        store, auth = await open_services(load_config(environ=environ))
        try:
            workspace = await make_workspace(store, auth, "Damaged")
            owner = workspace.users[0]["id"]
            for i in range(600):
                await store.lists.create(workspace.id, f"list {i:03d} " + "x" * 400, owner)
            return workspace
        finally:
            await store.close()

    workspace = io_loop.run_sync(seed)
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    pages = len(data) // page
    for number in range(pages // 2, pages // 2 + pages // 4):  # a run of pages in the middle
        data[number * page : (number + 1) * page] = b"\xff" * page
    path.write_bytes(bytes(data))
    return environ, workspace


@pytest.fixture
def config(damaged):
    return load_config(environ=damaged[0])


async def test_damaged_pages_are_503_readiness_fails_and_the_log_says_so_once(
    damaged, origin, caplog
):
    _, workspace = damaged
    client, anon = Client(origin, workspace.key), Client(origin, None)
    caplog.set_level(logging.WARNING, logger="workspace_api")
    assert (await anon.get("/readyz")).code == 200  # nothing has met the damage yet
    assert (await client.get("/v1/users")).code == 200  # pages that are whole still serve
    statuses = []
    for page in range(1, 8):
        response = await client.get(f"/v1/lists?pageSize=100&page={page}")
        statuses.append(response.code)
        if response.code == 503:
            assert response.headers["Retry-After"] == "5"
            assert response.json()["code"] == "service_unavailable"
    assert 503 in statuses, statuses
    ready = await anon.get("/readyz")
    assert ready.code == 503 and ready.json()["detail"] == "the database is damaged"
    assert (await client.get("/v1/users")).code == 200  # the rest still serves
    # The service's own log (asyncio may report a task another test left behind meanwhile).
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and r.name == "workspace_api"]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    message = errors[0].getMessage()
    assert "is damaged" in message and "SQLITE_CORRUPT" in message and "backup" in message
    assert not any(r.exc_info for r in caplog.records)  # no traceback, for any request
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings and all(
        "database unavailable: the database file is damaged" in w for w in warnings
    )
