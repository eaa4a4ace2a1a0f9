"""Live demo writes (`demo --live-calls-per-minute N`): calls that have just ended keep
arriving in every demo workspace while the demo runs, their recordings follow a few seconds
later, and now and then a call's notes change.

The writer reads the workspaces' users, prospects and newest calls from the store, and makes
the calls with demo.data.live_call; everything it writes goes through one `CallRecorder`. The
demo's recorder (`ApiRecorder`) is a dialer: it records over HTTP, with each workspace's
`ingest` key, through POST /v1/calls (or /v1/calls/batch), POST /v1/prospect-activities and
PATCH /v1/calls/{id}, so the live data takes the same path and rules as any dialer's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import logging
import random
import time
from collections.abc import Callable
from typing import Any, Protocol

from tornado.httpclient import AsyncHTTPClient

from demo.data import LIVE_NOTES, LIVE_NOTES_SHARE, live_call
from demo.timelines import meeting_activity
from store.clock import utcnow
from store.identity import normalize_phone
from store.paging import Window

log = logging.getLogger("workspace_api")

# Seconds after a call is recorded until the provider has finished its recording (the demo's
# recorder attaches it then, with PATCH).
RECORDING_DELAY = (2.0, 10.0)


class CallRecorder(Protocol):
    """Where the live writer's calls go: every write of the writer is one of these."""

    async def record(self, workspace_id: str, calls: list[dict]) -> list[str]:
        """Record calls that have just ended (demo.data.live_call's documents) with what they
        caused (a `meeting_booked` activity for a call that booked one); returns the ids the
        calls are known by from now on, in order."""
        ...

    async def change_notes(self, workspace_id: str, call_id: str, notes: str) -> None:
        """Change a recorded call's notes (which moves its updatedAt)."""
        ...

    async def later(self) -> None:
        """The writes that come some time after a call: the recordings the provider has
        finished since (the writer calls this on every tick)."""
        ...


class LiveWriteFailed(Exception):
    """The API refused or failed a live write (its status and problem code, never a key)."""


def instant(value: dt.datetime) -> str:
    """A naive UTC instant as the API's request bodies take it."""
    return value.isoformat(timespec="milliseconds") + "Z"


def call_body(call: dict, sid: str) -> dict:
    """The POST /v1/calls body of a live call document, as the dialer that made it would send
    it (its recording comes later)."""
    return {
        "userId": call["userId"],
        "prospectId": call["prospectId"],
        "listId": call["listId"],
        "direction": call["direction"],
        "disposition": call["disposition"],
        "fromNumber": call["fromNumber"],
        "toNumber": call["toNumber"],
        "startedAt": instant(call["startedAt"]),
        "answeredAt": instant(call["answeredAt"]) if call["answeredAt"] else None,
        "endedAt": instant(call["endedAt"]),
        "meetingBooked": call["meetingBooked"],
        "notes": call["notes"],
        "providerCallSid": sid,
    }


def meeting_body(meeting: dict, call_id: str) -> dict:
    """The POST /v1/prospect-activities body of a `meeting_booked` activity document."""
    return {
        "prospectId": meeting["prospectId"],
        "type": "meeting_booked",
        "occurredAt": instant(meeting["occurredAt"]),
        "userId": meeting["userId"],
        "summary": meeting["summary"],
        "details": {"scheduledFor": instant(meeting["details"]["scheduledFor"])},
        "callId": call_id,
    }


@dataclasses.dataclass
class PendingRecording:
    due: float  # on the recorder's clock
    workspace_id: str
    call_id: str
    ref: str
    seconds: int


