"""The demo data: deterministic, plausible, consistent, at a configurable scale, with a
progress bar; and the demo process serving it through every read endpoint."""

import datetime as dt
import io
import json
import re
import urllib.parse
import urllib.request
from collections import Counter

import pytest

from cli import build_parser
from demo.data import LONG_TIMELINE_CONTACT, MISSING_RECORDING_REF, Scale
from demo.seeding import ANCHOR_ENV, Progress, anchor, seed
from handlers import jsonio
from schemas import Schemas
from server.auth import KeyService
from server.config import ConfigError
from store.database import open_store
from tests.helpers import running_demo

# Moved anchors prove that nothing depends on today's date: a DST change in the team's zone
# (America/New_York) inside the 90 days, a leap day, a year boundary, and far in the future.
MOVED_ANCHORS = ["2027-03-20", "2028-03-01", "2030-01-01", "2041-11-05"]
SMALL = Scale(calls=400, prospects=80, timeline=300)
# Set by the store when written: store.lists, store.users, and when an activity was stored.
# A deleted user's updatedAt is its deletedAt (the others' equals their createdAt, compared).
WALL_CLOCK = {
    "lists": ["updatedAt"],
    "users": ["deletedAt", "updatedAt"],
    "activities": ["storedAt"],
}
# A call's stored fields that are no part of its record: the provider's reference, the content
# hash of its SID, and the recording retention sweep's claim (store/retention.py).
STORED_ONLY = (
    "_id",
    "workspaceId",
    "recordingRef",
    "contentHash",
    "recordingRetryAt",
    "recordingClaim",
    "recordingAttempts",
)


async def seeded(seed_value=7, scale=SMALL, now=None):
    store = open_store("memory", "demo")
    workspaces = await seed(
        store, KeyService("s" * 40, store.keys), seed=seed_value, now=now, scale=scale
    )
    return store, workspaces


def test_the_anchor_is_todays_utc_midnight_unless_moved():
    before = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    today = anchor({})
    after = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    assert today.time() == dt.time(0) and today.tzinfo is None
    assert today.date() in (before.date(), after.date())
    assert anchor({ANCHOR_ENV: "2031-02-28"}) == dt.datetime(2031, 2, 28)
    for bad in ("tomorrow", "2031-02-30", "2031-02-28T10:00:00Z"):
        with pytest.raises(ConfigError, match=ANCHOR_ENV):
            anchor({ANCHOR_ENV: bad})


async def snapshot(store) -> dict:
    data = {}
    for name in ("workspaces", "users", "lists", "prospects", "calls", "activities"):
        docs = await store.documents(name)
        for doc in docs:
            for field in WALL_CLOCK.get(name, []):
                doc.pop(field, None)
        data[name] = docs
    return data


async def test_the_same_seed_gives_the_same_data_and_another_seed_other_data():
    first, second, other = [await snapshot((await seeded(s))[0]) for s in (7, 7, 8)]
    assert first == second
    assert first["calls"] != other["calls"] and first["prospects"] != other["prospects"]
    assert len(first["calls"]) == 400 + 40 and len(first["prospects"]) == 80 + 20


@pytest.mark.parametrize("moved_to", [None, *MOVED_ANCHORS])
async def test_the_data_is_consistent_and_plausible(moved_to, monkeypatch):
    """With the anchor where it is today (None) and moved: seed() takes it from anchor()."""
    if moved_to:
        monkeypatch.setenv(ANCHOR_ENV, moved_to)
    else:
        monkeypatch.delenv(ANCHOR_ENV, raising=False)
    NOW = anchor()
    store, workspaces = await seeded()
    data = await snapshot(store)
    schemas = Schemas()
    first = workspaces[0]["id"]
    prospects = {p["_id"]: p for p in data["prospects"]}
    calls = data["calls"]
    assert {c["workspaceId"] for c in calls} == {w["id"] for w in workspaces}
    for call in calls:
        record = json.loads(
            jsonio.dumps(
                {
                    k: v
                    for k, v in call.items()
                    if k not in STORED_ONLY and not (k == "erasedAt" and v is None)
                }
                | {"id": call["_id"]}
            )
        )
        assert schemas.errors("/schemas/records/call.json", record) == []
        prospect = prospects[call["prospectId"]]
        assert prospect["workspaceId"] == call["workspaceId"]
        assert (call["toNumber"] if call["direction"] == "outbound" else call["fromNumber"]) == (
            prospect["phoneE164"]
        )
        assert NOW - dt.timedelta(days=90) <= call["startedAt"] <= call["endedAt"] < NOW
        assert call["createdAt"] == call["startedAt"] < call["updatedAt"] < NOW
        assert call["listId"] is None or call["listId"] in prospect["listIds"]
    refs = [c["recordingRef"] for c in calls if c["hasRecording"]]
    assert all(re.fullmatch(r"RE[0-9a-f]{32}", ref) for ref in refs)
    assert len(refs) == len(set(refs))
    missing = [c for c in calls if c["recordingRef"] == MISSING_RECORDING_REF]
    assert len(missing) == 1 and missing[0]["workspaceId"] == first
    assert missing[0]["hasRecording"] and missing[0]["recordingDurationSeconds"] is not None
    assert not any(c["recordingRef"] for c in calls if not c["hasRecording"])

    outbound = [c for c in calls if c["direction"] == "outbound"]
    dispositions = Counter(c["disposition"] for c in outbound)
    assert set(dispositions) == {
        "connected",
        "no_answer",
        "voicemail",
        "busy",
        "failed",
        "wrong_number",
    }
    assert 0.08 < dispositions["connected"] / len(outbound) < 0.3
    assert dispositions["no_answer"] == max(dispositions.values())
    assert any(c["meetingBooked"] for c in calls)
    assert {c["userId"] for c in calls} >= {
        u["_id"] for u in data["users"] if u["workspaceId"] == first
    }  # deleted one too

    for listing in data["lists"]:
        members = [p for p in data["prospects"] if listing["_id"] in p["listIds"]]
        assert listing["prospectsCount"] == len(members) > 0

    activities = data["activities"]
    assert {a["type"] for a in activities} == {
        "call",
        "note",
        "email",
        "list_added",
        "meeting_booked",
        "status_change",
    }
    assert Counter(a["type"] for a in activities)["call"] == len(calls)
    for activity in activities[:500]:
        record = json.loads(
            jsonio.dumps(
                {
                    "id": activity["_id"],
                    **{
                        k: activity[k]
                        for k in ("type", "occurredAt", "userId", "callId", "summary", "details")
                    },
                }
            )
        )
        assert schemas.errors("/schemas/records/activity.json", record) == []
    dana = [p for p in data["prospects"] if p.get("email") == LONG_TIMELINE_CONTACT["email"]]
    assert len(dana) == 1 and dana[0]["workspaceId"] == first
    assert sum(a["prospectId"] == dana[0]["_id"] for a in activities) > SMALL.timeline


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_appears_only_after_a_second():
    clock, stream = FakeClock(), io.StringIO()
    progress = Progress(100, stream=stream, clock=clock)
    progress.advance(30, "calls")
    assert stream.getvalue() == ""
    clock.now = 1.5
    for _ in range(7):
        progress.advance(10, "calls")
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("Seeding demo data [") and "40%" in lines[0]
    assert "100%" in lines[-1] and len(lines) == 7  # one line per tenth when not a terminal


