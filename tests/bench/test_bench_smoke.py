"""The benchmark harness runs end to end on a tiny configuration. Timings are never asserted
here (CONVENTIONS 4): this only proves that `make bench` can produce its table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.run import ROW_IDS

pytestmark = [pytest.mark.long, pytest.mark.own_store]

ROOT = Path(__file__).resolve().parents[2]


def test_quick_bench_prints_every_row_once(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,  # a hang bound, not a timing claim: a loaded machine took over 240 s
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    ids = [row["id"] for row in rows]
    assert ids == list(ROW_IDS)  # every row (measured, or saying why not), once, in order
    for row in rows:
        # Every figure either ran cleanly (PASS or MISS is the benchmark's business; INFO for a
        # figure without a target) or says why it did not run; failed requests show as ERRORS.
        assert row["result"] in ("PASS", "MISS", "INFO") or row["result"].startswith("NOT RUN"), row
        assert f"| {row['id']} |" in proc.stdout
    p5 = [row["data"] for row in rows if row["id"].startswith("P5")]
    assert [d["size"] for d in p5] == [10, 100]
    assert all(d["round_trips"] > 0 for d in p5)
