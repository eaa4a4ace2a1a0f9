"""Live demo writes (`demo --live-calls-per-minute N`): calls that have just ended keep
arriving in every demo workspace while the demo runs, and now and then a call's notes change.

The writer reads the workspaces' users, prospects and newest calls from the store, and makes
the calls with demo.data.live_call; everything it writes goes through one `CallRecorder`,
which `live_writer` chooses. The recorder here writes to the store the demo serves from.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from typing import Any, Protocol

from demo.data import LIVE_NOTES, LIVE_NOTES_SHARE, live_call, meeting_activity
from store.clock import utcnow
from store.identity import normalize_phone
from store.paging import Window

log = logging.getLogger("workspace_api")


class CallRecorder(Protocol):
    """Where the live writer's calls go: every write of the writer is one of these two."""

    async def record(self, workspace_id: str, calls: list[dict]) -> list[str]:
        """Record calls that have just ended (demo.data.live_call's documents) with what they
        caused (a `meeting_booked` activity for a call that booked one); returns the ids the
        calls are known by from now on, in order."""
        ...

    async def change_notes(self, workspace_id: str, call_id: str, notes: str) -> None:
        """Change a recorded call's notes (which moves its updatedAt)."""
        ...


class StoreRecorder:
    """Records calls in the store itself: the calls with their `call` activities (the store
    writes those), and the meetings they booked."""

    def __init__(self, store: Any, rng: random.Random) -> None:
        self.store, self.rng = store, rng

    async def record(self, workspace_id: str, calls: list[dict]) -> list[str]:
        await self.store.calls.insert_documents(workspace_id, calls)
        meetings = [
            meeting_activity(self.rng, workspace_id, call)
            for call in calls
            if call["meetingBooked"]
        ]
        if meetings:
            await self.store.activities.insert_documents(workspace_id, meetings)
        return [call["_id"] for call in calls]

    async def change_notes(self, workspace_id: str, call_id: str, notes: str) -> None:
        await self.store.calls.change(workspace_id, call_id, {"notes": notes})


class LiveWriter:
    """Live demo writes: `per_minute` new calls a minute to each workspace, each with its
    `call` activity and, when it booked a meeting, its `meeting_booked` activity; after about
    one call in ten (LIVE_NOTES_SHARE), a recent call's notes change (which moves its
    updatedAt). Calls are written in batches when the rate is above what one write per tick
    can keep up with; the rate is kept on average, without drift."""

    TICK = 0.05  # shortest pause between writes, in seconds
    SAMPLE = 2000  # prospects (newest first) a workspace's live calls are made to
    RECENT = 500  # newest calls whose notes may change
    REFRESH = 60  # seconds between re-reads of the workspaces' users and prospects

    def __init__(
        self,
        store: Any,
        workspace_ids: list[str],
        per_minute: int,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        region: str = "US",
        recorder: CallRecorder | None = None,
    ) -> None:
        self.store, self.workspace_ids, self.per_minute = store, workspace_ids, per_minute
        self.region = region  # of phone numbers uploaded without +country
        self.rng = rng or random.Random()  # not the seed's stream: a kept file gets new ids
        self.recorder = recorder or StoreRecorder(store, self.rng)
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
    auth: Any,
    base_url: str,
    workspace_ids: list[str],
    per_minute: int,
    region: str = "US",
) -> LiveWriter:
    """The demo's live writer, made once the API serves at `base_url` (`.../v1`) with the keys
    of `auth` (a server.auth.KeyService). The choice of recorder is made here and nowhere
    else: a recorder that goes through the API would take its address and a key per
    workspace from these; the store recorder needs neither."""
    del auth, base_url  # the store recorder writes to `store` directly
    return LiveWriter(store, workspace_ids, per_minute, region=region)