def test_progress_redraws_in_place_on_a_terminal():
    clock, stream = FakeClock(), Terminal()
    progress = Progress(10, stream=stream, clock=clock)
    clock.now = 2
    progress.advance(5, "calls")
    clock.now = 2.01
    progress.advance(1, "calls")  # too soon to redraw
    clock.now = 3
    progress.advance(4, "calls")
    progress.close()
    text = stream.getvalue()
    assert text.count("\r") == 3 and text.endswith("done        \n") and "60%" not in text


def test_fast_seeding_shows_no_progress():
    stream = io.StringIO()
    progress = Progress(10, stream=stream)
    progress.advance(10, "calls")
    progress.close()
    assert stream.getvalue() == ""


def test_demo_scale_flags():
    args = build_parser().parse_args(
        ["demo", "--calls", "20000", "--prospects", "3000", "--timeline", "100000"]
    )
    assert (args.calls, args.prospects, args.timeline) == (20000, 3000, 100000)
    defaults = build_parser().parse_args(["demo"])
    assert (defaults.calls, defaults.prospects, defaults.timeline) == (5000, 500, 5000)
    for bad in (["--calls", "-1"], ["--prospects", "5"], ["--timeline", "many"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["demo", *bad])


@pytest.fixture
def small_demo(tmp_path, monkeypatch):
    """A demo process with its anchor moved (the process inherits the environment)."""
    monkeypatch.setenv(ANCHOR_ENV, "2029-03-25")  # the 90 days before cross a DST change
    with running_demo(tmp_path, "--calls", "300", "--prospects", "60", "--timeline", "200") as (
        _,
        keys,
        log,
    ):
        yield keys, log


def get(base, key, path):
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=20) as response:
        return json.loads(response.read())


def test_the_demo_serves_calls_prospects_timelines_and_metrics(small_demo):
    keys, log = small_demo
    base, key = keys["baseUrl"], keys["workspaces"][0]["apiKey"]
    calls = get(base, key, "/calls?pageSize=100")
    assert calls["total"] == 300 and len(calls["calls"]) == 100
    prospects = get(base, key, "/prospects")
    assert prospects["total"] == 60
    email = urllib.parse.quote(LONG_TIMELINE_CONTACT["email"])
    timeline = get(base, key, f"/prospect-activities?email={email}")
    assert len(timeline["activities"]) > 200
    # the calls started in the 90 days before the anchor (2029-03-25T00:00Z, the evening of
    # the 24th in New York); the local days cover them all and nothing else
    metrics = get(
        base,
        key,
        "/reporting/dialer-metrics?from=2028-12-24&to=2029-03-24&timezone=America/New_York",
    )
    outbound = get(base, key, "/calls?direction=outbound")["total"]
    assert metrics["totals"]["dials"] == outbound > 0
    assert len(metrics["byDay"]) == 91
    earlier = get(base, key, "/reporting/dialer-metrics?from=2028-01-01&to=2028-12-23")
    later = get(base, key, "/reporting/dialer-metrics?from=2029-03-25&to=2030-01-01")
    assert earlier["totals"]["dials"] == later["totals"]["dials"] == 0
    assert LONG_TIMELINE_CONTACT["email"] in log.read_text()  # the banner shows the timeline


def test_admin_commands_are_read_from_pipes_but_never_by_a_background_job(tmp_path):
    import io

    from demo.console import reads_commands

    assert reads_commands(None) is False
    closed = io.StringIO()
    closed.close()
    assert reads_commands(closed) is False
    with open(tmp_path / "commands", "w+") as pipe_like:
        assert reads_commands(pipe_like) is True
