"""`python -m server.healthcheck` (the container image's HEALTHCHECK): against a real `serve`
process it passes while /readyz answers 200 and fails when nothing listens where the
configuration says."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from server.config import load_config
from server.healthcheck import probe_address
from tests.helpers import serving, test_environ


def healthcheck(**environ: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "server.healthcheck"],
        env={**os.environ, **environ},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_passes_while_serve_is_ready_and_fails_without_it(tmp_path):
    environ = test_environ(WSAPI_SQLITE_PATH=str(tmp_path / "api.sqlite3"))
    if environ["MONGODB_URI"] == "memory":  # the embedded tier: serve's own SQLite file
        environ["MONGODB_URI"] = ""
    with serving(tmp_path, env=environ) as (origin, log):
        port = origin.rpartition(":")[2]
        ready = healthcheck(**environ, WSAPI_PORT=port)
        assert ready.returncode == 0, ready.stdout + ready.stderr + log.read_text()[-2000:]
        assert ready.stdout.strip() == f"healthy: GET /readyz on 127.0.0.1:{port}: 200"
    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        closed = str(probe.getsockname()[1])
    gone = healthcheck(**environ, WSAPI_PORT=closed)
    assert gone.returncode == 1 and gone.stdout.startswith("unhealthy: no answer from 127.0.0.1")


def test_an_unusable_configuration_is_unhealthy():
    result = healthcheck(WSAPI_PORT="not-a-port")
    assert result.returncode == 1 and "WSAPI_PORT" in result.stdout


@pytest.mark.parametrize(
    ("host", "probed"),
    [("0.0.0.0", "127.0.0.1"), ("::", "::1"), ("10.0.0.5", "10.0.0.5"), ("127.0.0.1", "127.0.0.1")],
)
def test_it_asks_loopback_when_serve_listens_on_every_address(host, probed):
    config = load_config(environ={"WSAPI_HOST": host, "WSAPI_PORT": "9000"})
    assert probe_address(config) == (probed, 9000)
