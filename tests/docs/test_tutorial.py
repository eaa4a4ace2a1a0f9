"""docs/tutorial.md, run as printed: its first block is `make demo` (here a real demo on a free
port, smaller and with a one-second settle period), and every shell block after it runs in
order in one bash, in a directory holding the demo's keys file, as a reader's second terminal
would. Each step's output is checked against the API, so the tutorial cannot go stale."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.docs.markdown import ROOT, code_blocks, read
from tests.helpers import running_demo

pytestmark = pytest.mark.own_store

MARK = "@@step "


def get(base: str, key: str, path: str) -> dict:
    request = urllib.request.Request(f"{base}{path}", headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=20) as response:
        return json.loads(response.read())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_steps(blocks: list[str], cwd: Path, timeout: float = 180) -> list[str]:
    """Every block in one bash (`set -euo pipefail`), in order; each block's output. The
    shell gets its own process group, killed afterwards (the tutorial's receiver included)."""
    script = "set -euo pipefail\n" + "".join(
        f"echo '{MARK}{number}'\n{block}" for number, block in enumerate(blocks)
    )
    venv_bin = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": venv_bin + os.pathsep + os.environ["PATH"]}
    env["HOOK"] = str(free_port())
    process = subprocess.Popen(
        ["bash", "-c", script],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):  # the receiver, had a step failed
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(10)
    assert process.returncode == 0, f"{out}\n{err}"
    parts = out.split(MARK)
    assert parts[0] == ""
    outputs = []
    for number, part in enumerate(parts[1:]):
        label, _, body = part.partition("\n")
        assert label == str(number)
        outputs.append(body)
    assert len(outputs) == len(blocks)
    return outputs


def test_the_tutorial_runs_as_printed_against_a_demo(tmp_path):
    blocks = code_blocks(read("docs/tutorial.md"), "sh")
    assert blocks[0] == "make demo\n", "the tutorial starts with the quick start's demo"
    steps = blocks[1:]
    assert len(steps) == 5
    with running_demo(
        tmp_path,
        "--calls",
        "300",
        "--prospects",
        "40",
        "--timeline",
        "0",
        "--sync-settle-seconds",
        "1",
    ) as (_, keys, _log):
        (tmp_path / "demo-keys.json").write_text(json.dumps(keys))
        # The receiver's path and interpreter, as seen from the repository's root.
        (tmp_path / "docs").symlink_to(ROOT / "docs")
        (tmp_path / ".venv").symlink_to(Path(sys.executable).parents[1])
        base, key = keys["baseUrl"], keys["workspaces"][0]["apiKey"]
        users = get(base, key, "/users")["users"]
        newest = get(base, key, "/calls")
        read_step, walk, change, feed, hook = run_steps(steps, tmp_path)
        after = get(base, key, f"/calls/{newest['calls'][0]['id']}")["call"]
        events = get(base, key, "/events")["events"]

    # 2. The first user, then the first page of calls: its newest call, as the API serves it.
    email, _, rest = read_step.partition("\n")
    assert email == users[0]["email"]
    call, _, figures = rest.rstrip("\n").rpartition("\n")
    assert json.loads(call) == newest["calls"][0]
    assert ast.literal_eval(figures) == [300, 1, 50, True] and newest["total"] == 300
    # 3. The walk in the sync order saw every call once.
    assert walk.splitlines() == [f"{newest['total']} calls, caught up"]
    # 4. The change came back through the kept cursor, alone and with its new notes.
    notes, polled = change.splitlines()
    assert notes == "Call back on Tuesday"
    assert ast.literal_eval(polled) == [(True, "Call back on Tuesday")]
    # 5. The feed holds that change, and nothing of the seeded history.
    assert ast.literal_eval(feed.strip()) == [("call.updated", True, "Call back on Tuesday")]
    # 6. The receiver verified and printed the one event after its registration.
    assert hook.splitlines() == [f"call.updated {after['id']}"]
    assert after["notes"] == "Sent the deck"
    assert [e["type"] for e in events] == ["call.updated", "call.updated"]