class ApiRecorder:
    """Records calls as a dialer does, over HTTP at `base_url` (`.../v1`) with each
    workspace's ingest key (`keys`: workspace id -> key): a call (or up to BATCH of them in
    one POST /v1/calls/batch) with its provider SID, so that a retry records it once; the
    meeting it booked with POST /v1/prospect-activities; its recording `recording_delay`
    seconds later with PATCH /v1/calls/{id}; a notes change with PATCH."""

    BATCH = 100  # calls per POST /v1/calls/batch, its limit

    def __init__(
        self,
        base_url: str,
        keys: dict[str, str],
        rng: random.Random,
        recording_delay: tuple[float, float] = RECORDING_DELAY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base_url, self.keys, self.rng = base_url.rstrip("/"), keys, rng
        self.recording_delay, self.clock = recording_delay, clock
        self.pending: list[PendingRecording] = []
        self.client = AsyncHTTPClient()

    async def send(self, method: str, path: str, workspace_id: str, body: dict) -> dict:
        """One request with the workspace's ingest key; its JSON answer, or LiveWriteFailed."""
        response = await self.client.fetch(
            self.base_url + path,
            method=method,
            headers={
                "Authorization": f"Bearer {self.keys[workspace_id]}",
                "Content-Type": "application/json",
            },
            body=json.dumps(body),
            request_timeout=60,
            raise_error=False,
        )
        if response.code not in (200, 201):
            code = ""
            if response.body:
                with contextlib.suppress(ValueError):
                    code = json.loads(response.body).get("code", "")
            raise LiveWriteFailed(f"{method} {path.split('/')[1]}: {response.code} {code}")
        return json.loads(response.body)

    async def record(self, workspace_id: str, calls: list[dict]) -> list[str]:
        ids: list[str] = []
        for start in range(0, len(calls), self.BATCH):
            chunk = calls[start : start + self.BATCH]
            bodies = [call_body(call, f"CA{self.rng.getrandbits(128):032x}") for call in chunk]
            if len(bodies) == 1:
                answer = await self.send("POST", "/calls", workspace_id, bodies[0])
                recorded = [answer["call"]["id"]]
            else:
                answer = await self.send("POST", "/calls/batch", workspace_id, {"calls": bodies})
                recorded = [result["callId"] for result in answer["results"]]
            ids += recorded
            for call, call_id in zip(chunk, recorded, strict=True):
                if call["meetingBooked"]:
                    meeting = meeting_activity(self.rng, workspace_id, call)
                    body = meeting_body(meeting, call_id)
                    await self.send("POST", "/prospect-activities", workspace_id, body)
                if call["recordingRef"]:
                    due = self.clock() + self.rng.uniform(*self.recording_delay)
                    self.pending.append(
                        PendingRecording(
                            due,
                            workspace_id,
                            call_id,
                            call["recordingRef"],
                            call["recordingDurationSeconds"],
                        )
                    )
        return ids

    async def change_notes(self, workspace_id: str, call_id: str, notes: str) -> None:
        await self.send("PATCH", f"/calls/{call_id}", workspace_id, {"notes": notes})

    async def later(self) -> None:
        """Attach every recording whose time has come; one that fails is logged and dropped
        (its call stays without a recording)."""
        now = self.clock()
        due = [p for p in self.pending if p.due <= now]
        if not due:
            return
        self.pending = [p for p in self.pending if p.due > now]
        for recording in due:
            body = {"recordingSid": recording.ref, "recordingDurationSeconds": recording.seconds}
            try:
                await self.send(
                    "PATCH", f"/calls/{recording.call_id}", recording.workspace_id, body
                )
            except Exception as exc:  # the demo goes on; the reference never reaches a log
                log.warning("live demo writes: a recording was not attached (%s)", exc)


class LiveWriter:
    """Live demo writes: `per_minute` new calls a minute to each workspace, each with, when it
    booked a meeting, its `meeting_booked` activity, and its recording later; after about one
    call in ten (LIVE_NOTES_SHARE), a recent call's notes change (which moves its updatedAt).
    Calls are written in batches when the rate is above what one write per tick can keep up
    with; the rate is kept on average, without drift. Every write goes through `recorder`."""

    TICK = 0.05  # shortest pause between writes, in seconds
    SAMPLE = 2000  # prospects (newest first) a workspace's live calls are made to
    RECENT = 500  # newest calls whose notes may change
    REFRESH = 60  # seconds between re-reads of the workspaces' users and prospects

    def __init__(
        self,
        store: Any,
        workspace_ids: list[str],
        per_minute: int,
        recorder: CallRecorder,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        region: str = "US",
    ) -> None:
        self.store, self.workspace_ids, self.per_minute = store, workspace_ids, per_minute
        self.region = region  # of phone numbers uploaded without +country
        self.rng = rng or random.Random()  # not the seed's stream: a kept file gets new ids
        self.recorder = recorder
        self.clock = clock
        self.people: dict[str, tuple[list[dict], list[dict]]] = {}
        self.recent: dict[str, list[str]] = {}
        self.written = 0  # calls per workspace so far

    async def prepare(self) -> None:
        """Read each workspace's active users, a sample of its prospects with a phone number
        and its newest calls; a workspace without users or such prospects gets no live calls."""
        for wid in self.workspace_ids:
            users = await self.store.users.list_active(wid)
            page = await self.store.prospects.page(wid, Window(self.SAMPLE, page=None))
            prospects = [
                {**p, "phoneNumber": phone}
                for p in page.items
                if (phone := normalize_phone(p["phoneNumber"], self.region))
            ]
            if users and prospects:
                self.people[wid] = users, prospects
            else:
                self.people.pop(wid, None)
            calls = await self.store.calls.page(wid, Window(self.RECENT, page=None))
            self.recent[wid] = [call["id"] for call in calls.items]

    async def write(self, count: int) -> None:
        """Write `count` new calls to every workspace (and their side effects)."""
        rng = self.rng
        for wid, (users, prospects) in self.people.items():
            calls = [live_call(rng, wid, users, prospects, utcnow()) for _ in range(count)]
            recent = self.recent[wid]
            recent.extend(await self.recorder.record(wid, calls))
            del recent[: -self.RECENT]
            for _ in range(count):
                if rng.random() < LIVE_NOTES_SHARE and recent:
                    await self.recorder.change_notes(
                        wid, rng.choice(recent), rng.choice(LIVE_NOTES)
                    )

    async def run(self) -> None:
        """Write until cancelled. A failed write is logged and the writer goes on."""
        try:
            await self.prepare()
        except Exception:  # the demo itself goes on
            log.exception("live demo writes: reading the workspaces failed; none are written")
            return
        if not self.people or self.per_minute <= 0:
            return
        log.info(
            "live demo writes: %d new calls a minute in each of %d workspaces",
            self.per_minute,
            len(self.people),
        )
        interval = 60 / self.per_minute
        started = refreshed = self.clock()
        while True:
            if self.clock() - refreshed >= self.REFRESH:  # users and prospects added meanwhile
                refreshed = self.clock()
                try:
                    await self.prepare()
                except Exception:
                    log.exception("live demo writes: reading the workspaces failed")
            try:
                await self.recorder.later()
            except Exception:  # a live write must never end the demo
                log.exception("live demo writes: later writes failed")
            due = int((self.clock() - started) / interval) + 1 - self.written
            if due > 0:
                due = min(due, 1000)  # far behind (a stalled disk): catch up in steps
                try:
                    await self.write(due)
                except Exception:  # a live write must never end the demo
                    log.exception("live demo write failed")
                    await asyncio.sleep(1)
                self.written += due
            pause = started + self.written * interval - self.clock()
            await asyncio.sleep(max(pause, self.TICK))


def live_writer(
    store: Any,
    base_url: str,
    workspaces: list[dict],
    per_minute: int,
    region: str = "US",
    recording_delay: tuple[float, float] = RECORDING_DELAY,
) -> LiveWriter:
    """The demo's live writer, made once the API serves at `base_url` (`.../v1`): it reads
    from `store` and writes through the API as a dialer, with each workspace's
    `ingestApiKey` (`workspaces`: the keys file's entries)."""
    rng = random.Random()  # not the seed's stream: a kept file gets new ids
    keys = {w["id"]: w["ingestApiKey"] for w in workspaces}
    recorder = ApiRecorder(base_url, keys, rng, recording_delay)
    return LiveWriter(store, list(keys), per_minute, recorder, rng=rng, region=region)
