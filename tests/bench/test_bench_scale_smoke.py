"""`python -m bench.scale` runs end to end on tiny data files (seeded into a temporary cache
directory). Timings are never asserted here (CONVENTIONS 4): this only proves that the harness
produces every figure of its table, with no failed request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.scale import ROW_IDS

pytestmark = [pytest.mark.long, pytest.mark.own_store]

ROOT = Path(__file__).resolve().parents[2]


def test_scale_bench_prints_every_figure(tmp_path):
    out = tmp_path / "scale.json"
    env = {**os.environ, "BENCH_SCALE_DATA": str(tmp_path / "data")}
    env.pop("MONGODB_URI", None)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.scale",
            "--calls",
            "3000",
            "--prospects",
            "300",
            "--rounds",
            "2",
            "--round-seconds",
            "0.5",
            "--warmup",
            "0.3",
            "--samples",
            "3",
            "--metrics-runs",
            "1",
            "--export-rounds",
            "1",
            "--uploads",
            "6",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,  # a hang bound, not a timing claim
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())
    assert [row["id"] for row in rows] == list(ROW_IDS)  # every row, once, in order
    for row in rows:
        assert row["result"] in ("PASS", "MISS", "INFO"), row  # never ERRORS
        assert f"| {row['id']} |" in proc.stdout
    l17 = next(row for row in rows if row["id"] == "L17")
    assert "write-ahead log after it" in json.dumps(l17)
    # The lifecycle rows measured what they name: a purge of the list's members, prospects
    # made doNotCall by the entries added.
    by_id = {row["id"]: row for row in rows}
    assert by_id["L21"]["data"]["members"] > 0 and by_id["L21"]["data"]["seconds"] is not None
    assert min(by_id["L25"]["data"]["touched"]) > 0
    # The data files are cached with their markers, for the next run to reuse.
    markers = sorted(p.name for p in (tmp_path / "data").glob("*.json"))
    assert markers == ["calls10000-prospects300.sqlite.json", "calls3000-prospects300.sqlite.json"]
