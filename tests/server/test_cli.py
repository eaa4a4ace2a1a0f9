"""The workspace-api command: admin commands, the embedded-store refusal, and the demo."""

import datetime as dt
import json
import re
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from cli import build_parser, main
from demo.seeding import seed
from server.admin import run_admin
from store.database import open_store
from tests.helpers import running_demo


async def test_admin_commands_manage_workspaces_users_and_keys(
    config, services, capsys, anon, clock
):
    store, _auth = services

    async def admin(*argv):
        code = await run_admin(config, build_parser().parse_args([*argv, "--json"]), services)
        out = capsys.readouterr()
        return code, (json.loads(out.out) if out.out.strip() else None), out.err

    code, out, _ = await admin("workspaces", "create", "Initech")
    assert code == 0
    wid = out["workspace"]["id"]
    code, out, _ = await admin(
        "users",
        "create",
        "--workspace",
        wid,
        "--email",
        "p@i.example",
        "--first-name",
        "Peter",
        "--last-name",
        "Gibbons",
    )
    user_id = out["user"]["id"]
    code, out, err = await admin("keys", "create", "--workspace", wid, "--name", "crm")
    assert code == 0 and "shown once" in err
    key, key_id = out["apiKey"], out["key"]["id"]
    users = await anon.get("/v1/users", headers={"Authorization": f"Bearer {key}"})
    assert [u["id"] for u in users.json()["users"]] == [user_id]

    code, out, _ = await admin("keys", "list", "--workspace", wid)
    assert [k["id"] for k in out["keys"]] == [key_id]
    assert key not in json.dumps(out)  # the plain key is never shown again
    [stored] = [k for k in await store.documents("api_keys") if k["_id"] == key_id]
    assert key not in json.dumps(stored, default=str)

    code, out, _ = await admin("users", "delete", user_id)
    assert code == 0
    users = await anon.get("/v1/users", headers={"Authorization": f"Bearer {key}"})
    assert users.json()["users"] == []

    code, out, _ = await admin("keys", "revoke", key_id)
    assert code == 0 and out["key"]["revokedAt"]
    clock.advance(config.key_cache_seconds)
    assert (await anon.get("/v1/users", headers={"Authorization": f"Bearer {key}"})).code == 401

    code, _, err = await admin("keys", "create", "--workspace", "nope", "--name", "x")
    assert code == 1 and "no workspace" in err
    code, _, err = await admin("users", "delete", user_id)
    assert code == 1


