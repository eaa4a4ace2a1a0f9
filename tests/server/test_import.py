"""`workspace-api import`: NDJSON files with good and bad lines, through the API's rules, on both
tiers (the import's own loop on the test's store), and the command itself on a SQLite file."""

from __future__ import annotations

import gc
import io
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

from server import importer
from server.importer import Summary, import_file

pytestmark = pytest.mark.long

T0 = "2026-01-05T10:00:00Z"


def call(ws, prospect_id: str | None, n: int, **more) -> dict:
    body = {
        "userId": ws.users[n % len(ws.users)]["id"],
        "prospectId": prospect_id,
        "direction": "outbound",
        "disposition": "connected" if n % 3 else "voicemail",
        "fromNumber": "+12125550142",
        "toNumber": "+14155550111",
        "startedAt": f"2026-01-05T10:{n % 60:02d}:00Z",
        "answeredAt": f"2026-01-05T10:{n % 60:02d}:05Z",
        "endedAt": f"2026-01-05T10:{n % 60:02d}:55Z",
    }
    body.update(more)
    return {k: v for k, v in body.items() if v is not None}


async def run(store, kind, workspace_id, lines, listing=None):
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    rejects = io.StringIO()
    summary = Summary(kind, workspace_id, rejects)
    await import_file(store, kind, workspace_id, io.BytesIO(text.encode()), None, summary, listing)
    return summary, [json.loads(line) for line in rejects.getvalue().splitlines()]


async def test_a_file_of_good_and_bad_calls_imports_the_good_ones_whole(store, ws_a, ws_b, api):
    prospect = await store.prospects.create(ws_a.id, {"email": "p@a.example"})
    other = await store.prospects.create(ws_b.id, {"email": "p@b.example"})
    pid = prospect["id"]
    lines = [
        call(ws_a, pid, 1, providerCallSid="CA" + "1" * 32),  # 1
        "",  # 2: blank lines are skipped
        call(ws_a, pid, 2),  # 3
        "{not json",  # 4
        call(ws_a, pid, 3, endedAt="2026-01-05T09:00:00Z"),  # 5: ends before it starts
        call(ws_a, pid, 4, userId=str(uuid.uuid4())),  # 6: unknown user
        call(ws_a, other["id"], 5),  # 7: another workspace's prospect
        call(ws_a, pid, 1, providerCallSid="CA" + "1" * 32),  # 8: the same call again
        call(ws_a, pid, 1, providerCallSid="CA" + "1" * 32, notes="other"),  # 9: conflict
        call(ws_a, None, 6, prospect={"email": "new@a.example", "firstName": "N"}),  # 10
        call(ws_a, None, 7, prospect={"email": "never@a.example"}, listId=str(uuid.uuid4())),
        call(ws_a, pid, 8, direction="sideways"),  # 12
        call(ws_a, pid, 9, recordingSid="RE" + "2" * 32, recordingDurationSeconds=50),  # 13
    ]
    summary, rejects = await run(store, "calls", ws_a.id, lines)
    assert (summary.lines, summary.created, summary.existing, summary.rejected) == (12, 4, 1, 7)
    reasons = {entry["line"]: " ".join(entry["reasons"]) for entry in rejects}
    assert sorted(reasons) == [4, 5, 6, 7, 9, 11, 12]
    assert "not valid JSON" in reasons[4]
    assert "#/endedAt: must not be before answeredAt" in reasons[5]
    assert "#/userId" in reasons[6] and "invalid_reference" in reasons[6]
    assert "#/prospectId" in reasons[7]
    assert "#/providerCallSid" in reasons[9] and "call_exists" in reasons[9]
    assert "#/listId" in reasons[11]
    assert "#/direction" in reasons[12]
    calls = [c for c in await store.documents("calls") if c["workspaceId"] == ws_a.id]
    assert len(calls) == 4
    # No half-imported line: the refused call's contact created no prospect.
    emails = {p.get("emailNorm") for p in await store.documents("prospects")}
    assert "new@a.example" in emails and "never@a.example" not in emails
    # Totals, metrics and timelines as the API keeps them.
    assert (await api.get("/v1/calls")).json()["total"] == 4
    metrics = (await api.get("/v1/reporting/dialer-metrics?from=2026-01-05&to=2026-01-05")).json()
    assert metrics["totals"]["dials"] == 4
    entries = [a for a in await store.documents("activities") if a["type"] == "call"]
    assert sorted(a["callId"] for a in entries) == sorted(c["_id"] for c in calls)
    # The same file again creates nothing, calls without a SID included.
    again, _ = await run(store, "calls", ws_a.id, lines)
    assert (again.created, again.existing, again.rejected) == (0, 5, 7)
    assert len([c for c in await store.documents("calls") if c["workspaceId"] == ws_a.id]) == 4


