"""`workspace-api serve` on the embedded store: serves, and warns loudly that nothing persists."""

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_serve_on_embedded_store_warns_and_serves(tmp_path):
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve", "--port", str(port)],
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "MONGODB_URI": "memory"},
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, log.read_text()
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/users", timeout=2)
            except urllib.error.HTTPError as exc:
                assert exc.code == 401
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        assert "NOTHING IS PERSISTED" in log.read_text()
    finally:
        process.terminate()
        process.wait(10)