async def test_keys_have_scopes_expiry_and_last_use(config, services, capsys, anon, clock):
    store, auth = services

    async def admin(*argv):
        code = await run_admin(config, build_parser().parse_args([*argv, "--json"]), services)
        out = capsys.readouterr()
        return code, (json.loads(out.out) if out.out.strip() else None), out.err

    wid = (await store.workspaces.create("Scoped"))["id"]
    code, out, _ = await admin("keys", "create", "--workspace", wid, "--name", "full")
    assert code == 0 and out["key"]["scopes"] == ["read", "write"]
    assert out["key"]["expiresAt"] is None
    full = out["apiKey"]
    code, out, _ = await admin(
        "keys",
        "create",
        "--workspace",
        wid,
        "--name",
        "dialer",
        "--scope",
        "ingest",
        "--expires-in",
        "30",
    )
    assert code == 0 and out["key"]["scopes"] == ["ingest"]
    created = dt.datetime.fromisoformat(out["key"]["createdAt"].removesuffix("Z"))
    expires = dt.datetime.fromisoformat(out["key"]["expiresAt"].removesuffix("Z"))
    assert abs(expires - created - dt.timedelta(days=30)) < dt.timedelta(seconds=5)
    dialer = out["apiKey"]
    # A key with ingest and no read may not read.
    response = await anon.get("/v1/users", headers={"Authorization": f"Bearer {dialer}"})
    assert response.code == 403 and response.json()["code"] == "insufficient_scope"

    clock.advance(61 - clock.time() % 60)
    minute = dt.datetime(1970, 1, 1) + dt.timedelta(minutes=int(clock.time() // 60))
    assert (await anon.get("/v1/users", headers={"Authorization": f"Bearer {full}"})).code == 200
    await auth.usage.flush()
    code, out, _ = await admin("keys", "list", "--workspace", wid)
    assert [set(k) for k in out["keys"]] == [
        {
            "id",
            "workspaceId",
            "name",
            "scopes",
            "createdAt",
            "expiresAt",
            "revokedAt",
            "lastUsedAt",
        }
    ] * 2
    listed = {k["name"]: k for k in out["keys"]}
    assert listed["full"]["lastUsedAt"] == minute.isoformat(timespec="milliseconds") + "Z"
    assert listed["full"]["lastUsedAt"].endswith(":00.000Z")  # to the minute
    assert listed["dialer"]["scopes"] == ["ingest"] and listed["dialer"]["expiresAt"]


@pytest.mark.parametrize(
    "option",
    [
        ["--scope", ""],
        ["--scope", ","],
        ["--scope", "read,"],
        ["--scope", "read,owner"],
        ["--scope", "READ"],
        ["--expires-in", "0"],
        ["--expires-in", "-3"],
        ["--expires-in", "1.5"],
        ["--expires-in", "soon"],
    ],
)
def test_a_bad_scope_or_expiry_is_a_usage_error(option, capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["keys", "create", "--workspace", "w", "--name", "n", *option])
    assert exit_.value.code == 2
    assert f"argument {option[0]}" in capsys.readouterr().err


def test_a_write_or_ingest_scope_without_read_is_allowed():
    for text, scopes in [
        ("write", {"write"}),
        ("ingest", {"ingest"}),
        ("ingest,write", {"ingest", "write"}),
        ("read,write,ingest", {"read", "write", "ingest"}),
        ("read,write,admin", {"read", "write", "admin"}),
        ("admin", {"admin"}),
        (" read , write ", {"read", "write"}),
    ]:
        args = build_parser().parse_args(
            ["keys", "create", "--workspace", "w", "--name", "n", "--scope", text]
        )
        assert args.scope == scopes


def test_admin_commands_refuse_a_throwaway_store(capsys, monkeypatch):
    monkeypatch.setenv("MONGODB_URI", "memory")
    assert main(["keys", "list", "--workspace", "x"]) == 2
    assert "throwaway" in capsys.readouterr().err


def test_serve_refuses_missing_secret_with_mongodb(capsys, monkeypatch):
    monkeypatch.setenv("MONGODB_URI", "mongodb://127.0.0.1:1")
    monkeypatch.delenv("WSAPI_SECRET", raising=False)
    assert main(["keys", "list", "--workspace", "x"]) == 2
    assert "WSAPI_SECRET" in capsys.readouterr().err


async def test_demo_seed_is_deterministic():
    snapshots = []
    for _ in range(2):
        store = open_store("memory", "demo")
        await store.ensure_indexes()
        from server.auth import KeyService

        await seed(store, KeyService("s" * 40, store.keys), seed=7)
        users = [(u["_id"], u["email"]) for u in await store.documents("users")]
        lists = [(x["_id"], x["name"], x["prospectsCount"]) for x in await store.documents("lists")]
        count = len(await store.documents("prospects"))
        snapshots.append((users, lists, count))
    assert snapshots[0] == snapshots[1]
    assert snapshots[0][2] > 0


@pytest.fixture
def demo_process(tmp_path):
    with running_demo(tmp_path) as demo:
        yield demo


def http(method, url, key, body=None):
    request = urllib.request.Request(
        url,
        method=method,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        data=json.dumps(body).encode() if body is not None else None,
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read())


def test_demo_serves_seeded_workspaces_and_writes_the_keys_file(demo_process):
    _process, keys, log = demo_process
    assert keys["baseUrl"].startswith("http://127.0.0.1:") and keys["baseUrl"].endswith("/v1")
    assert len(keys["workspaces"]) >= 2
    assert all(
        set(w) == {"id", "name", "apiKey", "readOnlyApiKey", "ingestApiKey", "adminApiKey"}
        for w in keys["workspaces"]
    )
    base, key = keys["baseUrl"], keys["workspaces"][0]["apiKey"]
    read_only = keys["workspaces"][0]["readOnlyApiKey"]
    ingest = keys["workspaces"][0]["ingestApiKey"]
    assert len({key, read_only, ingest}) == 3
    for each, scopes in ((key, ["read", "write"]), (read_only, ["read"]), (ingest, ["ingest"])):
        status, described = http("GET", base + "/api-key", each)
        assert status == 200 and described["apiKey"]["scopes"] == scopes
    with pytest.raises(urllib.error.HTTPError) as refused:  # a dialer's key records, no more
        http("GET", base + "/calls", ingest)
    assert refused.value.code == 403
    refused.value.close()
    assert http("GET", base + "/calls", read_only)[0] == 200
    with pytest.raises(urllib.error.HTTPError) as refused:
        http("POST", base + "/lists", read_only, {"name": "x", "ownerUserId": "y"})
    assert refused.value.code == 403
    assert 'error="insufficient_scope"' in refused.value.headers["WWW-Authenticate"]
    refused.value.close()
    status, users = http("GET", base + "/users", key)
    assert status == 200 and len(users["users"]) >= 2
    status, lists = http("GET", base + "/lists", key)
    assert status == 200 and lists["total"] >= 1 and lists["lists"][0]["prospectsCount"] > 0
    status, created = http(
        "POST", base + "/lists", key, {"name": "From test", "ownerUserId": users["users"][0]["id"]}
    )
    assert status == 201
    status, result = http(
        "POST",
        f"{base}/lists/{created['list']['id']}/contacts",
        key,
        {"contacts": [{"email": "demo@example.com"}]},
    )
    assert status == 200 and result["totalProspects"] == 1
    # the other workspace sees none of this one's lists
    other = keys["workspaces"][1]["apiKey"]
    _, theirs = http("GET", base + "/lists", other)
    assert created["list"]["id"] not in {x["id"] for x in theirs["lists"]}
    output = log.read_text()
    assert keys["workspaces"][0]["apiKey"] in output and keys["baseUrl"] in output  # banner
    assert f"Read-only: {read_only}" in output and f"Ingest   : {ingest}" in output
    assert "/reference" in output


def test_demo_calls_have_playable_recordings_and_one_missing(demo_process):
    from demo.data import MISSING_RECORDING_REF

    _, keys, log = demo_process
    base, key = keys["baseUrl"], keys["workspaces"][0]["apiKey"]
    _, page = http("GET", base + "/calls?pageSize=100", key)
    recorded = [c for c in page["calls"] if c["hasRecording"]]
    assert len(recorded) >= 2
    statuses = {}
    for call in recorded[:5]:
        request = urllib.request.Request(
            f"{base}/calls/{call['id']}/recording",
            headers={"Authorization": f"Bearer {key}", "Range": "bytes=0-3"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                statuses[call["id"]] = response.status
                assert response.headers["Content-Type"] == "audio/mpeg"
                head = response.read()
                assert len(head) == 4 and (head[:3] == b"ID3" or head[0] == 0xFF)
        except urllib.error.HTTPError as exc:
            statuses[call["id"]] = exc.code
    # the newest recorded call is the one whose audio is missing upstream (see demo/seeding.py)
    assert list(statuses.values()).count(404) == 1, statuses
    assert list(statuses.values()).count(206) == len(statuses) - 1
    assert MISSING_RECORDING_REF not in log.read_text()


def test_admin_commands_typed_into_the_demo_revoke_a_key(tmp_path):
    with running_demo(tmp_path, "--calls", "50", "--timeline", "0", stdin=subprocess.PIPE) as (
        process,
        keys,
        log,
    ):
        keys_file = tmp_path / "keys.json"
        deadline = time.monotonic() + 60
        assert oct(keys_file.stat().st_mode & 0o777) == "0o600"
        base, workspace = keys["baseUrl"], keys["workspaces"][0]
        assert http("GET", base + "/users", workspace["apiKey"])[0] == 200

        process.stdin.write(f"keys list --workspace {workspace['id']} --json\n")
        process.stdin.write("lists drop everything\n")  # not an admin command: refused
        process.stdin.flush()
        while '"keys": [' not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        listed = log.read_text()
        listing = listed.split('"keys": [', 1)[1]
        # The workspace's full demo key (beside it: its read-only one).
        key_id = re.search(
            r'"id": "([^"]+)",\s*"workspaceId": "[^"]+",\s*"name": "demo key"', listing
        )[1]
        assert workspace["apiKey"] not in listed.split('"keys": [', 1)[1]

        process.stdin.write(f"keys revoke {key_id}\n")
        process.stdin.flush()
        # Refused once the process's key cache lets go of it (key_cache_seconds: how long is
        # tests/handlers/test_auth.py's business, on the test clock).
        deadline = time.monotonic() + 60
        while True:
            try:
                http("GET", base + "/users", workspace["apiKey"])
            except urllib.error.HTTPError as exc:
                assert exc.code == 401
                break
            assert time.monotonic() < deadline, "the revoked key was never refused"
            time.sleep(0.2)
        assert "only admin commands" in log.read_text()
        # the other workspace's key is untouched
        assert http("GET", base + "/users", keys["workspaces"][1]["apiKey"])[0] == 200
