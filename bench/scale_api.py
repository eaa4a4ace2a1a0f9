"""The processes `python -m bench.scale` measures: the API (`Api`, a `workspace-api serve`
on one SQLite file), the bare handler that serves the bytes the API answered (`Bare`,
bench/scale_bare.py), and the latency of paths asked one request at a time (`sequential`)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

from bench.common import HOST
from bench.httpload import download, request_bytes
from bench.processes import stop_process

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


class Api:
    """A `workspace-api serve` process on one SQLite file."""

    def __init__(self, path: Path, marker: dict, log: Path, extra_env: dict | None = None):
        self.path, self.marker = path, marker
        self.port = free_port()
        self.key = marker["workspaces"][0]["apiKey"]
        env = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
        env.update(
            WSAPI_SQLITE_PATH=str(path),
            WSAPI_PORT=str(self.port),
            WSAPI_HOST=HOST,
            WSAPI_RATE_LIMIT_PER_MINUTE=str(10**9),
            WSAPI_LOG_LEVEL="warning",
            WSAPI_PROCESSES="1",
        )
        env.update(extra_env or {})
        self.log = open(log, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve"],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
        self.pid = self.proc.pid

    def headers(self) -> dict:
        return {"Authorization": f"Bearer {self.key}"}

    def request(
        self, path: str, method: str = "GET", body: bytes = b"", extra: dict | None = None
    ) -> bytes:
        headers = self.headers()
        if body:
            headers["Content-Type"] = "application/json"
        headers.update(extra or {})
        return request_bytes(method, path, HOST, self.port, headers, body)

    async def ready(self, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the API on {self.path.name} exited ({self.proc.returncode})")
            try:
                answer = await download(
                    HOST, self.port, request_bytes("GET", "/readyz", HOST, self.port), max_seconds=5
                )
                if answer.status == 200:
                    return
            except OSError:
                pass
            await asyncio.sleep(0.2)
        raise RuntimeError(f"the API on {self.path.name} did not get ready")

    async def get(self, path: str, **kwargs):
        return await download(
            HOST, self.port, self.request(path, **kwargs), keep=True, max_seconds=120
        )

    def rss(self) -> int:
        return psutil.Process(self.pid).memory_info().rss

    def stop(self) -> None:
        stop_process(self.proc, timeout=15)
        self.log.close()


class Bare:
    """bench/scale_bare.py serving `body`."""

    def __init__(self, body: bytes, workdir: Path):
        body_file = workdir / "bare-body.json"
        body_file.write_bytes(body)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.scale_bare", "0", str(body_file)],
            stdout=subprocess.PIPE,
            cwd=REPO,
        )
        self.port = int(self.proc.stdout.readline())
        self.pid = self.proc.pid

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


async def sequential(api: Api, paths: list[str], rounds: int) -> dict[str, list[float]]:
    """Latency (time to the last byte) of each path, one request at a time, the paths
    interleaved round by round so that the machine's load falls on all alike."""
    times: dict[str, list[float]] = {path: [] for path in paths}
    for _ in range(rounds):
        for path in paths:
            answer = await api.get(path)
            if answer.status != 200:
                raise RuntimeError(f"GET {path}: {answer.status} {answer.body[:300]!r}")
            times[path].append(answer.total)
    return times
