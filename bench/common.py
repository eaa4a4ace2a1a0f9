"""What every benchmark shares: the row a figure is reported in and the table rows are printed
as, the statistics and units figures are written in, and the contact uploads they send.

Row ids are unique across all benchmarks and stable (the performance document cites them):
P1a..P10b and S1..S3 are `python -m bench` (bench/run.py, S for the streams of
bench/streams.py), L1..L25 are `python -m bench.scale`. A figure that reports several rows
numbers them with a letter (P1a, P1b, P1c).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Sequence

HOST = "127.0.0.1"  # every benchmark runs on loopback
MB = 1024 * 1024


@dataclasses.dataclass
class Row:
    """One line of a benchmark's table: what was measured against which target, and whether
    it met it (PASS, MISS, INFO, ERRORS: ..., NOT RUN: ...); `data` holds the raw figures."""

    id: str
    what: str
    measured: str
    target: str
    result: str
    baseline: str = "-"  # the comparison measured in the same run
    ratio: str = "-"
    data: dict = dataclasses.field(default_factory=dict)


def not_run(row_id: str, what: str, target: str, why: str) -> Row:
    """The row of a figure that was not measured: `why` is its result (NOT RUN: ...)."""
    return Row(row_id, what, "-", target, why)


def table(rows: Iterable[Row], columns: Sequence[tuple[str, str]]) -> str:
    """A Markdown table of `rows`; `columns` are (heading, Row field) pairs."""
    cells = [[heading for heading, _ in columns]]
    cells += [[str(getattr(row, field)) for _, field in columns] for row in rows]
    lines = ["| " + " | ".join(line) + " |" for line in cells]
    lines.insert(1, "|" + "|".join("---" for _ in columns) + "|")
    return "\n".join(lines)


def percentile(values: Iterable[float], q: float) -> float:
    """The `q` quantile (0 to 1) of `values` by nearest rank. Of no values it is nan: nothing
    measured is no figure, and every comparison with nan is false, so a target checked as
    `value < limit` (or `>=`) reports MISS, never PASS."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def ms(seconds: float) -> str:
    """A duration as the tables print it: milliseconds with one decimal, seconds from 10 s."""
    if math.isnan(seconds):
        return "none measured"
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def upload_body(start: int, count: int, run: str) -> bytes:
    """A POST /v1/lists/{id}/contacts body of `count` contacts numbered from `start`, every one
    new to the workspace: emails are unique per `run` (a tag of the run) and number, phone
    numbers per number (below 10,000,000)."""
    contacts = [
        {
            "firstName": f"Bench{n}",
            "lastName": "Upload",
            "email": f"contact{n}@{run}.bench.example",
            "phoneNumber": f"+1212{n % 10_000_000:07d}",
            "companyName": "Bench Corp",
            "jobTitle": "Tester",
        }
        for n in range(start, start + count)
    ]
    return json.dumps({"contacts": contacts}).encode()
