"""`workspace-api import do-not-call`: a suppression file of bare numbers and emails and NDJSON
entries, through POST /v1/do-not-call's rules (normalised, existing ones counted, an unreadable
number rejected alone), on both tiers; and the command itself on a SQLite file."""

from __future__ import annotations

import io
import json
import os

from server.importer import Summary, import_file
from tests.server.test_import import command, workspace_with_user


async def test_a_suppression_file_loads_through_the_api_s_rules(store, ws_a, api, new_list):
    listing = await new_list()
    upload = await api.post(
        f"/v1/lists/{listing['id']}/contacts", {"contacts": [{"phoneNumber": "+14155550101"}]}
    )
    prospect_id = upload.json()["results"][0]["prospectId"]
    text = "\n".join(
        [
            "(415) 555-0101",  # 1: the prospect's number, bare
            "Ada@Example.com",  # 2
            '{"phoneNumber": "+14155550102"}',  # 3
            "",  # 4: blank lines are skipped
            '{"email": "ada@example.COM"}',  # 5: the same email again: existing
            "not a number",  # 6
            '{"fax": "+14155550103"}',  # 7
            "{not json",  # 8
        ]
    )
    rejects = io.StringIO()
    summary = Summary("do-not-call", ws_a.id, rejects)
    await import_file(
        store,
        "do-not-call",
        ws_a.id,
        io.BytesIO(text.encode()),
        None,
        summary,
        reason="CRM export",
    )
    assert (summary.lines, summary.created, summary.existing, summary.rejected) == (7, 3, 1, 3)
    reasons = {
        json.loads(line)["line"]: json.loads(line)["reasons"]
        for line in rejects.getvalue().splitlines()
    }
    assert sorted(reasons) == [6, 7, 8]
    assert reasons[6] == ["#/phoneNumber: is not a phone number that can be read"]
    entries = (await api.get("/v1/do-not-call")).json()["entries"]
    assert sorted(e.get("phoneNumber") or e["email"] for e in entries) == [
        "+14155550101",
        "+14155550102",
        "ada@example.com",
    ]
    assert {e["reason"] for e in entries} == {"CRM export"}
    prospects = (await api.get("/v1/prospects")).json()["prospects"]
    assert [(p["id"], p["doNotCallReason"]) for p in prospects] == [
        (prospect_id, "suppressed_phone")
    ]


def test_the_command_on_a_sqlite_file(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
    env.update(WSAPI_SQLITE_PATH=str(tmp_path / "data.sqlite3"))
    workspace, _ = workspace_with_user(env)
    path = tmp_path / "opt-outs.txt"
    path.write_text("+14155550101\nnobody@example.com\nnot a number\n")
    done = command(
        env, "import", "do-not-call", "--workspace", workspace, "--reason", "CRM", str(path)
    )
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert summary["import"] == "do-not-call"
    assert (summary["lines"], summary["created"], summary["rejected"]) == (3, 2, 1)
    assert "Importing" in done.stderr
    again = command(
        env, "import", "do-not-call", "--workspace", workspace, "-", stdin="+1 415 555 0101\n"
    )
    assert again.returncode == 0 and json.loads(again.stdout)["existing"] == 1
    wrong = command(env, "import", "calls", "--workspace", workspace, "--reason", "x", "-")
    assert wrong.returncode == 2 and "do-not-call only" in wrong.stderr


async def test_a_prospects_import_skips_suppressed_contacts(store, ws_a, api):
    await api.post("/v1/do-not-call", {"entries": [{"email": "gone@example.com"}]})
    text = "\n".join(
        json.dumps(contact)
        for contact in ({"email": "GONE@example.com", "firstName": "G"}, {"email": "kept@x.io"})
    )
    summary = Summary("prospects", ws_a.id, None)
    await import_file(store, "prospects", ws_a.id, io.BytesIO(text.encode()), None, summary)
    assert (summary.lines, summary.created, summary.existing, summary.rejected) == (2, 1, 0, 0)
    prospects = (await api.get("/v1/prospects")).json()["prospects"]
    assert [p["email"] for p in prospects] == ["kept@x.io"]
