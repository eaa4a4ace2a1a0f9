"""Live demo writes (`demo --live-calls-per-minute N`): the writer recording through the API
as a dialer (POST /v1/calls, /v1/calls/batch, /v1/prospect-activities, PATCH /v1/calls/{id}
with an ingest key) on both tiers, and a real demo process whose calls keep arriving, followed
by a sync client on sort=updatedAt cursors."""

import datetime as dt
import json
import random
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from cli import build_parser
from demo.data import LIVE_CALL_WINDOW, MISSING_RECORDING_REF, Scale
from demo.live import ApiRecorder, LiveWriter
from demo.seeding import seed
from tests.helpers import Client, running_demo, walk_pages

pytestmark = pytest.mark.long


class Clock:
    """The recorder's clock, moved by the test: recordings are due when it says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def demo_workspaces(io_loop, store, auth):
    return io_loop.run_sync(
        lambda: seed(store, auth, seed=3, scale=Scale(calls=50, prospects=40, timeline=0))
    )


async def every_call(client: Client) -> dict[str, dict]:
    calls, _ = await walk_pages(client, "/v1/calls?pageSize=100", "calls")
    return {c["id"]: c for c in calls}


async def test_the_live_writer_records_calls_meetings_recordings_and_notes_through_the_api(
    origin, store, demo_workspaces
):
    clock = Clock()
    keys = {w["id"]: w["ingestApiKey"] for w in demo_workspaces}
    recorder = ApiRecorder(f"{origin}/v1", keys, random.Random(1), (5.0, 5.0), clock)
    writer = LiveWriter(store, list(keys), 600, recorder, rng=random.Random(1))
    readers = {w["id"]: Client(origin, w["readOnlyApiKey"]) for w in demo_workspaces}
    before = {wid: await every_call(client) for wid, client in readers.items()}
    await writer.prepare()
    started = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    await writer.write(101)  # a batch and a single call each
    recorded = {
        wid: {c["id"]: c for c in (await every_call(r)).values()} for wid, r in readers.items()
    }
    await recorder.later()  # nothing is due yet: the recordings come later
    assert recorder.pending and recorded == {
        wid: await every_call(client) for wid, client in readers.items()
    }
    clock.now = 5.0
    await recorder.later()
    assert not recorder.pending
    for wid, client in readers.items():
        calls = await every_call(client)
        new = [c for c in calls.values() if c["id"] not in before[wid]]
        assert len(new) == 101  # GET /v1/calls shows every call the dialer recorded
        assert {c["id"] for c in new} == set(writer.recent[wid]) & {c["id"] for c in new}
        for call in new:  # a call is stored when it ends; it started at most 10 minutes before
            created = dt.datetime.fromisoformat(call["createdAt"][:-1])
            ended = dt.datetime.fromisoformat(call["endedAt"][:-1])
            updated = dt.datetime.fromisoformat(call["updatedAt"][:-1])
            assert call["createdAt"] == call["startedAt"] and created <= ended <= updated
            assert created >= started - LIVE_CALL_WINDOW - dt.timedelta(seconds=1)
            assert updated >= started - dt.timedelta(milliseconds=1)
        # Recordings arrived after their calls, by PATCH: each moved its call's updatedAt.
        with_recording = [c for c in new if c["hasRecording"]]
        assert with_recording and any(c["meetingBooked"] for c in new)
        for call in with_recording:
            first = recorded[wid][call["id"]]
            assert not first["hasRecording"] and first["recordingDurationSeconds"] is None
            assert call["updatedAt"] > first["updatedAt"] and call["recordingDurationSeconds"]
            ref = await store.calls.recording_ref(wid, call["id"])
            assert ref and ref.startswith("RE") and ref != MISSING_RECORDING_REF
        assert all(not c["hasRecording"] for c in new if c["answeredAt"] is None)
        # New calls land behind the newest ones: not every one is newer than all before it.
        newest = max(c["createdAt"] for c in new)
        assert any(c["createdAt"] < newest for c in new)
        changed = [
            c
            for cid, c in calls.items()
            if cid in before[wid] and c["notes"] != before[wid][cid]["notes"]
        ]
        changed += [c for c in new if c["notes"] and c["notes"].startswith("Called back: ")]
        assert changed and all(c["notes"].startswith("Called back: ") for c in changed)
        meeting = next(c for c in new if c["meetingBooked"])
        timeline = (
            await client.get(f"/v1/prospect-activities?prospectId={meeting['prospectId']}")
        ).json()["activities"]
        kinds = {(a["type"], a["callId"]) for a in timeline}
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
    """A recorder that keeps what it is given and passes it on to the API recorder."""

    def __init__(self, inner: ApiRecorder):
        self.inner = inner
        self.calls: list[dict] = []
        self.notes: list[tuple[str, str, str]] = []

    async def record(self, workspace_id, calls):
        self.calls += calls
        return await self.inner.record(workspace_id, calls)

    async def change_notes(self, workspace_id, call_id, notes):
        self.notes.append((workspace_id, call_id, notes))
        await self.inner.change_notes(workspace_id, call_id, notes)

    async def later(self):
        await self.inner.later()


async def test_every_write_of_the_live_writer_goes_through_its_recorder(
    origin, store, demo_workspaces
):
    ids = [w["id"] for w in demo_workspaces]
    reads_only = type("Store", (), {})()
    for part in ("users", "prospects", "calls", "activities"):
        setattr(reads_only, part, ReadsOnly(getattr(store, part)))
    rng = random.Random(2)
    keys = {w["id"]: w["ingestApiKey"] for w in demo_workspaces}
    recorder = Recording(ApiRecorder(f"{origin}/v1", keys, rng, (0.0, 0.0)))
    writer = LiveWriter(reads_only, ids, 600, recorder, rng=rng)
    await writer.prepare()
    await writer.write(100)
    await recorder.later()
    assert sorted(c["workspaceId"] for c in recorder.calls) == sorted(ids * 100)
    assert recorder.notes  # about one call in ten changes a recent call's notes
    last = {(wid, call_id): notes for wid, call_id, notes in recorder.notes}
    for w in demo_workspaces:
        stored = await every_call(Client(origin, w["readOnlyApiKey"]))
        for (wid, call_id), notes in last.items():
            if wid == w["id"]:
                assert call_id in writer.recent[wid] and notes.startswith("Called back: ")
                assert stored[call_id]["notes"] == notes
        # The ids the recorder returned (the API's) are the ones the writer changes notes of.
        assert len(set(writer.recent[w["id"]]) & set(stored)) == len(writer.recent[w["id"]])


async def test_the_ingest_key_is_all_the_live_writer_holds(origin, store, demo_workspaces):
    """A key without the ingest scope cannot record: the writer's writes are the API's."""
    keys = {w["id"]: w["apiKey"] for w in demo_workspaces}  # read and write, not ingest
    recorder = ApiRecorder(f"{origin}/v1", keys, random.Random(3), (0.0, 0.0))
    writer = LiveWriter(store, list(keys), 600, recorder, rng=random.Random(3))
    await writer.prepare()
    with pytest.raises(Exception, match="403 insufficient_scope"):
        await writer.write(1)


def test_demo_help_shows_the_live_and_settle_options_with_defaults():
    shown = subprocess.run(
        [sys.executable, "-m", "cli", "demo", "--help"],
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
        "1200",
        "--sync-settle-seconds",
        "1",
    ) as (_, keys, log):
        base, key = keys["baseUrl"], keys["workspaces"][0]["readOnlyApiKey"]
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
        bare, recorded_later = set(), set()  # new calls first seen without their recording
        deadline = time.monotonic() + 40
        while not (len(new) >= 20 and changed and recorded_later):
            assert time.monotonic() < deadline, (len(new), changed, recorded_later)
            time.sleep(0.2)
            asked = dt.datetime.now(dt.UTC)
            page = get(f"{base}/calls?cursor={cursor}&pageSize=100", key)
            answered = dt.datetime.now(dt.UTC)
            for call in page["calls"]:
                updated = dt.datetime.fromisoformat(call["updatedAt"].replace("Z", "+00:00"))
                assert updated <= answered - dt.timedelta(seconds=1)  # settled for 1 s
                ages.append((asked - updated).total_seconds())
                (changed if call["id"] in known else new).add(call["id"])
                if call["id"] in bare and call["hasRecording"]:
                    recorded_later.add(call["id"])  # PATCHed with its recording
                if call["id"] not in known and call["answeredAt"] and not call["hasRecording"]:
                    bare.add(call["id"])
                synced[call["id"]] = call
            cursor = page["nextCursor"]
        assert min(ages) < 4  # --sync-settle-seconds 1, not the default 5
        # A recording attached later plays from the provider.
        request = urllib.request.Request(
            f"{base}/calls/{sorted(recorded_later)[0]}/recording",
            headers={"Authorization": f"Bearer {key}"},
        )
        with urllib.request.urlopen(request, timeout=20) as response:
            assert response.status == 200 and response.read(2) == b"\xff\xfb"  # MP3
        total = get(f"{base}/calls?pageSize=50", key)["total"]
        # The API holds every call the client synced, and the client every call that existed
        # at the start (seeded ones included) and each new one.
        assert total >= len(synced) == len(known) + len(new) and len(synced) >= first
        # What the sync client holds is what the API holds, call by call.
        fresh = {c["id"]: c for c in get(f"{base}/calls?pageSize=100", key)["calls"]}
        for call_id in new & set(fresh):
            if fresh[call_id]["updatedAt"] == synced[call_id]["updatedAt"]:
                assert fresh[call_id] == synced[call_id]
        other = keys["workspaces"][1]["readOnlyApiKey"]  # every workspace gets live calls
        assert get(f"{base}/calls?pageSize=50", other)["total"] > 10
        text = log.read_text()
        assert "new calls a minute" in text
        # Written through the API: its access log shows the dialer's writes.
        writes = {
            (line["method"], re.sub(r"[0-9a-f-]{36}", "{id}", line["path"]), line["status"])
            for line in map(json.loads, re.findall(r"^\{.*\}$", text, re.M))
            if line.get("method") in ("POST", "PATCH")
        }
        assert {("POST", "/v1/calls", 201), ("PATCH", "/v1/calls/{id}", 200)} <= writes
        assert {w for w in writes if w[2] >= 300} == set(), writes


def test_a_live_demo_via_the_provider_records_its_calls_from_signed_callbacks(
    tmp_path, monkeypatch
):
    """`--live-via provider`: the live calls are placed through the simulated provider and
    recorded by its callbacks alone (the access log shows no POST /v1/calls), recordings
    included; the keys file's provider credentials sign a callback by hand."""
    from twilio.request_validator import RequestValidator

    monkeypatch.setenv("WSAPI_DEMO_PROVIDER_PACE", "0.01")  # a 5-minute call in 3 s
    with running_demo(
        tmp_path,
        "--calls",
        "20",
        "--prospects",
        "20",
        "--timeline",
        "0",
        "--live-calls-per-minute",
        "600",
        "--live-via",
        "provider",
    ) as (_, keys, log):
        base, key = keys["baseUrl"], keys["workspaces"][0]["readOnlyApiKey"]
        assert set(keys["provider"]) == {"accountSid", "authToken"}
        seeded = get(f"{base}/calls?pageSize=100", key)
        first = seeded["total"]
        assert not seeded["hasMore"]  # every seeded call (and any live one already there)
        # The live calls are the ones that come after: by id, not by time (a call's startedAt is
        # its ringing's start, which the provider's timeline puts up to minutes before it ends).
        before = {c["id"] for c in seeded["calls"]}
        # A recording's callback follows its call's final status: on a busy machine, later.
        deadline = time.monotonic() + 180
        while True:
            calls = get(f"{base}/calls?pageSize=100", key)["calls"]
            live = [c for c in calls if c["id"] not in before]
            dispositions = {c["disposition"] for c in live}
            if len(live) >= 10 and any(c["hasRecording"] for c in live) and len(dispositions) > 1:
                break
            assert time.monotonic() < deadline, (len(live), dispositions, log.read_text()[-3000:])
            time.sleep(0.3)
        assert get(f"{base}/calls?pageSize=50", key)["total"] > first
        recorded = next(c for c in live if c["hasRecording"])
        request = urllib.request.Request(
            f"{base}/calls/{recorded['id']}/recording", headers={"Authorization": f"Bearer {key}"}
        )
        with urllib.request.urlopen(request, timeout=20) as response:
            assert response.status == 200 and response.read(2) == b"\xff\xfb"  # MP3

        # A callback signed by hand with the keys file's credentials is accepted.
        workspace = keys["workspaces"][0]
        users = get(f"{base}/users", workspace["readOnlyApiKey"])["users"]
        url = f"{base}/provider/callbacks/{workspace['id']}/status?userId={users[0]['id']}"
        params = {
            "AccountSid": keys["provider"]["accountSid"],
            "CallSid": "CA" + "d1" * 16,
            "CallStatus": "busy",
            "Direction": "outbound-api",
            "From": "+12125550142",
            "To": "+14155550199",
        }
        signature = RequestValidator(keys["provider"]["authToken"]).compute_signature(url, params)
        request = urllib.request.Request(
            url,
            data=urllib.parse.urlencode(params).encode(),
            headers={
                "Content-Type": "application/x-www-form-urlencoded",
                "X-Twilio-Signature": signature,
            },
        )
        with urllib.request.urlopen(request, timeout=20) as response:
            assert response.status == 204
        text = log.read_text()
        writes = {
            (line["method"], re.sub(r"[0-9a-f-]{36}", "{id}", line["path"]), line["status"])
            for line in map(json.loads, re.findall(r"^\{.*\}$", text, re.M))
            if line.get("method") == "POST"
        }
        assert ("POST", "/v1/provider/callbacks/{id}/status", 204) in writes
        assert ("POST", "/v1/provider/callbacks/{id}/recording", 204) in writes
        assert not any(path == "/v1/calls" for _, path, _ in writes)  # no dialer posts
