"""The directory of prometheus_client's multiprocess mode, which `serve --processes N` creates,
keeps and removes: each worker writes its figures to files there, and a scrape sums them.

It is `wsapi-metrics-<supervisor pid>` in the temporary directory (TMPDIR), owner-only, made
empty at start. When a worker dies its live gauges' files are dropped (its counters and
histograms stay: totals never go back); when the supervisor ends, the directory goes. A
directory left by a supervisor that was killed (SIGKILL) is removed by the next `serve` that
starts, once its supervisor's pid is gone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

ENV = "PROMETHEUS_MULTIPROC_DIR"
PREFIX = "wsapi-metrics-"


def create(base: str | None = None) -> Path:
    """A fresh directory for this supervisor's workers, named in the environment (ENV) that
    prometheus_client reads when it is first imported: call before any worker starts."""
    root = Path(base or tempfile.gettempdir())
    remove_stale(root)
    path = root / f"{PREFIX}{os.getpid()}"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(mode=0o700)
    os.environ[ENV] = str(path)
    return path


def remove_stale(root: Path) -> None:
    """Remove the directories of supervisors that are no longer running."""
    for found in root.glob(f"{PREFIX}*"):
        pid = found.name[len(PREFIX) :]
        if pid.isdigit() and not alive(int(pid)):
            shutil.rmtree(found, ignore_errors=True)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def worker_died(pid: int) -> None:
    """Drop a dead worker's live gauges (in flight, streams open, store up, backlog)."""
    if not os.environ.get(ENV):
        return
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid)


def remove(path: Path) -> None:
    os.environ.pop(ENV, None)
    with contextlib.suppress(OSError):
        shutil.rmtree(path)
