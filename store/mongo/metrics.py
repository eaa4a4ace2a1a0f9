"""Dialer metrics on MongoDB, from each call's stored contribution, grouped per quarter hour.

Every call document carries what it adds to the metrics, written with it (store/mongo/calls.py):
`quarter` (its quarter hour of UTC, store.metrics.quarter_of of createdAt) and `m` (its
store.metrics.contribution: `{dials, connects, conversations, meetingsBooked, voicemails,
callsToSuppressedNumbers, talkTimeSeconds}`, the same function SQLite's quarter-hour counts
add). The API record never shows them (records list their fields). A change to a call's
disposition, meetingBooked, durationSeconds or createdAt must rewrite them in the same
single-document update: `changed_call_set` gives that `$set`. Documents written before the
fields existed get them from `fill_metric_fields` at start-up, and count meanwhile by their
exact instant (below).

A report reads the outbound calls of its range with a `$match` on `workspaceId, direction,
createdAt` (the index ws_direction_newest; ws_user_newest with a userId), then:
1. counts: a `$group` by (userId, quarter, the 0/1 counts of `m`) with `n: {$sum: 1}`, at most
   16 rows per user and quarter hour (dials is always 1, connects and voicemails exclude each
   other, conversations need a connect, meetingsBooked and callsToSuppressedNumbers are free:
   (4 + 2 + 2) x 2 combinations; `m` stored before callsToSuppressedNumbers existed lacks it,
   and counts 0 for it: such a call was recorded before do-not-call);
2. talk time: the connects of the range (`disposition` joins the match: ws_disposition_newest
   serves it too) in a `$group` by (userId, quarter) summing `m.talkTimeSeconds`;
3. only when needed, exact instants: the calls of the quarter hours that a day boundary cuts,
   and calls without the fields, in a `$group` by (userId, createdAt, disposition,
   durationSeconds, meetingBooked, toNumberSuppressed), whose contributions are computed here;
   their rows from 1 and 2 are left out. The quarter hours are few (one per boundary, and
   boundaries fall on quarter hours in every zone today); calls without the fields exist only
   until the start-up fill ends and for what a host of an older version writes during a
   rolling upgrade.
Then store.metrics.assemble adds the rows into totals, users and days, as on SQLite. Each group
holds one accumulator: FerretDB 1.24 (the wire test tier) computes only the first accumulator
of a `$group` (the others come out 0) and implements none of `$facet`, `$bucket` or `$cond`.
The two or three reads are not one snapshot: a call written between them can count in one and
not the other, which only a range that includes the present moment can see.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Mapping
from typing import Any
from zoneinfo import ZoneInfo

from pymongo import UpdateOne
from pymongo.asynchronous.database import AsyncDatabase

from store.clock import utcnow
from store.metrics import (
    COUNTS,
    EPOCH,
    QUARTER,
    QUARTER_MS,
    assemble,
    contribution,
    day_of,
    day_starts,
    quarter_of,
)
from store.mongo.errors import translate_errors

log = logging.getLogger("workspace_api")

FLAGS = tuple(name for name in COUNTS if name != "talkTimeSeconds")  # the 0/1 counts
TALK = COUNTS.index("talkTimeSeconds")
# Calls are filled in batches of this many documents, one bulk write each: below 100, as
# FerretDB 1.24 deadlocks on an update command of 100 operations that match (tests/wire.py).
FILL_BATCH = 64
FILLED = "calls.metric-fields"  # the `migrations` document that records the fill as done


def metric_fields(call: Mapping[str, Any]) -> dict:
    """The stored contribution of a call document (from its createdAt, disposition,
    durationSeconds and meetingBooked)."""
    return {"quarter": quarter_of(call["createdAt"]), "m": contribution(call)}


def changed_call_set(current: Mapping[str, Any], changes: Mapping[str, Any]) -> dict:
    """The `$set` of a change to a call: the changed fields and the contribution of the call as
    it will be, so that one single-document update keeps them together. Condition the update on
    what `current` was read with (its updatedAt), so that a concurrent change is not undone."""
    return {**changes, **metric_fields({**current, **changes})}


def _millis(instant: dt.datetime) -> int:
    return (instant - EPOCH) // dt.timedelta(milliseconds=1)


def match(workspace_id: str, starts: list[dt.datetime], user_id: str | None) -> dict:
    """The outbound calls of the range (and of one user)."""
    query: dict = {
        "workspaceId": workspace_id,
        "direction": "outbound",
        "createdAt": {"$gte": starts[0], "$lt": starts[-1]},
    }
    if user_id is not None:
        query["userId"] = user_id
    return query


def counts_pipeline(query: dict) -> list[dict]:
    key = {"u": "$userId", "q": "$quarter", **{name: f"$m.{name}" for name in FLAGS}}
    return [{"$match": query}, {"$group": {"_id": key, "n": {"$sum": 1}}}]


def talk_pipeline(query: dict) -> list[dict]:
    return [
        {"$match": {**query, "disposition": "connected"}},
        {"$group": {"_id": {"u": "$userId", "q": "$quarter"}, "t": {"$sum": "$m.talkTimeSeconds"}}},
    ]


def exact_pipeline(query: dict, cut: Iterable[int], unfilled: bool) -> list[dict]:
    """The calls of the quarter hours `cut` by a day boundary, and (`unfilled`) the calls
    without their stored contribution, by their exact instant and the fields that decide it."""
    clauses: list[dict] = [
        {"createdAt": {"$gte": EPOCH + q * QUARTER, "$lt": EPOCH + (q + 1) * QUARTER}}
        for q in sorted(cut)
    ]
    if unfilled:
        clauses.append({"quarter": {"$exists": False}})
    key = {
        "u": "$userId",
        "t": "$createdAt",
        "d": "$disposition",
        "s": "$durationSeconds",
        "b": "$meetingBooked",
        "x": "$toNumberSuppressed",
    }
    return [{"$match": {**query, "$or": clauses}}, {"$group": {"_id": key, "n": {"$sum": 1}}}]


@translate_errors
class DialerMetrics:
    def __init__(self, db: AsyncDatabase) -> None:
        self.col = db["calls"]

    async def _rows(self, pipeline: list[dict]) -> list[dict]:
        cursor = await self.col.aggregate(pipeline)
        return await cursor.to_list(None)

    async def report(
        self,
        workspace_id: str,
        first: dt.date,
        last: dt.date,
        zone: ZoneInfo,
        user_id: str | None = None,
    ) -> dict:
        """The dialer-metrics result for the local days `first`..`last` (inclusive)."""
        starts = day_starts(first, last, zone)
        bounds = [_millis(start) for start in starts]
        cut = {bound // QUARTER_MS for bound in bounds if bound % QUARTER_MS}
        query = match(workspace_id, starts, user_id)
        rows: list[tuple[str | None, int, list[int]]] = []
        unfilled = False
        for row in await self._rows(counts_pipeline(query)):
            key, n = row["_id"], row["n"]
            if "q" not in key:  # calls without their stored contribution: counted exactly
                unfilled = True
            elif key["q"] not in cut:
                day = day_of(bounds, key["q"] * QUARTER_MS)
                # A count stored before it existed (callsToSuppressedNumbers) is 0.
                rows.append((key.get("u"), day, [n * key.get(name, 0) for name in FLAGS] + [0]))
        for row in await self._rows(talk_pipeline(query)):
            key = row["_id"]
            if "q" in key and key["q"] not in cut:
                counts = [0] * len(COUNTS)
                counts[TALK] = row["t"]
                rows.append((key.get("u"), day_of(bounds, key["q"] * QUARTER_MS), counts))
        if cut or unfilled:
            for row in await self._rows(exact_pipeline(query, cut, unfilled)):
                key, n = row["_id"], row["n"]
                call = {
                    "disposition": key.get("d"),
                    "durationSeconds": key.get("s"),
                    "meetingBooked": key.get("b"),
                    "toNumberSuppressed": key.get("x"),
                }
                counts = [n * value for value in contribution(call).values()]
                rows.append((key.get("u"), day_of(bounds, _millis(key["t"])), counts))
        return assemble(first, last, zone, user_id, starts, rows)


async def fill_metric_fields(db: AsyncDatabase, batch: int = FILL_BATCH) -> int:
    """Give the calls stored without them (by a version before these fields, or by one still
    running during a rolling upgrade) their `quarter` and `m`, in bounded batches; how many were
    filled. Idempotent and safe to run in several processes at once: an update applies only
    while the call still lacks the fields, so it never overwrites a newer write. Done once per
    database: a `migrations` document records it (while `calls` is empty there is nothing to
    record yet), so later starts do not look through the calls again."""
    if await db["migrations"].find_one({"_id": FILLED}, {"_id": 1}):
        return 0
    calls = db["calls"]
    if await calls.find_one({}, {"_id": 1}) is None:
        return 0
    fields = {
        "createdAt": 1,
        "disposition": 1,
        "durationSeconds": 1,
        "meetingBooked": 1,
        "toNumberSuppressed": 1,
    }
    filled = 0
    while True:
        found = await calls.find({"quarter": {"$exists": False}}, fields).limit(batch).to_list()
        if not found:
            break
        if not filled:
            log.info("filling in the dialer-metrics fields of calls stored without them")
        result = await calls.bulk_write(
            [
                UpdateOne(
                    {"_id": doc["_id"], "quarter": {"$exists": False}},
                    {"$set": metric_fields(doc)},
                )
                for doc in found
            ],
            ordered=False,
        )
        filled += result.modified_count
    await db["migrations"].update_one(
        {"_id": FILLED}, {"$setOnInsert": {"doneAt": utcnow()}}, upsert=True
    )
    if filled:
        log.info("filled in the dialer-metrics fields of %d calls", filled)
    return filled