async def test_batches_larger_than_one_write(store, ws_a, monkeypatch):
    monkeypatch.setitem(__import__("server.importer").importer.BATCH, "calls", 7)
    prospect = await store.prospects.create(ws_a.id, {"email": "p@a.example"})
    lines = [call(ws_a, prospect["id"], n, providerCallSid=f"CA{n:032x}") for n in range(50)]
    lines[23] = call(ws_a, prospect["id"], 23, userId=str(uuid.uuid4()))
    summary, rejects = await run(store, "calls", ws_a.id, lines)
    assert (summary.created, summary.rejected) == (49, 1)
    assert [r["line"] for r in rejects] == [24]


async def test_the_import_keeps_the_writer_s_pace_and_leaves_the_collector_as_it_was(
    store, ws_a, monkeypatch
):
    """Lines are checked in slices, each after the store's pace (store.heavy_writes) lets them,
    and a batch's outcomes are counted after it too; garbage is collected by hand meanwhile, and
    the collector is as it was afterwards."""
    monkeypatch.setitem(importer.BATCH, "calls", 7)
    monkeypatch.setattr(importer, "SLICE", 5)
    monkeypatch.setattr(importer, "GC_BATCHES", 2)
    prospect = await store.prospects.create(ws_a.id, {"email": "p@a.example"})
    lines = [call(ws_a, prospect["id"], n, providerCallSid=f"CA{n:032x}") for n in range(50)]
    text = "\n".join(json.dumps(line) for line in lines).encode()
    paced: list[int] = []
    collecting: list[bool] = []
    summary = Summary("calls", ws_a.id, None)
    async with store.heavy_writes() as pace:

        async def counted() -> None:
            paced.append(summary.lines)
            collecting.append(gc.isenabled())
            await pace()

        await import_file(
            store, "calls", ws_a.id, io.BytesIO(text), None, summary, None, None, counted
        )
    assert summary.created == 50
    # Before lines 1, 6, 11, ..., and before counting each of the 8 batches' outcomes.
    assert set(range(0, 50, 5)) <= set(paced) and len(paced) == 10 + 8
    assert not any(collecting)  # no automatic collection during the import
    assert gc.isenabled() and gc.get_freeze_count() == 0


async def test_activities_and_prospects_import(store, ws_a, api, new_list):
    prospect = await store.prospects.create(ws_a.id, {"email": "p@a.example"})
    note = {
        "prospectId": prospect["id"],
        "type": "note",
        "occurredAt": T0,
        "details": {"text": "hi"},
    }
    lines = [
        note,
        {**note, "type": "call"},
        {**note, "userId": ws_a.deleted_user["id"]},
        {**note, "type": "status_change", "details": {"from": None, "to": "contacted"}},
    ]
    summary, rejects = await run(store, "activities", ws_a.id, lines)
    assert (summary.created, summary.rejected) == (2, 2)
    assert [r["line"] for r in rejects] == [2, 3]
    again, _ = await run(store, "activities", ws_a.id, lines)
    assert (again.created, again.existing) == (0, 2)
    contacts = [
        {"email": "p@a.example", "jobTitle": "CTO"},  # matches the existing prospect
        {"email": "fresh@a.example"},
        {"phoneNumber": "not a phone"},
        {"nickname": "x"},
    ]
    listing = await new_list("Imported")
    summary, rejects = await run(store, "prospects", ws_a.id, contacts, listing)
    assert (summary.created, summary.existing, summary.rejected) == (1, 1, 2)
    assert [r["line"] for r in rejects] == [3, 4]
    assert (await api.get(f"/v1/lists/{listing['id']}")).json()["list"]["prospectsCount"] == 2
    loose, _ = await run(store, "prospects", ws_a.id, [{"email": "loose@a.example"}])
    assert loose.created == 1
    found = (await api.get("/v1/prospects?email=loose@a.example")).json()["prospects"]
    assert found[0]["listIds"] == []


