"""The processes of one `python -m bench` run and the helpers that talk to them: the run's
sizes and durations (`Settings`, and `QUICK` for the smoke run), a child process that prints
one JSON line when ready (`Process`), and `Bench`, which starts the API servers and the
simulated provider and stops them all at the end."""

from __future__ import annotations

import dataclasses
import json
import secrets
import select
import subprocess
import sys
import time
import uuid
from pathlib import Path

from bench.common import HOST, MB
from bench.httpload import download, request_bytes
from bench.processes import stop_process

ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class Settings:
    connections: int = 8  # concurrent keep-alive connections for the req/s figures
    rounds: int = 16  # interleaved rounds per side (ABBA order)
    round_seconds: float = 0.8
    warmup_seconds: float = 1.0
    users: int = 25
    calls: int = 300
    upload_sizes: tuple = (1, 10, 100)
    upload_rounds: int = 3
    upload_requests: dict = dataclasses.field(default_factory=lambda: {1: 10, 10: 5, 100: 2})
    p1_bytes: int = 200 * MB
    p1_rounds: int = 7
    p1_seeks: int = 21
    install_nginx: bool = True  # apt-get install nginx when missing (root on Debian only)
    p2_bytes: int = 500 * MB
    slow_rate: float = 1 * MB  # bytes/s
    slow_seconds: float = 30.0
    activities: int = 100_000
    p6_runs: int = 2
    p7_rounds: int = 8
    p7_requests: dict = dataclasses.field(default_factory=lambda: {"upload": 10, "create": 40})
    p8_rounds: int = 12  # per side, interleaved (on off off on ...)
    p8_uploads: int = 8  # uploads of 100 contacts per side and round
    p8_inserts: int = 200  # call inserts per side and round
    events: int = 1_000_000


QUICK = Settings(
    connections=2,
    rounds=2,
    round_seconds=0.3,
    warmup_seconds=0.2,
    users=5,
    calls=120,
    upload_rounds=1,
    upload_requests={1: 3, 10: 2, 100: 1},
    p1_bytes=4 * MB,
    p1_rounds=1,
    p1_seeks=2,
    install_nginx=False,
    p2_bytes=8 * MB,
    slow_rate=1 * MB,
    slow_seconds=2.0,
    activities=2000,
    p6_runs=1,
    p7_rounds=2,
    p7_requests={"upload": 2, "create": 3},
    p8_rounds=2,
    p8_uploads=2,
    p8_inserts=10,
    events=5000,
)


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the harness dies, so no server outlives a killed run."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: stop() still ends the children on every normal exit


class Process:
    """A child process that prints one JSON line when ready and stops on SIGTERM."""

    def __init__(self, module: str, args: list[str], log_path: Path, timeout: float = 300):
        self.log = open(log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self.log,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )
        self.info = self._ready(timeout, log_path)

    def _ready(self, timeout: float, log_path: Path) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            readable, _, _ = select.select([self.proc.stdout], [], [], 0.5)
            if readable:
                line = self.proc.stdout.readline()
                if line:
                    return json.loads(line)
            if self.proc.poll() is not None:
                break
        self.stop()
        tail = log_path.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{self.proc.args} did not start:\n{tail}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()


class Bench:
    """The processes of one run and the helpers that talk to them."""

    def __init__(self, settings: Settings, workdir: Path):
        self.settings = settings
        self.workdir = workdir
        self.account = "AC" + secrets.token_hex(16)
        self.token = secrets.token_hex(16)
        self.provider: Process | None = None
        self.refs = {"p1": "RE" + uuid.uuid4().hex, "p2": "RE" + uuid.uuid4().hex}
        self.children: list[Process] = []
        self.p1_detail: dict | None = None

    def start_provider(self) -> Process:
        if self.provider is None:
            s = self.settings
            self.provider = self.spawn(
                "bench.provider_proc",
                [
                    "--account",
                    self.account,
                    "--token",
                    self.token,
                    f"{self.refs['p1']}={s.p1_bytes}",
                    f"{self.refs['p2']}={s.p2_bytes}",
                ],
                "provider",
            )
        return self.provider

    def start_server(
        self, name: str, *args: str, provider: bool = False, module: str = "bench.server"
    ) -> Process:
        """A server process (`module`: bench.server, or bench.streams for S1-S3), stopped with
        the others; with `provider`, pointed at the simulated provider."""
        extra = []
        if provider:
            port = self.start_provider().info["port"]
            extra = [
                "--provider-url",
                f"http://{HOST}:{port}",
                "--provider-account",
                self.account,
                "--provider-token",
                self.token,
            ]
        return self.spawn(module, [*args, *extra], name)

    def spawn(self, module: str, args: list[str], name: str) -> Process:
        process = Process(module, args, self.workdir / f"{name}.log")
        self.children.append(process)
        return process

    def stop_all(self) -> None:
        for process in reversed(self.children):
            process.stop()
        self.children.clear()
        self.provider = None


def api_get(server: Process, path: str, extra: dict | None = None) -> bytes:
    headers = {"Authorization": f"Bearer {server.info['key']}", **(extra or {})}
    return request_bytes("GET", path, HOST, server.info["api_port"], headers)


async def dbops(server: Process) -> dict:
    port = server.info["bare_port"]
    result = await download(HOST, port, request_bytes("GET", "/bench/dbops", HOST, port), keep=True)
    return json.loads(result.body)
