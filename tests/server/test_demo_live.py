"""Live demo writes (`demo --live-calls-per-minute N`): the writer on a store, and a real demo
process whose calls keep arriving, followed by a sync client on sort=updatedAt cursors."""

import datetime as dt
import json
import random
import re
import subprocess
import sys
import time
import urllib.request

import pytest

from demo.data import LIVE_CALL_WINDOW, MISSING_RECORDING_REF, Scale
from demo.live import LiveWriter, StoreRecorder
from demo.seeding import seed
from server.auth import KeyService
from server.cli import build_parser
from store.database import open_store
from store.paging import Window
from tests.helpers import running_demo


async def test_the_live_writer_adds_recent_calls_meetings_recordings_and_notes_changes():
    store = open_store("memory", "live")
    workspaces = await seed(
        store,
        KeyService("s" * 40, store.keys),
        seed=3,
        scale=Scale(calls=50, prospects=40, timeline=0),
    )
    ids = [w["id"] for w in workspaces]
    before = {
        wid: {c["id"]: c for c in (await store.calls.page(wid, Window(500, 1))).items}
        for wid in ids
    }
    writer = LiveWriter(store, ids, 600, rng=random.Random(1))
    await writer.prepare()
    started = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    await writer.write(400)
    for wid in ids:
        calls = (await store.calls.page(wid, Window(1000, 1))).items
        new = [c for c in calls if c["id"] not in before[wid]]
        assert len(new) == 400
        for call in new:  # a call is stored when it ends; it started at most 10 minutes before
            assert call["updatedAt"] >= started - dt.timedelta(milliseconds=1)
            assert call["createdAt"] == call["startedAt"] <= call["endedAt"] <= call["updatedAt"]
            assert call["updatedAt"] - call["createdAt"] <= LIVE_CALL_WINDOW
        assert any(c["hasRecording"] for c in new) and any(c["meetingBooked"] for c in new)
        # New calls land behind the newest ones: not every one is newer than all before it.
        newest = max(c["createdAt"] for c in new)
        assert any(c["createdAt"] < newest for c in new)
        refs = {
            c["id"]: await store.calls.recording_ref(wid, c["id"]) for c in new if c["hasRecording"]
        }
        assert all(ref and ref != MISSING_RECORDING_REF for ref in refs.values())
        changed = [
            c
            for c in calls
            if c["id"] in before[wid] and c["notes"] != before[wid][c["id"]]["notes"]
        ]
        changed += [c for c in new if c["notes"] and c["notes"].startswith("Called back: ")]
        assert changed and all(
            c["updatedAt"] >= started - dt.timedelta(milliseconds=1) for c in changed
        )
        meeting = next(c for c in new if c["meetingBooked"])
        kinds = {
            (a["type"], a["callId"])
            async for batch in store.activities.timeline(wid, meeting["prospectId"])
            for a in batch
        }
        assert {("call", meeting["id"]), ("meeting_booked", meeting["id"])} <= kinds


class ReadsOnly:
    """A store part that lets the live writer read (users, prospects, calls) and nothing else."""

    READS = ("list_active", "page")

    def __init__(self, part):
        self.part = part

    def __getattr__(self, name):
        assert name in self.READS, f"the live writer used store.{name} past its recorder"
        return getattr(self.part, name)


class Recording:
    """A recorder that keeps what it is given and records it in the store."""

    def __init__(self, store, rng):
        self.inner = StoreRecorder(store, rng)
        self.calls: list[dict] = []
        self.notes: list[tuple[str, str, str]] = []

    async def record(self, workspace_id, calls):
        self.calls += calls
        return await self.inner.record(workspace_id, calls)

    async def change_notes(self, workspace_id, call_id, notes):
        self.notes.append((workspace_id, call_id, notes))
        await self.inner.change_notes(workspace_id, call_id, notes)


async def test_every_write_of_the_live_writer_goes_through_its_recorder():
    store = open_store("memory", "live")
    workspaces = await seed(
        store,
        KeyService("s" * 40, store.keys),
        seed=5,
        scale=Scale(calls=30, prospects=30, timeline=0),
    )
    ids = [w["id"] for w in workspaces]
    reads_only = type("Store", (), {})()
    for part in ("users", "prospects", "calls", "activities"):
        setattr(reads_only, part, ReadsOnly(getattr(store, part)))
    rng = random.Random(2)
    recorder = Recording(store, rng)
    writer = LiveWriter(reads_only, ids, 600, rng=rng, recorder=recorder)
    await writer.prepare()
    await writer.write(100)
    assert sorted(c["workspaceId"] for c in recorder.calls) == sorted(ids * 100)
    assert recorder.notes  # about one call in ten changes a recent call's notes
    last = {(wid, call_id): notes for wid, call_id, notes in recorder.notes}
    for (wid, call_id), notes in last.items():
        assert call_id in writer.recent[wid] and notes.startswith("Called back: ")
        stored = {c["id"]: c for c in (await store.calls.page(wid, Window(1000, 1))).items}
        assert stored[call_id]["notes"] == notes
    for wid in ids:  # the ids the recorder returned are the ones the writer changes notes of
        newest = {c["_id"] for c in recorder.calls if c["workspaceId"] == wid}
        assert newest <= set(writer.recent[wid])


