"""The dialer examples of docs/how-to/dialer.md ("Record a call": curl, then Python), run exactly
as printed in one shell, after the lines before them that set BASE and KEY, against a running
demo: each records a call through POST /v1/calls with the ingest key, on the prospect its contact
matches."""

import json
import subprocess
import urllib.request

import pytest

from tests.docs.markdown import code_blocks, read, section
from tests.helpers import running_demo

pytestmark = pytest.mark.own_store


def get(url: str, key: str) -> dict:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=20) as response:
        return json.loads(response.read())


def test_the_dialer_examples_record_calls_as_printed(tmp_path):
    demo = section(read("docs/how-to/dialer.md"), "## Record a call")
    shell, python = code_blocks(demo, "sh"), code_blocks(demo, "python")
    assert len(shell) == 2 and len(python) == 1
    assert "ingestApiKey" in shell[1] and "ingestApiKey" in python[0]
    script = "set -euo pipefail\n" + shell[0] + shell[1] + f"python3 <<'EOF'\n{python[0]}EOF\n"
    with running_demo(tmp_path, "--calls", "100", "--prospects", "40", "--timeline", "10") as (
        _,
        keys,
        _log,
    ):
        (tmp_path / "demo-keys.json").write_text(json.dumps(keys))
        base, key = keys["baseUrl"], keys["workspaces"][0]["apiKey"]
        dana = get(f"{base}/prospect-activities?email=dana.whitfield@northwind.example", key)
        before = get(f"{base}/calls?prospectId={dana['prospect']['id']}&pageSize=100", key)
        for run in range(2):
            done = subprocess.run(
                ["bash", "-c", script],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
            printed = done.stdout.strip().splitlines()[-1]  # the Python example's answer
            assert "'call'" in printed and "'prospectMatch'" in printed, done.stdout
            calls = get(f"{base}/calls?prospectId={dana['prospect']['id']}&pageSize=100", key)
            # curl's call has a providerCallSid: recorded once, however often it is posted;
            # Python's has none: a new call each time.
            assert calls["total"] == before["total"] + 2 + run
        users = get(f"{base}/users", key)["users"]
        printed_at = ("2026-11-20T15:04:05.000Z", "2026-11-20T16:00:00.000Z")
        new = [c for c in calls["calls"] if c["startedAt"] in printed_at]
        assert sorted((c["startedAt"], c["disposition"], c["userId"]) for c in new) == [
            ("2026-11-20T15:04:05.000Z", "connected", users[0]["id"]),
            ("2026-11-20T16:00:00.000Z", "no_answer", users[0]["id"]),
            ("2026-11-20T16:00:00.000Z", "no_answer", users[0]["id"]),
        ]
