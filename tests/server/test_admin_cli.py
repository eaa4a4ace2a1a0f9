"""The admin commands that list and rename, through the real command line on this tier's store
(the SQLite file, or MongoDB at MONGODB_URI): `workspaces list` and `rename`, `users list`,
`keys list` with scopes, expiry and last use; each as JSON with `--json` and as a table
otherwise."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys

import pytest

from server.admin import admin_parser
from server.config import load_config
from server.services import open_services
from tests.helpers import TEST_SECRET, test_environ

pytestmark = pytest.mark.long


@pytest.fixture
def env(tmp_path) -> dict:
    """The environment of an operator's command on this tier's store: the SQLite file (the
    embedded tier) or this test's own database at MONGODB_URI."""
    base = test_environ()
    return {
        **os.environ,
        "MONGODB_URI": "" if base["MONGODB_URI"] == "memory" else base["MONGODB_URI"],
        "WSAPI_SQLITE_PATH": str(tmp_path / "store.sqlite3"),
        "WSAPI_DATABASE": base["WSAPI_DATABASE"],
        "WSAPI_SECRET": TEST_SECRET,
    }


def command(env: dict, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def as_json(env: dict, *argv: str) -> dict:
    done = command(env, *argv, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def as_table(env: dict, *argv: str) -> dict[str, list[dict[str, str]]]:
    """The tables a command prints without --json, by their title: one dict per row, read by
    the columns of the header line (cells are left-aligned under their column's name)."""
    done = command(env, *argv)
    assert done.returncode == 0, done.stderr
    with pytest.raises(json.JSONDecodeError):
        json.loads(done.stdout)  # a table for people, not JSON
    tables: dict[str, list[dict[str, str]]] = {}
    lines = done.stdout.splitlines()
    index = 0
    while index < len(lines):
        title = lines[index]
        if not title.endswith(":"):
            index += 1
            continue
        header = lines[index + 1]
        names = header.split()
        starts, at = [], 0
        for name in names:
            starts.append(header.index(name, at))
            at = starts[-1] + len(name)
        rows = []
        index += 2
        while index < len(lines) and not lines[index].endswith(":"):
            line = lines[index]
            ends = [*starts[1:], len(line)]
            rows.append({n: line[a:b].strip() for n, a, b in zip(names, starts, ends, strict=True)})
            index += 1
        tables[title[:-1]] = rows
    return tables


def test_workspaces_list_and_rename(env):
    first = as_json(env, "workspaces", "create", "Acme")["workspace"]
    second = as_json(env, "workspaces", "create", "Beta Co")["workspace"]
    listed = as_json(env, "workspaces", "list")["workspaces"]
    assert [w["id"] for w in listed] == [first["id"], second["id"]]  # oldest first

    renamed = as_json(env, "workspaces", "rename", first["id"], "Acme Sales")["workspace"]
    assert renamed == {**first, "name": "Acme Sales"}
    rows = as_table(env, "workspaces", "list")["workspaces"]
    assert [(r["id"], r["name"]) for r in rows] == [
        (first["id"], "Acme Sales"),
        (second["id"], "Beta Co"),
    ]
    assert rows[0]["createdAt"] == first["createdAt"]

    done = command(env, "workspaces", "rename", "no-such-workspace", "X")
    assert done.returncode == 1 and "no workspace no-such-workspace" in done.stderr
    assert [w["name"] for w in as_json(env, "workspaces", "list")["workspaces"]] == [
        "Acme Sales",
        "Beta Co",
    ]


def test_users_list_with_and_without_the_deleted(env):
    workspace = as_json(env, "workspaces", "create", "Acme")["workspace"]["id"]
    other = as_json(env, "workspaces", "create", "Other")["workspace"]["id"]

    def user(workspace_id: str, email: str) -> dict:
        argv = ["--workspace", workspace_id, "--email", email, "--first-name", "A"]
        return as_json(env, "users", "create", *argv, "--last-name", "B")["user"]

    ann, bob, _ = (
        user(workspace, "ann@x.example"),
        user(workspace, "bob@x.example"),
        user(other, "eve@y.example"),
    )
    assert as_json(env, "users", "delete", bob["id"]) == {"deleted": bob["id"]}

    active = as_json(env, "users", "list", "--workspace", workspace)["users"]
    assert active == [{**ann, "deletedAt": None}]
    every = as_json(env, "users", "list", "--workspace", workspace, "--include-deleted")["users"]
    assert [u["id"] for u in every] == [ann["id"], bob["id"]]
    assert every[1]["deletedAt"] is not None and every[1]["email"] == "bob@x.example"

    rows = as_table(env, "users", "list", "--workspace", workspace, "--include-deleted")["users"]
    assert [(r["email"], r["deletedAt"]) for r in rows] == [
        ("ann@x.example", "-"),
        ("bob@x.example", every[1]["deletedAt"]),
    ]
    rows = as_table(env, "users", "list", "--workspace", workspace)["users"]
    assert [r["email"] for r in rows] == ["ann@x.example"]

    done = command(env, "users", "list", "--workspace", "no-such-workspace")
    assert done.returncode == 1 and "no workspace no-such-workspace" in done.stderr


async def test_keys_list_shows_scopes_expiry_and_last_use(env):
    workspace = as_json(env, "workspaces", "create", "Acme")["workspace"]["id"]
    created = as_json(
        env, "keys", "create", "--workspace", workspace, "--name", "dash", "--scope", "read",
        "--expires-in", "30",
    )  # fmt: skip
    dialer = as_json(
        env, "keys", "create", "--workspace", workspace, "--name", "dialer", "--scope",
        "read,ingest",
    )  # fmt: skip
    used_at = dt.datetime(2026, 3, 4, 5, 6, 0)
    store, auth = await open_services(load_config(environ=env))
    try:
        await store.keys.touch(workspace, dialer["key"]["id"], used_at)
    finally:
        await auth.usage.stop()
        await store.close()

    keys = as_json(env, "keys", "list", "--workspace", workspace)["keys"]
    assert [(k["name"], k["scopes"], k["lastUsedAt"]) for k in keys] == [
        ("dash", ["read"], None),
        ("dialer", ["read", "ingest"], "2026-03-04T05:06:00.000Z"),
    ]
    assert keys[0]["expiresAt"] == created["key"]["expiresAt"] and keys[1]["expiresAt"] is None
    assert created["apiKey"] not in json.dumps(keys)

    rows = as_table(env, "keys", "list", "--workspace", workspace)["keys"]
    assert [(r["name"], r["scopes"], r["expiresAt"], r["lastUsedAt"]) for r in rows] == [
        ("dash", "read", created["key"]["expiresAt"], "-"),
        ("dialer", "read,ingest", "-", "2026-03-04T05:06:00.000Z"),
    ]
    # The creates print their JSON document without --json too: scripts read the key from it.
    done = command(env, "keys", "create", "--workspace", workspace, "--name", "crm")
    assert done.returncode == 0 and "shown once" in done.stderr
    printed = json.loads(done.stdout)
    assert printed["key"]["name"] == "crm" and printed["apiKey"].startswith("ey")
    done = command(env, "workspaces", "create", "Gamma")
    assert done.returncode == 0 and json.loads(done.stdout)["workspace"]["name"] == "Gamma"
    done = command(
        env,
        "users",
        "create",
        "--workspace",
        workspace,
        "--email",
        "c@example.com",
        "--first-name",
        "C",
        "--last-name",
        "D",
    )
    assert done.returncode == 0 and json.loads(done.stdout)["user"]["email"] == "c@example.com"


async def test_workspaces_set_recording_retention(env):
    from store.retention import retention_days

    workspace = as_json(env, "workspaces", "create", "Acme")["workspace"]
    assert workspace["settings"] == {}
    wid = workspace["id"]

    def retention(*value: str) -> dict:
        return as_json(env, "workspaces", "set", wid, "--recording-retention-days", *value)

    assert retention("10")["workspace"] == {**workspace, "settings": {"recordingRetentionDays": 10}}
    assert as_json(env, "workspaces", "list")["workspaces"][0]["settings"] == {
        "recordingRetentionDays": 10
    }
    # What the retention sweep reads from the store: the workspace's own value, not the default.
    config = load_config(environ=env)
    store, auth = await open_services(config)
    try:
        assert retention_days(await store.workspaces.get(wid), 30) == 10
    finally:
        await auth.usage.stop()
        await store.close()

    assert retention("0")["workspace"]["settings"] == {"recordingRetentionDays": 0}
    rows = as_table(env, "workspaces", "set", wid, "--recording-retention-days", "45")
    assert rows["workspace"][0]["settings"] == '{"recordingRetentionDays":45}'
    assert retention("default")["workspace"]["settings"] == {}
    assert retention("default")["workspace"]["settings"] == {}  # removing nothing is fine
    assert as_json(env, "workspaces", "list")["workspaces"][0] == workspace

    done = command(env, "workspaces", "set", wid, "--recording-retention-days", "-1")
    assert done.returncode == 2 and "--recording-retention-days" in done.stderr
    for argv in (["-1"], ["36501"], ["ten"], ["1.5"], [""], []):  # the same parser, in-process
        with pytest.raises(SystemExit) as refused:
            admin_parser().parse_args(["workspaces", "set", wid, *_option(argv)])
        assert refused.value.code == 2, argv
    done = command(env, "workspaces", "set", "no-such-workspace", "--recording-retention-days", "5")
    assert done.returncode == 1 and "no workspace no-such-workspace" in done.stderr
    assert as_json(env, "workspaces", "list")["workspaces"][0]["settings"] == {}


def _option(argv: list[str]) -> list[str]:
    return ["--recording-retention-days", *argv] if argv else []