def test_demo_help_shows_the_live_and_settle_options_with_defaults():
    shown = subprocess.run(
        [sys.executable, "-m", "server.cli", "demo", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    text = " ".join(shown.split())
    assert re.search(r"--live-calls-per-minute N [^-]*\(default: 0\)", text)
    assert re.search(r"--sync-settle-seconds N [^-]*\$WSAPI_SYNC_SETTLE_SECONDS, 5\)", text)
    args = build_parser().parse_args(["demo"])
    assert args.live_calls_per_minute == 0 and args.sync_settle_seconds is None
    args = build_parser().parse_args(
        ["demo", "--live-calls-per-minute", "600", "--sync-settle-seconds", "0.5"]
    )
    assert (args.live_calls_per_minute, args.sync_settle_seconds) == (600, 0.5)
    for bad in (["--live-calls-per-minute", "-1"], ["--sync-settle-seconds", "soon"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["demo", *bad])


def get(url, key):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=20) as response:
        return json.loads(response.read())


def test_a_live_demo_keeps_adding_calls_that_a_sync_client_follows(tmp_path):
    with running_demo(
        tmp_path,
        "--calls",
        "100",
        "--prospects",
        "40",
        "--timeline",
        "0",
        "--live-calls-per-minute",
        "600",
        "--sync-settle-seconds",
        "1",
    ) as (_, keys, log):
        base, key = keys["baseUrl"], keys["workspaces"][0]["apiKey"]
        first = get(f"{base}/calls?pageSize=50", key)["total"]
        synced, cursor = {}, None
        url = f"{base}/calls?sort=updatedAt&pageSize=100"
        while True:  # the first full pass
            page = get(url, key)
            synced.update((c["id"], c) for c in page["calls"])
            cursor = page["nextCursor"]
            assert cursor  # the sync order always says where to resume
            url = f"{base}/calls?cursor={cursor}&pageSize=100"
            if not page["hasMore"]:
                break
        # Not every seeded call needs to be in the first pass: one whose notes the live writer
        # changed within the last second is not settled yet, and comes with a later poll (every
        # call counted in `first` is checked for below).
        assert len(synced) >= 90
        known, new, changed, ages = set(synced), set(), set(), []
        deadline = time.monotonic() + 60
        while not (len(new) >= 20 and changed) and time.monotonic() < deadline:
            time.sleep(0.5)
            asked = dt.datetime.now(dt.UTC)
            page = get(f"{base}/calls?cursor={cursor}&pageSize=100", key)
            answered = dt.datetime.now(dt.UTC)
            for call in page["calls"]:
                updated = dt.datetime.fromisoformat(call["updatedAt"].replace("Z", "+00:00"))
                assert updated <= answered - dt.timedelta(seconds=1)  # settled for 1 s
                ages.append((asked - updated).total_seconds())
                (changed if call["id"] in known else new).add(call["id"])
                synced[call["id"]] = call
            cursor = page["nextCursor"]
        assert len(new) >= 20, log.read_text()
        assert min(ages) < 4  # --sync-settle-seconds 1, not the default 5
        assert changed  # a notes change brings a known call back with its new content
        total = get(f"{base}/calls?pageSize=50", key)["total"]
        # The API holds every call the client synced, and the client every call that existed
        # at the start (seeded ones included) and each new one.
        assert total >= len(synced) == len(known) + len(new) and len(synced) >= first
        # What the sync client holds is what the API holds, call by call.
        fresh = {c["id"]: c for c in get(f"{base}/calls?pageSize=100", key)["calls"]}
        for call_id in new & set(fresh):
            if fresh[call_id]["updatedAt"] == synced[call_id]["updatedAt"]:
                assert fresh[call_id] == synced[call_id]
        other = keys["workspaces"][1]["apiKey"]  # every workspace gets live calls
        assert get(f"{base}/calls?pageSize=50", other)["total"] > 10
        assert "new calls a minute" in log.read_text()
