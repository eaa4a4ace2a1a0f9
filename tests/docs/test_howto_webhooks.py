"""The receiver of docs/how-to/webhooks.md ("Write a receiver"; docs/examples/webhook_receiver.py,
the same code) run as printed against a real demo: it verifies the signatures of what the demo
delivers with the `standardwebhooks` package and handles each event once, a recovery's repeats
included."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.docs.markdown import code_blocks, read, section
from tests.helpers import running_demo

pytestmark = pytest.mark.own_store

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "webhook_receiver.py"


def api(base: str, key: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"{base}{path}",
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        method="POST" if body is not None else "GET",
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        return json.loads(response.read())


def test_the_example_is_the_documented_receiver():
    [code] = code_blocks(section(read("docs/how-to/webhooks.md"), "## Write a receiver"), "python")
    assert code == EXAMPLE.read_text()
    assert len(code.splitlines()) <= 30 and "webhook-id" in code


def test_the_documented_receiver_verifies_and_deduplicates_the_demos_deliveries(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with running_demo(tmp_path, "--sync-settle-seconds", "1") as (_, keys, _):
        base, key = keys["baseUrl"], keys["workspaces"][0]["apiKey"]
        endpoint = api(
            base,
            key,
            "/webhook-endpoints",
            {"url": f"http://127.0.0.1:{port}/hook", "eventTypes": ["list.created"]},
        )["webhookEndpoint"]
        output, log = tmp_path / "receiver.out", tmp_path / "receiver.log"
        with open(output, "w") as out, open(log, "w") as err:  # stderr: its access log
            receiver = subprocess.Popen(
                [sys.executable, str(EXAMPLE)],
                env={**os.environ, "WEBHOOK_SECRET": endpoint["secret"], "PORT": str(port)},
                stdout=out,
                stderr=err,
            )
        try:
            # Listening before the first event: an attempt at a port nobody listens on yet gets
            # no response (statusCode null), and is tried again later.
            deadline = time.monotonic() + 60
            while True:
                assert receiver.poll() is None, log.read_text()
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "the receiver did not listen"
                    time.sleep(0.05)
            owner = api(base, key, "/users")["users"][0]["id"]
            made = [
                api(base, key, "/lists", {"name": f"Hooked {n}", "ownerUserId": owner})["list"]
                for n in range(3)
            ]
            wanted = {f"list.created {listing['id']}" for listing in made}
            deadline = time.monotonic() + 60
            while not wanted <= set(output.read_text().splitlines()):
                assert receiver.poll() is None, log.read_text()
                assert time.monotonic() < deadline, output.read_text()
                time.sleep(0.2)
            # Everything again: the receiver gets each event twice and handles it once.
            api(
                base,
                key,
                f"/webhook-endpoints/{endpoint['id']}/recover",
                {"since": endpoint["createdAt"]},
            )
            path = f"/webhook-endpoints/{endpoint['id']}/deliveries?pageSize=100"
            while len(api(base, key, path)["deliveries"]) < 2 * len(made):
                assert time.monotonic() < deadline, api(base, key, path)
                time.sleep(0.2)
            attempts = api(base, key, path)["deliveries"]
            assert {a["statusCode"] for a in attempts} == {204}  # every signature verified
            assert sorted(output.read_text().splitlines()) == sorted(wanted)
        finally:
            receiver.terminate()
            receiver.wait(10)
