"""The events client of docs/how-to/sync.md ("Follow the events feed"), run exactly as printed
against a demo that keeps taking writes, twice (the second run resumes from the cursor the first
stored): afterwards its CRM holds every call changed since the demo started, each as the API
shows it now unless it changed after the example's last poll, and every activity of those
calls; so the example can never go stale."""

import contextlib
import datetime as dt
import io
import json
import urllib.request
from typing import Any

import pytest

from tests.docs.markdown import code_blocks, read, section
from tests.helpers import running_demo

pytestmark = pytest.mark.own_store

SETTLE = 1  # --sync-settle-seconds of the demo below


def events_example() -> str:
    blocks = code_blocks(
        section(read("docs/how-to/sync.md"), "## Follow the events feed"), "python"
    )
    assert len(blocks) == 1, "the section has one Python example"
    return blocks[0]


def instant(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def get(base: str, key: str, path: str) -> dict:
    request = urllib.request.Request(f"{base}{path}", headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=20) as response:
        return json.loads(response.read())


def all_calls(base: str, key: str) -> dict[str, dict]:
    """Every call by cursor, newest first (arrivals meanwhile land above the walk)."""
    calls: dict[str, dict] = {}
    body = get(base, key, "/calls?pageSize=100")
    while True:
        calls.update((c["id"], c) for c in body["calls"])
        if not body["hasMore"]:
            return calls
        body = get(base, key, f"/calls?cursor={body['nextCursor']}")


def run_example(code: str, polls: int, monkeypatch) -> tuple[dict, list[str]]:
    monkeypatch.setenv("EVENTS_POLLS", str(polls))
    output = io.StringIO()
    namespace: dict[str, Any] = {"__name__": "documented_example"}
    with contextlib.redirect_stdout(output):
        exec(compile(code, "docs/how-to/sync.md#follow-the-events-feed", "exec"), namespace)
    namespace["client"].close()
    return namespace["crm"], output.getvalue().splitlines()


def test_the_documented_events_client_keeps_a_crm_in_sync_and_resumes(tmp_path, monkeypatch):
    code = events_example()
    assert "nextCursor" in code and "Retry-After" in code and "410" in code
    started = dt.datetime.now(dt.UTC)
    with running_demo(
        tmp_path,
        "--calls",
        "150",
        "--prospects",
        "40",
        "--timeline",
        "0",
        "--live-calls-per-minute",
        "600",
        "--sync-settle-seconds",
        str(SETTLE),
    ) as (_, keys, _log):
        (tmp_path / "demo-keys.json").write_text(json.dumps(keys))
        monkeypatch.chdir(tmp_path)
        first, first_lines = run_example(code, 2, monkeypatch)
        stored = (tmp_path / "events-cursor.txt").read_text()
        second, second_lines = run_example(code, 2, monkeypatch)  # a restart: resumes
        stopped = dt.datetime.now(dt.UTC)
        base, key = keys["baseUrl"], keys["workspaces"][0]["apiKey"]
        current = all_calls(base, key)
        resumed = get(base, key, f"/events?cursor={stored}")
    assert len(first_lines) == len(second_lines) == 2
    assert all(line.endswith("records in sync") for line in first_lines + second_lines)
    # The second run resumed from the stored cursor instead of starting over: records the first
    # run saw and that did not change since are not in the second run's copy.
    assert set(first) - set(second)
    assert resumed["hasMore"] in (True, False)  # the stored cursor is one the API takes
    crm = {**first, **second}  # what the CRM holds after both runs (the latest state wins)
    calls = {record_id: record for (kind, record_id), record in crm.items() if kind == "call"}
    # Changed since the demo started, and settled before the last poll (which ended before
    # `stopped`): in the CRM, and as the API shows it now unless it changed since.
    cut = stopped - dt.timedelta(seconds=SETTLE + 1)
    changed = [c for c in current.values() if started <= instant(c["updatedAt"]) <= cut]
    assert len(changed) >= 5  # the live writer wrote while the example ran (fewer when busy)
    missing = [c["id"] for c in changed if c["id"] not in calls]
    assert missing == []
    stale = [c["id"] for c in changed if calls[c["id"]] != c]
    assert stale == []
    assert set(calls) <= set(current)
    # Each live call's timeline entry came as an activity.created event, with its prospectId.
    entries = [record for (kind, _), record in crm.items() if kind == "activity"]
    assert all(entry["prospectId"] for entry in entries)
    assert len({e["callId"] for e in entries if e["type"] == "call"} & set(calls)) >= 5
