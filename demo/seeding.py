"""Seeding the demo workspaces: the data of demo/data.py written through the store, at the
scale of `--calls`, `--prospects` and `--timeline`, with a progress bar on stderr when it takes
more than a second. The same seed (and scale) on the same anchor day always gives the same data.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TextIO

from demo.data import (
    MISSING_RECORDING_REF,
    WORKSPACES,
    Scale,
    build_calls,
    build_prospects,
    demo_uuid,
    user_email,
    user_name,
)
from demo.timelines import build_timelines, call_timeline, long_timeline
from server.config import ConfigError

WRITE_BATCH = 5000
# From this many calls on, the seeding builds the indexes of calls and activities at the end.
BULK_LOAD_CALLS = 100_000
ANCHOR_ENV = "WSAPI_DEMO_ANCHOR"

Insert = Callable[[str, list[dict]], Awaitable[Any]]


def anchor(environ: Mapping[str, str] | None = None) -> dt.datetime:
    """The instant the demo data is anchored at (naive UTC): midnight UTC of the day in
    WSAPI_DEMO_ANCHOR (YYYY-MM-DD) when set, otherwise of today. The calls cover the 90 days
    before it; tests move it to prove that nothing depends on today's date."""
    environ = os.environ if environ is None else environ
    value = environ.get(ANCHOR_ENV, "").strip()
    if not value:
        return dt.datetime.now(dt.UTC).replace(
            tzinfo=None, hour=0, minute=0, second=0, microsecond=0
        )
    try:
        day = dt.date.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"{ANCHOR_ENV} must be a date, YYYY-MM-DD: {value!r}") from None
    return dt.datetime(day.year, day.month, day.day)


class Progress:
    """A progress bar on `stream` that appears only once the work has taken over `delay`
    seconds: redrawn in place (at most 10 times a second) on a terminal, a line per tenth
    otherwise."""

    def __init__(
        self,
        total: int,
        stream: TextIO | None = None,
        delay: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        width: int = 30,
    ) -> None:
        self.total, self.done, self.width = max(total, 1), 0, width
        self.stream = stream if stream is not None else sys.stderr
        self.delay, self.clock = delay, clock
        self.started = clock()
        self.drawn_at: float | None = None
        self.shown_tenth = -1
        self.tty = getattr(self.stream, "isatty", lambda: False)()

    def advance(self, count: int, label: str = "") -> None:
        self.done = min(self.total, self.done + count)
        now = self.clock()
        if now - self.started < self.delay:
            return
        if self.tty:
            if self.drawn_at is None or now - self.drawn_at >= 0.1 or self.done == self.total:
                self.stream.write("\r" + self.line(label))
                self.drawn_at = now
        elif self.done * 10 // self.total > self.shown_tenth:
            self.shown_tenth = self.done * 10 // self.total
            self.stream.write(self.line(label) + "\n")
        self.stream.flush()

    def line(self, label: str) -> str:
        filled = self.done * self.width // self.total
        percent = self.done * 100 // self.total
        return (
            f"Seeding demo data [{'#' * filled}{'.' * (self.width - filled)}] "
            f"{percent:3d}% {label:<12}"
        )

    def close(self) -> None:
        if self.tty and self.drawn_at is not None:
            self.stream.write("\r" + self.line("done") + "\n")
            self.stream.flush()


def _scaled(scale: Scale, share: float) -> Scale:
    if share == 1.0:
        return scale
    return Scale(
        calls=int(scale.calls * share), prospects=max(20, int(scale.prospects * share)), timeline=0
    )


def estimate(scale: Scale) -> int:
    """Documents to write, for the progress bar: calls count twice (each writes its timeline
    entry), plus roughly two activities per prospect and one per call, plus the long
    timeline."""
    total = 0
    for spec in WORKSPACES:
        part = _scaled(scale, spec["share"])
        total += 3 * part.prospects + 3 * part.calls + part.timeline
    return total


async def _write(
    progress: Progress, label: str, insert: Insert, workspace_id: str, docs: list[dict]
) -> None:
    for start in range(0, len(docs), WRITE_BATCH):
        batch = docs[start : start + WRITE_BATCH]
        await insert(workspace_id, batch)
        progress.advance(len(batch) * (2 if label == "calls" else 1), label)


async def _write_calls(
    progress: Progress, store: Any, workspace_id: str, calls: list[dict], activities: list[dict]
) -> None:
    """Write calls and the meetings and status changes they caused."""
    await _write(progress, "calls", store.calls.insert_documents, workspace_id, calls)
    await _write(
        progress, "activities", store.activities.insert_documents, workspace_id, activities
    )


