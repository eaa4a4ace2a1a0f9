"""Stopping the benchmarks' helper processes (API servers, the provider, nginx, bare handlers)."""

from __future__ import annotations

import signal
import subprocess


def stop_process(
    proc: subprocess.Popen, timeout: float = 10.0, signum: int = signal.SIGTERM
) -> None:
    """Ask a still-running process to stop with `signum`; kill it if it has not after
    `timeout` seconds, and reap it."""
    if proc.poll() is not None:
        return
    proc.send_signal(signum)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
