"""What the metrics tests share: `serve` with a metrics listener, a scrape parsed with
prometheus_client's own parser, and promtool (Debian's `prometheus` package), which the tests
require in CI (.ci/run installs it) and skip without only outside CI."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.server.test_serve import free_port

Samples = dict[tuple[str, frozenset], float]


def promtool() -> str:
    """The promtool command, or a failure in CI and a skip elsewhere when it is missing."""
    found = shutil.which("promtool")
    if found:
        return found
    reason = "promtool is not installed (Debian package prometheus; .ci/run installs it)"
    if os.environ.get("CI"):
        pytest.fail(f"metrics tests cannot run in CI: {reason}")
    pytest.skip(reason)


def promtool_check(kind: str, path: Path | None = None, text: str | None = None) -> str:
    """`promtool check <kind>` on a file or on standard input; its output (fails when it does)."""
    command = [promtool(), "check", kind, *([str(path)] if path else [])]
    done = subprocess.run(command, input=text, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"promtool check {kind}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def fetch(url: str, key: str | None = None, timeout: float = 10) -> tuple[int, dict, bytes]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def parse(text: str) -> Samples:
    """Every sample of an exposition: (name, labels) -> value."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """A sample's value; 0 for a series not (yet) exported."""
    return samples.get((name, frozenset(labels.items())), 0.0)


class MetricsServe:
    """`workspace-api serve` with a metrics listener, in its own process group (TMPDIR: the
    test's, so that the multiprocess directory is found and nothing else is touched)."""

    def __init__(self, tmp_path: Path, env: dict, *args: str) -> None:
        self.port, self.metrics_port = free_port(), free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.metrics = f"http://127.0.0.1:{self.metrics_port}"
        self.tmp = tmp_path / "tmp"
        self.tmp.mkdir(exist_ok=True)
        self.log = tmp_path / f"serve-{self.port}.log"
        environ = {
            **os.environ,
            **env,
            "WSAPI_METRICS_PORT": str(self.metrics_port),
            "TMPDIR": str(self.tmp),
        }
        environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
        with open(self.log, "w") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "server.cli", "serve", "--port", str(self.port), *args],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=environ,
                start_new_session=True,
            )

    def wait_up(self, path: str = "/healthz", timeout: float = 60) -> None:
        """Until both listeners answer `path` with 200."""
        deadline = time.monotonic() + timeout
        for origin in (self.origin, self.metrics):
            while True:
                assert self.process.poll() is None, self.log.read_text()
                with contextlib.suppress(OSError):
                    if fetch(origin + path, timeout=2)[0] == 200:
                        break
                assert time.monotonic() < deadline, "serve did not start: " + self.log.read_text()
                time.sleep(0.1)

    def scrape(self) -> tuple[str, Samples]:
        status, headers, body = fetch(self.metrics + "/metrics")
        assert status == 200, body
        assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = body.decode()
        return text, parse(text)

    def scrape_until(self, condition, what: str, timeout: float = 20) -> Samples:
        deadline = time.monotonic() + timeout
        while True:
            samples = self.scrape()[1]
            if condition(samples):
                return samples
            assert time.monotonic() < deadline, f"{what}: not seen in {timeout} s"
            time.sleep(0.1)

    def multiprocess_dirs(self) -> list[Path]:
        return sorted(self.tmp.glob("wsapi-metrics-*"))

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(30)

    def kill(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