async def demo_keys(auth: Any, workspace_id: str) -> dict[str, str]:
    """New demo keys for a workspace: "apiKey" (the default scopes, read and write),
    "readOnlyApiKey" (read only: what a dashboard or someone exploring should hold) and
    "ingestApiKey" (ingest only: what a dialer records calls with; the live writes use it) and
    "adminApiKey" (read, write and admin: what manages the workspace's users)."""
    _, key = await auth.create(workspace_id, "demo key")
    _, read_only = await auth.create(workspace_id, "demo read-only key", frozenset({"read"}))
    _, ingest = await auth.create(workspace_id, "demo ingest key", frozenset({"ingest"}))
    _, admin = await auth.create(
        workspace_id, "demo admin key", frozenset({"read", "write", "admin"})
    )
    return {
        "apiKey": key,
        "readOnlyApiKey": read_only,
        "ingestApiKey": ingest,
        "adminApiKey": admin,
    }


async def seed(
    store: Any,
    auth: Any,
    seed: int = 42,
    now: dt.datetime | None = None,
    scale: Scale | None = None,
    progress: Progress | None = None,
) -> list[dict]:
    """Create the demo workspaces in `store` (opened by store.database.open_store), each with
    its keys from `auth` (a server.auth.KeyService); returns [{"id", "name", "apiKey",
    "readOnlyApiKey", "ingestApiKey", "adminApiKey"}]. Same seed, same data.

    The first workspace gets `scale`, the second about a tenth of it. In the first, the
    prospect LONG_TIMELINE_CONTACT has `scale.timeline` extra activities, and the workspace's
    third-newest call with a recording carries MISSING_RECORDING_REF.
    """
    scale = scale or Scale()
    # History, not changes: a bulk load, which records no events (the feed starts with the
    # writes that follow). A large load builds the indexes of calls and activities once at the
    # end.
    async with store.bulk_load(defer_indexes=scale.calls >= BULK_LOAD_CALLS):
        return await _seed(store, auth, seed, now, scale, progress)


async def _seed(
    store: Any,
    auth: Any,
    seed: int,
    now: dt.datetime | None,
    scale: Scale,
    progress: Progress | None,
) -> list[dict]:
    rng = random.Random(seed)
    # Anchored at today's UTC midnight (or WSAPI_DEMO_ANCHOR's): the last 90 days stay recent,
    # and two runs on the same day with the same seed give the same data.
    now = now or anchor()
    progress = progress or Progress(estimate(scale), delay=float("inf"))
    result = []
    for index, spec in enumerate(WORKSPACES):
        part = _scaled(scale, spec["share"])
        workspace = await store.workspaces.create(
            spec["name"], demo_uuid(rng), now - dt.timedelta(days=400 - index)
        )
        wid = workspace["id"]
        users = []
        for i in range(spec["users"] + 1):
            first, last = user_name(index, i)
            users.append(
                await store.users.create(
                    wid,
                    user_email(spec["name"], first, last),
                    first,
                    last,
                    now - dt.timedelta(days=300 - i),
                    demo_uuid(rng),
                )
            )
        await store.users.delete(wid, users[-1]["id"])  # one deleted user per workspace
        active, deleted = users[:-1], users[-1]
        lists = []
        for number, name in enumerate(spec["lists"]):
            created = now - dt.timedelta(days=60 - 15 * number, hours=rng.randint(0, 23))
            lists.append(
                await store.lists.create(
                    wid,
                    name,
                    active[number % len(active)]["id"],
                    created_at=created,
                    list_id=demo_uuid(rng),
                )
            )
        prospects = build_prospects(rng, wid, part.prospects, lists, now, part.timeline > 0)
        await _write(progress, "prospects", store.prospects.insert_documents, wid, prospects)
        for listing in lists:
            await store.lists.set_count(
                wid, listing["id"], await store.prospects.count_in_list(wid, listing["id"])
            )
        activities = build_timelines(rng, wid, active, prospects, lists, now)
        if part.timeline:
            activities += long_timeline(rng, wid, prospects[0], active, part.timeline, now)
        await _write(progress, "activities", store.activities.insert_documents, wid, activities)
        del activities
        # Calls are made and written a chunk at a time (bounded memory at any scale), one chunk
        # behind, so that the newest chunk is still at hand to mark the missing recording.
        status: dict[str, str] = {}
        pending: list[dict] = []
        writing: asyncio.Future[None] | None = None
        chunks = build_calls(rng, wid, active, deleted, prospects, part.calls, now)
        # The next chunk is made on a thread while the store writes the previous one.
        while (chunk := await asyncio.to_thread(next, chunks, None)) is not None:
            if writing:
                await writing
            writing = asyncio.ensure_future(
                _write_calls(
                    progress, store, wid, pending, call_timeline(rng, wid, pending, status)
                )
            )
            pending = chunk
        if writing:
            await writing
        if index == 0:
            recorded = [call for call in pending if call["hasRecording"]]
            if recorded:
                # The third-newest: the console pre-fills the newest call, which should play.
                recorded[-min(3, len(recorded))]["recordingRef"] = MISSING_RECORDING_REF
        await _write_calls(progress, store, wid, pending, call_timeline(rng, wid, pending, status))
        result.append({"id": wid, "name": spec["name"], **await demo_keys(auth, wid)})
    progress.advance(progress.total, "done")
    progress.close()
    return result
