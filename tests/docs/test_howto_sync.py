"""The sync loop of docs/how-to/sync.md ("Walk a resource in the sync order"), run exactly as
printed against a demo that keeps taking writes: after it stops, its copy holds every call the
API settled before its last poll, each with its current content, so the example can never go
stale."""

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


def syncing_example() -> str:
    blocks = code_blocks(
        section(read("docs/how-to/sync.md"), "## Walk a resource in the sync order"), "python"
    )
    assert len(blocks) == 1, "the section has one Python example"
    return blocks[0]


def instant(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def all_calls(base: str, key: str) -> dict[str, dict]:
    """Every call by page number, newest first: arrivals meanwhile only push records down the
    order (never up), so this may see one twice but never misses one that existed before."""
    calls: dict[str, dict] = {}
    page = 1
    while True:
        request = urllib.request.Request(
            f"{base}/calls?page={page}&pageSize=100", headers={"Authorization": f"Bearer {key}"}
        )
        with urllib.request.urlopen(request, timeout=20) as response:
            body = json.loads(response.read())
        calls.update((c["id"], c) for c in body["calls"])
        if not body["hasMore"]:
            return calls
        page += 1


def test_the_documented_sync_loop_runs_as_printed_and_misses_nothing(tmp_path, monkeypatch):
    code = syncing_example()
    assert "sort" in code and "nextCursor" in code and "Retry-After" in code
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
        monkeypatch.setenv("SYNC_POLLS", "3")
        output = io.StringIO()
        namespace: dict[str, Any] = {"__name__": "documented_example"}
        with contextlib.redirect_stdout(output):
            exec(
                compile(code, "docs/how-to/sync.md#walk-a-resource-in-the-sync-order", "exec"),
                namespace,
            )
        stopped = dt.datetime.now(dt.UTC)
        namespace["client"].close()
        base, key = keys["baseUrl"], keys["workspaces"][0]["apiKey"]
        current = all_calls(base, key)
    synced = namespace["calls"]
    lines = output.getvalue().splitlines()
    assert len(lines) == 3 and all(line.endswith("calls in sync") for line in lines)
    counts = [int(line.split()[0]) for line in lines]
    assert counts == sorted(counts) and counts[-1] == len(synced)
    assert counts[-1] > counts[0] and counts[-1] > 150  # the polls picked up live calls
    # Settled before the last poll (which ended before `stopped`): in the copy, and as it is now
    # unless it changed since.
    cut = stopped - dt.timedelta(seconds=SETTLE + 1)
    settled = [c for c in current.values() if instant(c["updatedAt"]) <= cut]
    assert len(settled) > 150
    missing = [c["id"] for c in settled if c["id"] not in synced]
    assert missing == []
    stale = [c["id"] for c in settled if synced[c["id"]] != c]
    assert stale == []
    assert set(synced) <= set(current)
