"""The embedded SQLite file end to end: the admin CLI, `serve` (one process or several) and the
demo all use one file; data, keys and revocations survive restarts. Real processes."""

import json
import os
import re
import stat
import subprocess
import sys
import time

import pytest

from tests.helpers import running_demo
from tests.server.test_serve import Server, get

pytestmark = pytest.mark.sqlite


def file_env(path) -> dict:
    """The environment of a process on the SQLite file `path`: no MongoDB URI, no secret set
    (the key-signing secret is the one kept in the file)."""
    return {**os.environ, "MONGODB_URI": "", "WSAPI_SECRET": "", "WSAPI_SQLITE_PATH": str(path)}


def admin(path, *argv) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", *argv, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=file_env(path),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def serve_on_file(tmp_path):
    started = []

    def run(path, *args) -> Server:
        # No secret configured: the one kept in the file signs and checks the keys.
        server = Server(
            tmp_path, *args, WSAPI_SQLITE_PATH=str(path), WSAPI_SECRET="", MONGODB_URI=""
        )
        started.append(server)
        server.wait_until_up()
        return server

    yield run
    for server in started:
        server.stop()


def test_admin_cli_and_serve_share_the_file_and_survive_restarts(tmp_path, serve_on_file):
    path = tmp_path / "data" / "api.sqlite3"
    workspace = admin(path, "workspaces", "create", "Acme")["workspace"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600  # created owner-only
    user = admin(
        path,
        "users",
        "create",
        "--workspace",
        workspace["id"],
        "--email",
        "ann@acme.example",
        "--first-name",
        "Ann",
        "--last-name",
        "Lee",
    )["user"]
    kept = admin(path, "keys", "create", "--workspace", workspace["id"], "--name", "crm")
    revoked = admin(path, "keys", "create", "--workspace", workspace["id"], "--name", "old")
    admin(path, "keys", "revoke", revoked["key"]["id"])

    server = serve_on_file(path)
    code, _, body = get(f"{server.origin}/v1/users", kept["apiKey"])
    assert code == 200 and [u["id"] for u in body["users"]] == [user["id"]]
    assert get(f"{server.origin}/v1/users", revoked["apiKey"])[0] == 401
    code, _, created = _post(
        f"{server.origin}/v1/lists", kept["apiKey"], {"name": "Kept", "ownerUserId": user["id"]}
    )
    assert code == 201
    server.stop()

    again = serve_on_file(path)  # a restart: same file, nothing configured but its path
    code, _, body = get(f"{again.origin}/v1/lists", kept["apiKey"])
    assert code == 200 and [x["id"] for x in body["lists"]] == [created["list"]["id"]]
    assert get(f"{again.origin}/v1/users", revoked["apiKey"])[0] == 401


def test_processes_share_one_file_and_one_rate_limit(tmp_path, serve_on_file):
    path = tmp_path / "api.sqlite3"
    workspace = admin(path, "workspaces", "create", "Acme")["workspace"]
    key = admin(path, "keys", "create", "--workspace", workspace["id"], "--name", "k")["apiKey"]
    server = Server(
        tmp_path,
        "--processes",
        "2",
        WSAPI_SQLITE_PATH=str(path),
        WSAPI_SECRET="",
        MONGODB_URI="",
        WSAPI_RATE_LIMIT_PER_MINUTE="40",
    )
    try:
        server.wait_until_up()
        deadline = time.monotonic() + 10
        while len(server.workers()) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        deadline = time.monotonic() + 150  # two 60 s windows and more
        while True:  # start at the beginning of a window, with time to spare
            assert time.monotonic() < deadline, server.log.read_text()
            code, headers, body = get(f"{server.origin}/v1/users", key)
            assert code == 200, (body, server.log.read_text())
            header = {name.lower(): value for name, value in headers.items()}["ratelimit"]
            left, reset = re.match(r'"workspace";r=(\d+);t=(\d+)', header).groups()
            if int(reset) >= 5 and int(left) == 39:
                break
            time.sleep(int(reset) + 0.2)  # into the next window
        answers = [code] + [get(f"{server.origin}/v1/users", key)[0] for _ in range(59)]
    finally:
        server.stop()
    assert answers.count(200) == 40 and answers.count(429) == 20  # one quota, two processes


def test_demo_keeps_its_data_in_a_file_and_issues_fresh_keys(tmp_path):
    path = tmp_path / "demo.sqlite3"
    args = ("--data", str(path), "--calls", "200", "--prospects", "40", "--timeline", "10")
    with running_demo(tmp_path, *args) as (_, keys, _log):
        first = keys["workspaces"][0]
        total = get(f"{keys['baseUrl']}/calls", first["apiKey"])[2]["total"]
    assert total == 200
    (tmp_path / "keys.json").unlink()
    with running_demo(tmp_path, *args) as (_, again, log):
        workspace = again["workspaces"][0]
        assert workspace["id"] == first["id"] and workspace["apiKey"] != first["apiKey"]
        for key in (workspace["apiKey"], first["apiKey"]):  # the old key still works
            code, _, body = get(f"{again['baseUrl']}/calls", key)
            assert code == 200 and body["total"] == 200  # nothing seeded twice
        assert str(path) in log.read_text()


def _post(url: str, key: str, body: dict):
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())
