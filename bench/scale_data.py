"""The data files of `python -m bench.scale`, seeded once and cached under bench/.data/.

Two SQLite files, each seeded by `demo.seeding.seed` in a child process (bounded memory, and the
seeding's garbage never reaches the benchmark):
- "big": `calls` calls in the first demo workspace (1,000,000 by default) and `prospects`
  prospects (100,000 by default: the prospects PATCH measures);
- "small": 10,000 calls and 100,000 prospects: page 1 at 10k calls, and the workspace that
  takes the contact uploads (a fresh copy of the cached file for every run, so the cache never
  changes).
A JSON marker beside each file records the seeding (format version, scale, the day the data
is anchored at, the demo keys); a file whose marker is missing or of another version is seeded
again.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

DATA_DIR = Path(os.environ.get("BENCH_SCALE_DATA") or Path(__file__).resolve().parent / ".data")
# Bump when the seeding or the store's schema changes in a way that makes old files wrong.
FORMAT = 2
SMALL_CALLS = 10_000
SMALL_PROSPECTS = 100_000


def marker_of(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def read_marker(path: Path) -> dict | None:
    try:
        marker = json.loads(marker_of(path).read_text())
    except (OSError, ValueError):
        return None
    return marker if marker.get("format") == FORMAT and path.exists() else None


def data_file(calls: int, prospects: int) -> Path:
    return DATA_DIR / f"calls{calls}-prospects{prospects}.sqlite"


def start_seeding(calls: int, prospects: int) -> tuple[Path, subprocess.Popen | None]:
    """The cached file for this scale, and the child seeding it (None when cached)."""
    path = data_file(calls, prospects)
    if read_marker(path):
        return path, None
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    for stale in (path, marker_of(path), Path(f"{path}-wal"), Path(f"{path}-shm")):
        stale.unlink(missing_ok=True)
    child = subprocess.Popen(
        [sys.executable, "-m", "bench.scale_data", str(path), str(calls), str(prospects)],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    return path, child


def wait_seeded(path: Path, child: subprocess.Popen | None) -> dict:
    if child is not None and child.wait() != 0:
        raise RuntimeError(f"seeding {path} failed (exit {child.returncode})")
    marker = read_marker(path)
    if marker is None:
        raise RuntimeError(f"seeding {path} left no marker")
    return marker


def working_copy(path: Path, name: str) -> Path:
    """A throwaway copy of a cached file (the cache is checkpointed: one file holds it all)."""
    target = DATA_DIR / name
    for stale in (target, Path(f"{target}-wal"), Path(f"{target}-shm")):
        stale.unlink(missing_ok=True)
    shutil.copyfile(path, target)
    return target


async def _seed(path: Path, calls: int, prospects: int) -> dict:
    from demo.data import Scale
    from demo.seeding import Progress, estimate, seed
    from server.config import load_config
    from server.services import open_services

    config = load_config(None, {}).replace(mongodb_uri="", sqlite_path=str(path))
    store, auth = await open_services(config)
    scale = Scale(calls=calls, prospects=prospects, timeline=0)
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None, hour=0, minute=0, second=0, microsecond=0)
    started = time.monotonic()
    try:
        workspaces = await seed(
            store, auth, now=now, scale=scale, progress=Progress(estimate(scale))
        )
    finally:
        await store.close()
    seconds = time.monotonic() - started
    # Fold the WAL into the main file, so that the cache is one file that copies whole.
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return {
        "format": FORMAT,
        "calls": calls,
        "prospects": prospects,
        "anchor": now.date().isoformat(),
        "seedSeconds": round(seconds, 1),
        "workspaces": workspaces,
    }


def main(argv: list[str]) -> int:
    path, calls, prospects = Path(argv[0]), int(argv[1]), int(argv[2])
    marker = asyncio.run(_seed(path, calls, prospects))
    marker_of(path).write_text(json.dumps(marker, indent=2) + "\n")
    print(
        f"seeded {path.name}: {calls} calls, {prospects} prospects in {marker['seedSeconds']} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
