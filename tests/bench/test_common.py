"""The helpers every benchmark shares (bench/common.py), the row ids the performance
document cites (stable, and unique across all benchmarks), and the import bench's history file."""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
from pathlib import Path

import pytest

from bench import run, scale
from bench.common import Row, ms, percentile, table, upload_body, verdict
from bench.scale_writes import write_call_lines
from schemas import Schemas


def test_row_ids_are_stable_and_unique_across_benchmarks():
    stable = (
        "P1a",
        "P1b",
        "P1c",
        "P2",
        "P3",
        "P4",
        "P5a",
        "P5b",
        "P6",
        "P7a",
        "P7b",
        "P8a",
        "P8b",
        "P9",
        "P10a",
        "P10b",
        "P10a-wire",
        "W3a",
        "W3b",
        "W3c",
        "W3d",
        "E4a",
        "E4b",
        "E4c",
        "E4d",
        "D1a",
        "D1b",
        "M1a",
        "M1b",
        "S1",
        "S2",
        "S3",
    )
    assert stable == run.ROW_IDS
    assert set(scale.ROW_IDS) == {f"L{n}" for n in range(1, 28)}
    every = run.ROW_IDS + scale.ROW_IDS
    assert len(set(every)) == len(every)


def test_only_takes_figures_or_rows():
    assert run.figures_of("p4, P5") == {"P4", "P5"}
    assert run.figures_of("P1c,p1a,S2") == {"P1", "S2"}
    assert run.figures_of("p7b") == {"P7"}
    assert run.figures_of("P8b,p9") == {"P8", "P9"}
    assert run.figures_of("p10b") == {"P10"}
    assert run.figures_of("p10a-wire") == {"P10"}
    assert run.figures_of("m1b") == {"M1"}
    assert run.figures_of("d1a") == {"D1"}
    with pytest.raises(ValueError, match="P11, P12"):
        run.figures_of("P12,P4,P11")


def test_the_percentile_of_nothing_is_nan_and_never_passes():
    value = percentile([], 0.99)
    assert math.isnan(value)
    assert verdict(value < 0.1) == verdict(value >= 0.1) == "MISS"
    assert ms(value) == "none measured"


@pytest.mark.parametrize(
    ("q", "expected"), [(0, 1.0), (0.25, 2.0), (0.5, 3.0), (0.99, 5.0), (1, 5.0)]
)
def test_percentile_is_the_nearest_rank(q, expected):
    assert percentile([5.0, 1.0, 4.0, 2.0, 3.0], q) == expected  # any order


def test_a_single_value_is_every_percentile():
    assert {percentile([0.25], q) for q in (0, 0.5, 0.99, 1)} == {0.25}


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.0004, "0.4 ms"), (0.0123, "12.3 ms"), (9.5, "9500.0 ms"), (12.34, "12.3 s")],
)
def test_durations_print_in_milliseconds_then_seconds(seconds, text):
    assert ms(seconds) == text


def test_upload_bodies_are_valid_and_every_contact_is_new():
    schemas = Schemas()
    first, second = upload_body(0, 100, "runa"), upload_body(100, 100, "runa")
    other_run = upload_body(0, 100, "runb")
    contacts = [c for body in (first, second, other_run) for c in json.loads(body)["contacts"]]
    for body in (first, second, other_run):
        assert schemas.errors("/schemas/requests/contacts-upload.json", json.loads(body)) == []
    assert len(contacts) == 300
    assert len({c["email"] for c in contacts}) == 300
    assert len({c["phoneNumber"] for c in contacts[:200]}) == 200


def test_tables_are_markdown_with_the_columns_asked_for():
    rows = [Row("X1", "a figure", "1 ms", "< 2 ms", "PASS"), Row("X2", "b", "3 ms", "-", "INFO")]
    assert table(rows, [("id", "id"), ("what", "what"), ("result", "result")]) == (
        "| id | what | result |\n|---|---|---|\n| X1 | a figure | PASS |\n| X2 | b | INFO |"
    )


def _people(path: Path, workspace_id: str) -> None:
    """A file with what write_call_lines reads: one user, three prospects, one list."""
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE users (_id TEXT, workspaceId TEXT, deletedAt INTEGER)")
        conn.execute("CREATE TABLE prospects (_id TEXT, workspaceId TEXT)")
        conn.execute("CREATE TABLE lists (_id TEXT, workspaceId TEXT)")
        conn.execute("INSERT INTO users VALUES ('u1', ?, NULL)", (workspace_id,))
        conn.executemany(
            "INSERT INTO prospects VALUES (?, ?)", [(f"p{n}", workspace_id) for n in range(3)]
        )
        conn.execute("INSERT INTO lists VALUES ('l1', ?)", (workspace_id,))


@pytest.mark.parametrize("ordered", [True, False])
def test_the_import_bench_writes_history_oldest_first_or_shuffled(tmp_path, ordered):
    target, lines = tmp_path / "people.sqlite", tmp_path / "calls.ndjson"
    _people(target, "w1")
    write_call_lines(lines, target, "w1", 500, first=10, ordered=ordered)
    bodies = [json.loads(line) for line in lines.read_text().splitlines()]
    assert len(bodies) == 500
    assert [b["providerCallSid"] for b in bodies] == [f"CA{n:032x}" for n in range(10, 510)]
    assert {b["prospectId"] for b in bodies} <= {"p0", "p1", "p2"}
    starts = [b["startedAt"] for b in bodies]
    assert (starts == sorted(starts)) is ordered
    assert all(b["startedAt"] <= b["endedAt"] for b in bodies)
