"""On SQLite an import's batch of calls is written as several write units of a bounded length
(store/sqlite/units.py), so that a writer of another process waits for one unit, not for the
batch; every line is still imported whole, once, with its events."""

from __future__ import annotations

import io
import json

import pytest

from server.importer import Summary, import_file
from store.sqlite import units
from store.sqlite.units import FEWEST, MOST, UNIT_SECONDS, UnitSize
from tests.server.test_import import call

pytestmark = pytest.mark.sqlite


async def test_a_batch_of_calls_is_written_in_units_each_call_once(store, ws_a, monkeypatch):
    prospect = await store.prospects.create(ws_a.id, {"email": "p@a.example"})
    lines = [call(ws_a, prospect["id"], n, providerCallSid=f"CA{n:032x}") for n in range(1000)]
    lines[500] = call(ws_a, prospect["id"], 500, userId="not-a-user")  # refused alone
    store.calls.unit_size = UnitSize(first=FEWEST)
    units_written: list[int] = []
    timed = units.timed

    def counted(conn, fn, workspace_id, calls, *rest):
        units_written.append(len(calls))
        return timed(conn, fn, workspace_id, calls, *rest)

    monkeypatch.setattr("store.sqlite.calls.timed", counted)
    summary = Summary("calls", ws_a.id, io.StringIO())
    text = "\n".join(json.dumps(line) for line in lines).encode()
    await import_file(store, "calls", ws_a.id, io.BytesIO(text), None, summary)
    # One batch of the import (1,000 lines, 999 valid), in ten units of the learned size.
    assert sum(units_written) == 999 and len(units_written) == 10
    assert (summary.created, summary.rejected) == (999, 1)
    page = await store.calls.page(ws_a.id, _window(1))
    assert page.total == 999
    created = await _call_events(store, ws_a.id)
    assert len(created) == 999 and len(set(created)) == 999  # one call.created per call

    # The same file again: each line found once, whichever unit it falls in.
    again = Summary("calls", ws_a.id, io.StringIO())
    await import_file(store, "calls", ws_a.id, io.BytesIO(text), None, again)
    assert (again.created, again.existing, again.rejected) == (0, 999, 1)
    assert len(await _call_events(store, ws_a.id)) == 999


def test_the_unit_size_follows_the_time_a_call_took():
    size = UnitSize(first=1000)
    spans = size.spans(5000)
    assert spans == [(0, 1000), (1000, 2000), (2000, 3000), (3000, 4000), (4000, 5000)]
    # 0.2 ms a call: UNIT_SECONDS hold 400 calls; four units timed move the size there.
    per_call = 0.0002
    starts = [n * 1000 * per_call for n in range(5)]
    size.learn(starts, spans)
    assert size.size == int(UNIT_SECONDS / per_call)
    # Fast units grow it, up to MOST; slow ones shrink it, down to FEWEST.
    for _ in range(20):
        size.learn([0.0, 1e-7], [(0, 1000), (1000, 2000)])
    assert size.size == MOST
    for _ in range(20):
        size.learn([0.0, 100.0], [(0, 1000), (1000, 2000)])
    assert size.size == FEWEST
    # One unit alone says nothing of its length.
    size.learn([0.0], [(0, 1000)])
    assert size.size == FEWEST
    assert UnitSize(first=300).spans(1000) == [(0, 334), (334, 668), (668, 1000)]
    assert UnitSize(first=5000).spans(10) == [(0, 10)]


def _window(size: int):
    from store.paging import Window

    return Window(size)


async def _call_events(store, workspace_id: str) -> list[str]:
    """The call ids of the workspace's call.created events (read in the file)."""

    def read(conn):
        rows = conn.execute(
            "SELECT resourceId FROM events WHERE workspaceId = ? AND type = 'call.created'",
            (workspace_id,),
        )
        return [row[0] for row in rows]

    return await store.engine.read(read)
