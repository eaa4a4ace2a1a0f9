"""A full disk under the SQLite file: `serve` keeps running (the rate-limit counters' memory-mapped
file is allocated for real, so no store into it can fault), writes get 503 with Retry-After and
SQLite's reason in the log, reads and the rate limit keep working, and writes succeed again once
there is room. A real process on a small tmpfs (mounted by the test: root in CI)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time

import pytest

from server.config import load_config
from server.services import open_services
from tests.helpers import Client, make_workspace, test_environ
from tests.server.test_database_files import mounted_tmpfs
from tests.server.test_serve import SECRET, Server

pytestmark = pytest.mark.sqlite

WORKSPACES = 8
LIMIT = 40  # requests per minute per workspace


def fill(directory) -> None:
    """Write a file into `directory` until its file system has no byte left."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for chunk in (1024 * 1024, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * chunk)
    finally:
        os.close(fd)
    assert os.statvfs(directory).f_bavail == 0


async def test_a_full_disk_is_503_on_writes_while_reads_and_the_rate_limit_work(tmp_path):
    with mounted_tmpfs(tmp_path / "disk", "24m") as disk:
        environ = test_environ(
            MONGODB_URI="", WSAPI_SQLITE_PATH=str(disk / "db.sqlite3"), WSAPI_SECRET=SECRET
        )
        store, auth = await open_services(load_config(environ=environ))
        try:
            workspaces = [await make_workspace(store, auth, f"Disk {i}") for i in range(WORKSPACES)]
            owner = workspaces[0].users[0]["id"]
            listing = await store.lists.create(workspaces[0].id, "Before", owner)
        finally:
            await store.close()
        server = Server(tmp_path, WSAPI_RATE_LIMIT_PER_MINUTE=str(LIMIT), **environ)
        try:
            await asyncio.to_thread(server.wait_until_up)
            await asyncio.to_thread(fill, disk)

            # The first request of every workspace after the disk filled up: its window's
            # counter lives on a page of the counters file that nothing touched before.
            for workspace in workspaces:
                response = await Client(server.origin, workspace.key).get("/v1/users")
                assert response.code == 200, response
                assert response.headers["RateLimit"].startswith(f'"workspace";r={LIMIT - 1};')

            writer = Client(server.origin, workspaces[0].key)
            refused = None
            for i in range(LIMIT - 5):
                response = await writer.post("/v1/lists", {"name": f"L{i}", "ownerUserId": owner})
                assert response.code in (201, 503), response
                if response.code == 503:
                    refused = response
                    break
            assert refused is not None, "no write met the full disk"
            assert refused.headers["Retry-After"] == "5"
            assert refused.json()["code"] == "service_unavailable"
            upload = await writer.post(
                f"/v1/lists/{listing['id']}/contacts", {"contacts": [{"email": "f@example.com"}]}
            )
            assert upload.code == 503 and upload.headers["Retry-After"] == "5"

            reader = Client(server.origin, workspaces[1].key)
            codes = [(await reader.get("/v1/lists")).code for _ in range(LIMIT + 5)]
            assert codes.count(200) == LIMIT - 1 and codes[LIMIT - 1 :] == [429] * 6, codes
            assert server.process.poll() is None  # alive: no SIGBUS, no crash

            os.unlink(disk / "filler")
            deadline = time.monotonic() + 20
            while True:  # room again: writes go through (after the 503's Retry-After)
                again = await Client(server.origin, workspaces[2].key).post(
                    "/v1/lists", {"name": "After", "ownerUserId": workspaces[2].users[0]["id"]}
                )
                if again.code == 201:
                    break
                assert again.code == 503 and time.monotonic() < deadline, again
                await asyncio.sleep(0.5)
        finally:
            server.stop()
        log = server.log.read_text()
        assert "database or disk is full (SQLITE_FULL)" in log
        assert "Traceback" not in log