@pytest.mark.sqlite
def test_the_command_on_a_sqlite_file(tmp_path):
    """The command as an operator runs it: summary on stdout, rejects file, exit codes, stdin."""
    env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
    env.update(WSAPI_SQLITE_PATH=str(tmp_path / "data.sqlite3"))

    def cli(*args, stdin=None):
        return command(env, *args, stdin=stdin)

    workspace, user = workspace_with_user(env)
    lines = [
        json.dumps({**call_body(user), "prospect": {"email": "a@x.example"}}),
        json.dumps({**call_body(user), "prospect": {"email": "b@x.example"}, "endedAt": "bad"}),
    ]
    path = tmp_path / "calls.ndjson"
    path.write_text("\n".join(lines) + "\n")
    rejects = tmp_path / "rejects.ndjson"
    done = cli("import", "calls", "--workspace", workspace, "--rejects", str(rejects), str(path))
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["created"], summary["rejected"], summary["lines"]) == (1, 1, 2)
    assert [json.loads(x)["line"] for x in rejects.read_text().splitlines()] == [2]
    assert "Importing" in done.stderr
    piped = cli("import", "calls", "--workspace", workspace, "-", stdin=lines[0] + "\n")
    assert piped.returncode == 0 and json.loads(piped.stdout)["existing"] == 1
    unknown = cli("import", "calls", "--workspace", str(uuid.uuid4()), str(path))
    assert unknown.returncode == 2 and "no workspace" in unknown.stderr
    wrong = cli("import", "calls", "--workspace", workspace, "--list", str(uuid.uuid4()), "-")
    assert wrong.returncode == 2 and "prospects only" in wrong.stderr


def command(env: dict, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """`workspace-api ARGS` with `env`, as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "server.cli", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def answer(env: dict, *args: str) -> dict:
    """The JSON a successful admin command `workspace-api ARGS --json` prints."""
    done = command(env, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def workspace_with_user(env: dict) -> tuple[str, str]:
    """A new workspace and one user of it, made with the admin commands: their ids."""
    workspace = answer(env, "workspaces", "create", "Imports")["workspace"]["id"]
    user = answer(
        env,
        "users",
        "create",
        "--workspace",
        workspace,
        "--email",
        "u@x.example",
        "--first-name",
        "U",
        "--last-name",
        "X",
    )["user"]["id"]
    return workspace, user


def call_body(user: str) -> dict:
    return {
        "userId": user,
        "direction": "inbound",
        "disposition": "no_answer",
        "fromNumber": "+14155550100",
        "toNumber": "+12125550142",
        "startedAt": T0,
        "endedAt": "2026-01-05T10:00:30Z",
    }


IMPORTED_BESIDE_WRITES = 15_000  # three of the import's large units (importer BATCH)


@pytest.mark.sqlite
def test_the_api_keeps_writing_while_an_import_runs_on_the_same_file(tmp_path):
    """`serve` and `workspace-api import` on one file: the API's writes take turns with the
    import's large units (store/sqlite/turns.py) instead of waiting out their timeout."""
    from tests.server.test_serve import SECRET, Server

    env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
    # The writes beside the import are not rate limited, and a machine busy with other work
    # gets a database timeout that only a write shut out for the whole import would meet: the
    # point is that writes take turns with the import, not how fast (bench row L19).
    env.update(
        WSAPI_SQLITE_PATH=str(tmp_path / "data.sqlite3"),
        WSAPI_SECRET=SECRET,
        WSAPI_RATE_LIMIT_PER_MINUTE="1000000",
        WSAPI_DB_TIMEOUT_SECONDS="60",
    )

    workspace, user = workspace_with_user(env)
    key = answer(env, "keys", "create", "--workspace", workspace, "--name", "crm")["apiKey"]
    history = tmp_path / "calls.ndjson"
    with open(history, "w") as out:
        for n in range(IMPORTED_BESIDE_WRITES):
            body = call_body(user)
            body.update(
                prospect={"email": f"p{n % 500}@x.example"},
                providerCallSid=f"CA{n:032x}",
                startedAt=f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:00Z",
                endedAt=f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:30Z",
            )
            out.write(json.dumps(body) + "\n")
    server = Server(
        tmp_path, MONGODB_URI="", **{k: v for k, v in env.items() if k.startswith("WSAPI_")}
    )
    try:
        server.wait_until_up()
        command = ["import", "calls", "--workspace", workspace, str(history)]
        importing = subprocess.Popen(
            [sys.executable, "-m", "server.cli", *command],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        waits, codes = [], []
        while importing.poll() is None:
            started = time.monotonic()
            code = post(server.origin, key, "/v1/lists", {"name": "L", "ownerUserId": user})
            waits.append(time.monotonic() - started)
            codes.append(code)
            time.sleep(0.05)
        summary = json.loads(importing.communicate(timeout=60)[0])
    finally:
        server.stop()
    assert summary["created"] == IMPORTED_BESIDE_WRITES, json.dumps(summary)[:1500]
    # Every write took its turn: none waited out its database timeout (a 503). How long each
    # waits is a timing figure, measured by bench row L19, not asserted here.
    assert len(codes) >= 5 and set(codes) == {201}, (codes, sorted(waits)[-5:])


def post(origin: str, key: str, path: str, body: dict) -> int:
    request = urllib.request.Request(
        f"{origin}{path}",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


async def test_a_nul_in_any_text_of_a_line_rejects_that_line(store, ws_a):
    prospect = await store.prospects.create(ws_a.id, {"email": "p@a.example"})
    nul = "\u0000"
    calls = [
        call(ws_a, prospect["id"], 1, notes=f"a{nul}b"),  # the fast path's field
        call(ws_a, prospect["id"], 2, fromNumber=f"+1212555{nul}0142"),
        call(ws_a, None, 3, prospect={"email": f"n{nul}@a.example"}),
        call(ws_a, prospect["id"], 4, notes="fine"),
    ]
    summary, rejects = await run(store, "calls", ws_a.id, calls)
    assert (summary.created, summary.rejected) == (1, 3)
    assert [(r["line"], r["reasons"][0].split(":")[0]) for r in rejects] == [
        (1, "#/notes"),
        (2, "#/fromNumber"),
        (3, "#/prospect/email"),
    ]
    assert all("U+0000" in r["reasons"][0] for r in rejects)
    summary, rejects = await run(
        store, "prospects", ws_a.id, [{"firstName": f"A{nul}"}, {"firstName": "Bo"}]
    )
    assert (summary.created, summary.rejected) == (1, 1)
    assert rejects[0]["reasons"][0].startswith("#/firstName: must not contain U+0000")
    note = {"prospectId": prospect["id"], "type": "note", "occurredAt": T0}
    summary, rejects = await run(
        store,
        "activities",
        ws_a.id,
        [{**note, "details": {"text": f"x{nul}"}}, {**note, "details": {"text": "y"}}],
    )
    assert (summary.created, summary.rejected) == (1, 1)
    assert rejects[0]["reasons"][0].startswith("#/details/text: must not contain U+0000")
    stored = json.dumps(await store.documents("calls"), default=str) + json.dumps(
        await store.documents("prospects"), default=str
    )
    assert nul not in stored and "\\u0000" not in stored
