"""Change events on MongoDB, without multi-document transactions: a marker written with the
change, the events, the marker removed; a sweeper for writers that die in between; and the feed,
which never reads past a change whose events are still being written.

How a write path records its events:

1. `pending = writer.begin()` before the write: a token and the instant it is taken at.
2. Every document the write inserts carries `pending.new(doc)`, every update
   `pending.update(update)`: the marker, an entry `{t, k, c}` (instant, token, created) in the
   document's `_evt` array, written by the same single-document write as the change, so that
   the change never lands without it.
3. `await writer.publish(workspace_id, pending, changed={...}, inserted=[...])` after the
   write, before the client's answer: it takes the events' instants, reads the changed records
   as they are now (only those that carry this write's marker: a write that matched nothing
   changed nothing), inserts one event per record (`*.created` when this write created it),
   then pulls the marker.

Why the feed misses nothing, without a settle period and whatever the clocks of the processes
and hosts that write: every read of the feed first raises the workspace's feed horizon (one
document in `feed_horizons`, moved up to the reader's clock where it is behind) and reads up to it,
then looks at the workspace's markers, and reads the events only up to just before the oldest
(`Events.page`); every write takes its events' instants after its change (and marker) landed,
after reading the horizon, and past both the horizon and its marker's instant. Take a writer
and a reader. If the writer's change landed before the reader looked at the markers, the
reader saw its marker (it is pulled only once the events are in; and if they are in, the read
that follows sees them): it stops before the marker, and the events come after the marker. If
it landed after, the writer read the horizon after the reader raised it, so its events come
after every position the reader hands out. So an event still to be inserted is always ahead
of every reader, even one stamped by a clock that runs behind; and of two events of one record
the later one carries the newer state, whatever the writers' interleaving, because the
instants are taken before the record is read. On a replica set the horizon a reader reads
up to is always one a majority holds, so a failover cannot roll it back. A writer that dies
after its change leaves its marker: the sweeper (`Events.recover`, server/event_sweep.py)
records the events of the markers older than a grace period the way a writer does: it reads
the markers first, then takes its instants past every workspace's horizon (so past every
position handed out before those markers landed: a reader that looked later stopped before
them), then reads the records as they are, and pulls the markers it read. A marker that lands
after its first read (a writer that stalled past the grace) waits for the next sweep. Each event
carries the tokens of the markers it was recorded for, so the sweep records none that a writer
(or an earlier sweep) recorded before it stopped short of pulling its markers. A record
deleted since keeps its deletion's event last (store/mongo/marks.py `recovered_events`). Until
then the workspace's feed waits. Markers left empty (`_evt: []`) are harmless; records' API
forms never show `_evt` (every projection lists its fields).
"""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

from pymongo import UpdateOne
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError
from pymongo.read_concern import ReadConcern
from pymongo.write_concern import WriteConcern

from store.clock import SYSTEM_CLOCK, Clock, new_id
from store.events import (
    EventClock,
    EventPage,
    Removed,
    StoredEvent,
    encode,
    event_json,
    event_type,
    first_id_at,
)
from store.mongo.errors import translate_errors
from store.mongo.locks import Leases
from store.mongo.marks import (
    COLLECTIONS,
    MARK,
    MARKED,
    TOMBSTONES,
    Pending,
    chunks,
    event_doc,
    older_marks,
    recorded_events,
    recovered_events,
    removed_event,
    tokens_of,
    tombstone_id,
)
from store.mongo.paging import window_query
from store.paging import Position, Window

log = logging.getLogger("workspace_api")

# The feed horizon of each workspace: {_id: workspaceId, workspaceId, at}, raised by every read
# of the feed; events are stamped after it (the module's docstring).
HORIZONS = "feed_horizons"
FEED_FIELDS = {"type": 1, "occurredAt": 1, "data": 1}
ONE_MS = dt.timedelta(milliseconds=1)


@translate_errors
class EventWriter:
    """Records events after the writes that marked their documents (the module's docstring)."""

    def __init__(self, db: AsyncDatabase, clock: Clock = SYSTEM_CLOCK) -> None:
        self.db = db
        self.col = db["events"]
        self.enabled = True
        self.observe: Callable[[str, int], None] | None = None  # (event type, count): metrics
        self.clock = EventClock(clock)
        self.now = clock.now  # the instants of the writes that record through it

    def begin(self) -> Pending:
        """A new write's marker."""
        return Pending(new_id(), self.clock.now(), self.enabled)

    async def publish(
        self,
        workspace_id: str,
        pending: Pending,
        changed: Mapping[str, Iterable[str]] | None = None,
        inserted: Sequence[dict] = (),
        removed: Sequence[Removed] = (),
    ) -> None:
        """Record the events of a write that marked its documents with `pending`: `changed`
        names the records it may have changed or created, by collection; `inserted` holds
        activity documents it inserted (activities never change: their event is made from the
        document, without reading it back); `removed` the records it deleted, buried first
        (`bury`): their `<resource>.deleted` events are made from them, without a read."""
        if not pending.enabled:
            return
        wanted = {name: list(dict.fromkeys(ids)) for name, ids in (changed or {}).items() if ids}
        # Taken after the write landed, after reading the horizon, past it and the marker, and
        # before the records are read: see the docstring.
        count = sum(map(len, wanted.values())) + len(inserted) + len(removed)
        floor = pending.at - ONE_MS
        horizon = await self.db[HORIZONS].find_one({"_id": workspace_id}, {"at": 1})
        if horizon is not None:
            floor = max(floor, horizon["at"])
        stamps = iter(self.clock.take(count, after=floor))
        reads = await asyncio.gather(
            *(
                self._marked(workspace_id, name, part, pending)
                for name, ids in wanted.items()
                for part in chunks(ids)
            )
        )
        names = [name for name, ids in wanted.items() for _ in chunks(ids)]
        tokens = [pending.token]
        events = [
            event_doc(workspace_id, MARKED[name][0], created, doc, next(stamps), tokens)
            for name, found in zip(names, reads, strict=True)
            for doc, created in found
        ]
        events += [
            event_doc(workspace_id, "activity", True, doc, next(stamps), tokens) for doc in inserted
        ]
        events += [removed_event(workspace_id, gone, next(stamps), tokens) for gone in removed]
        if events:
            await self.col.insert_many(events, ordered=False)
            if self.observe is not None:
                for kind, count in collections.Counter(e["type"] for e in events).items():
                    self.observe(kind, count)
        touched = dict(wanted)
        if inserted:
            touched["activities"] = [
                *touched.get("activities", []),
                *(doc["_id"] for doc in inserted),
            ]
        if removed:
            touched[TOMBSTONES] = [tombstone_id(gone) for gone in removed]
        for name, ids in touched.items():  # one at a time: every update is a write of each
            for part in chunks(ids):  # document it matches, and they queue at the server
                await self.db[name].update_many(
                    {"_id": {"$in": part}, "workspaceId": workspace_id},
                    {"$pullAll": {MARK: pending.entries}},
                )

    async def bury(self, workspace_id: str, pending: Pending, removed: Sequence[Removed]) -> None:
        """Before a write removes records: a tombstone marked with `pending` for each (the
        record's own marker goes with it), so that a writer that dies after the delete leaves
        its event to the sweeper, and the feed waits for it meanwhile."""
        if not pending.enabled or not removed:
            return
        await self.db[TOMBSTONES].bulk_write(
            [
                UpdateOne(
                    {"_id": tombstone_id(gone), "workspaceId": workspace_id},
                    {
                        "$set": {
                            "resource": gone.resource,
                            "recordId": gone.id,
                            "deletedAt": gone.at,
                            "action": gone.action,
                            "record": gone.record,
                        },
                        "$push": {MARK: pending.entry(False)},
                    },
                    upsert=True,
                )
                for gone in removed
            ],
            ordered=False,
        )

    async def _marked(
        self, workspace_id: str, collection: str, ids: list[str], pending: Pending
    ) -> list[tuple[dict, bool]]:
        """The records of `ids` that carry this write's marker, as they are now, each with
        whether this write created it."""
        fields = {**MARKED[collection][1], MARK: 1}
        cursor = self.db[collection].find(
            {"_id": {"$in": ids}, "workspaceId": workspace_id}, fields
        )
        created, updated = pending.entry(True), pending.entry(False)
        found = []
        async for doc in cursor:
            marks = doc.get(MARK) or []
            if created in marks:
                found.append((doc, True))
            elif updated in marks:
                found.append((doc, False))
        return found


@translate_errors
class Events:
    """The events feed on MongoDB (store.contract.Events)."""

    def __init__(self, db: AsyncDatabase, writer: EventWriter) -> None:
        self.db = db
        self.col = db["events"]
        self.writer = writer
        self.leases = Leases(db)
        # A horizon a reader hands positions out up to must survive a failover: were it rolled
        # back, a writer on the new primary could stamp events behind those positions. So the
        # raise waits for a majority, and a horizon read instead of raised is a majority's.
        self.horizons = db.get_collection(
            HORIZONS, write_concern=WriteConcern("majority"), read_concern=ReadConcern("majority")
        )

    async def page(
        self,
        workspace_id: str,
        after: Position,
        settled_before: dt.datetime,
        page_size: int,
        types: Sequence[str] | None = None,
    ) -> EventPage:
        """The events after `after`, up to the workspace's feed horizon, raised to this
        process's clock first, and to just before the oldest marker of the workspace (a change
        whose events are still being written), of `types` (all when None), oldest first: one
        keyset read per type on an index, each at most `page_size` + 1 events, after the
        markers were looked at. No write in flight can land before what this reads (the
        module's docstring); `settled_before` is only the bound when no majority holds the
        workspace's horizon yet (`_raise_horizon`)."""
        horizon = await self._raise_horizon(workspace_id, settled_before)
        settled = await self._settled(workspace_id, horizon)
        window = Window(page_size, None, "occurredAt", after, settled)
        found = await asyncio.gather(
            *(
                self._read(workspace_id, window, kind)
                for kind in (sorted(set(types)) if types else [None])
            )
        )
        events = sorted((event for part in found for event in part), key=lambda e: e.key)
        return EventPage(events[:page_size], len(events) > page_size, settled)

    async def _read(self, workspace_id: str, window: Window, kind: str | None) -> list[StoredEvent]:
        query: dict = {"workspaceId": workspace_id}
        if kind is not None:
            query["type"] = kind
        query, sort = window_query(query, window)
        cursor = self.col.find(query, FEED_FIELDS).sort(sort).limit(window.page_size + 1)
        return [
            StoredEvent(
                doc["_id"],
                doc["type"],
                doc["occurredAt"],
                event_json(doc["_id"], doc["type"], doc["occurredAt"], doc["data"]),
            )
            async for doc in cursor
        ]

    async def _raise_horizon(self, workspace_id: str, fallback: dt.datetime) -> dt.datetime:
        """The workspace's feed horizon once it is at least this process's clock: a write only
        where it is behind (one conditional update, which inserts the first, acknowledged by a
        majority); where it is ahead (another host's clock runs ahead, or another reader raised
        it meanwhile), the horizon as a majority holds it, so that the events stamped past it
        meanwhile are read here too. A horizon lower than this clock is safe (the page reads
        less); where no majority holds one yet, `fallback` (the settle horizon) is."""
        now = self.writer.now()
        try:
            await self.horizons.update_one(
                {"_id": workspace_id, "at": {"$lt": now}},
                {"$set": {"at": now, "workspaceId": workspace_id}},
                upsert=True,
            )
        except DuplicateKeyError:  # there, and at or past `now` already
            doc = await self.horizons.find_one({"_id": workspace_id}, {"at": 1})
            return doc["at"] if doc is not None else min(fallback, now)
        return now

    async def _newest_horizon(self) -> dt.datetime | None:
        """The newest feed horizon of any workspace (the sweeper's floor)."""
        doc = await self.db[HORIZONS].find_one({}, {"at": 1}, sort=[("at", -1)])
        return doc["at"] if doc is not None else None

    async def _floor(self, older_than: dt.datetime) -> dt.datetime:
        """Where the sweeper's instants start: past every horizon, and past every marker it
        will recover (each older than `older_than`, which the sweep takes in the past; one
        in the future counts as now)."""
        floor = min(older_than, self.writer.now()) - ONE_MS
        newest = await self._newest_horizon()
        return max(floor, newest) if newest is not None else floor

    async def _settled(self, workspace_id: str, bound: dt.datetime) -> dt.datetime:
        """`bound`, or just before the oldest marker of the workspace at or before it."""
        oldest = await asyncio.gather(
            *(self._oldest_mark(workspace_id, name, bound) for name in (*MARKED, TOMBSTONES))
        )
        marks = [mark for mark in oldest if mark is not None]
        return min(marks) - ONE_MS if marks else bound

    async def _oldest_mark(
        self, workspace_id: str, collection: str, bound: dt.datetime
    ) -> dt.datetime | None:
        """The oldest marker instant at or before `bound` in the workspace's `collection`, or
        None. Mostly one indexed existence check; after a crash, a few (each step finds an
        older marker, by a plain range query that every server answers alike)."""
        col, oldest = self.db[collection], None
        while True:
            below = {"$exists": True, "$lte": bound} if oldest is None else {"$lt": oldest}
            doc = await col.find_one(
                {"workspaceId": workspace_id, f"{MARK}.t": {"$exists": True, **below}},
                {MARK: 1},
            )
            if doc is None:
                return oldest
            oldest = min(entry["t"] for entry in doc[MARK])

    async def recover(self, older_than: dt.datetime, batch: int = 50) -> int:
        """Record the events of markers older than `older_than` (their writer died, or the
        database failed it, after the change landed) from the records as they are now, and
        pull those markers. One process at a time (a lease; another process skips its turn),
        and harmless twice. How many events it recorded."""
        token = await self.leases.try_acquire("*", "events-recover", 60)
        if token is None:
            return 0
        try:
            recorded = 0
            for collection in MARKED:
                recorded += await self._recover(collection, older_than, batch)
            return recorded + await self._recover_removed(older_than, batch)
        finally:
            await self.leases.release("*", "events-recover", token)

    async def _recover(self, collection: str, older_than: dt.datetime, batch: int) -> int:
        resource, fields, _ = MARKED[collection]
        col = self.db[collection]
        stale = {f"{MARK}.t": {"$exists": True, "$lt": older_than}}
        # The markers first, then the instants, then the records: see the docstring.
        found = await col.find(stale, {MARK: 1}).limit(batch).to_list()
        if not found:
            return 0
        old = {doc["_id"]: older_marks(doc, older_than) for doc in found}
        # Two per record: a record deleted since also gets its deletion's event, last.
        stamps = iter(await self._stamps(2 * len(found), older_than))
        docs = await col.find(
            {"_id": {"$in": list(old)}, **stale},
            {**fields, "workspaceId": 1, "deletedAt": 1, MARK: 1},
        ).to_list()
        # Only the markers the first read found: one that landed since waits for the next
        # sweep, whose instants come after it. None left: its writer recorded its events
        # meanwhile.
        marked = [(doc, [e for e in old[doc["_id"]] if e in doc[MARK]]) for doc in docs]
        marked = [(doc, entries) for doc, entries in marked if entries]
        kinds = {event_type(resource, True), event_type(resource, False)}
        recorded = await recorded_events(
            self.col,
            [(doc["workspaceId"], doc["_id"], tokens_of(entries)) for doc, entries in marked],
        )
        events, pulls = [], []
        for doc, entries in marked:
            tokens = tokens_of(entries)
            done = recorded.get((doc["workspaceId"], doc["_id"]), {})
            # Every write whose marker this is recorded its event, and stopped before pulling
            # the marker: pulled, with no second event.
            if any(not kinds & done.get(token, set()) for token in tokens):
                created = resource == "activity" or any(entry.get("c") for entry in entries)
                events += recovered_events(
                    doc["workspaceId"], resource, created, doc, stamps, tokens
                )
            pulls.append(UpdateOne({"_id": doc["_id"]}, {"$pullAll": {MARK: entries}}))
        if not pulls:
            return 0
        if events:
            await self.col.insert_many(events, ordered=False)
        await col.bulk_write(pulls, ordered=False)
        log.info("recorded %d events of changes whose writer stopped (%s)", len(events), collection)
        return len(events)

    async def _recover_removed(self, older_than: dt.datetime, batch: int) -> int:
        """The tombstones of removals whose writer stopped: a `<resource>.deleted` event where
        the record is gone, none where it is still there (the delete never landed)."""
        col = self.db[TOMBSTONES]
        stale = {f"{MARK}.t": {"$exists": True, "$lt": older_than}}
        docs = await col.find(stale).limit(batch).to_list()  # the markers first (docstring)
        if not docs:
            return 0
        stamps = iter(await self._stamps(len(docs), older_than))
        marks = [older_marks(doc, older_than) for doc in docs]
        recorded = await recorded_events(
            self.col,
            [
                (doc["workspaceId"], doc["recordId"], tokens_of(entries))
                for doc, entries in zip(docs, marks, strict=True)
            ],
        )
        events, pulls = [], []
        for doc, entries in zip(docs, marks, strict=True):
            gone = Removed(
                doc["resource"],
                doc["recordId"],
                doc["deletedAt"],
                doc.get("action") or "deleted",
                doc.get("record"),
            )
            tokens = tokens_of(entries)
            done = recorded.get((doc["workspaceId"], gone.id), {})
            # Still there: present and not deleted (a user is deleted by its deletedAt).
            still = await self.db[COLLECTIONS[gone.resource]].find_one(
                {"_id": gone.id, "workspaceId": doc["workspaceId"], "deletedAt": None},
                {"_id": 1},
            )
            # Recorded already where every removal of these markers recorded it and stopped
            # before pulling them.
            if still is None and any(gone.type not in done.get(t, set()) for t in tokens):
                events.append(removed_event(doc["workspaceId"], gone, next(stamps), tokens))
            pulls.append(UpdateOne({"_id": doc["_id"]}, {"$pullAll": {MARK: entries}}))
        if events:
            await self.col.insert_many(events, ordered=False)
        await col.bulk_write(pulls, ordered=False)
        log.info("recorded %d events of removals whose writer stopped", len(events))
        return len(events)

    async def _stamps(self, count: int, older_than: dt.datetime) -> list[tuple[str, dt.datetime]]:
        """The sweep's instants, taken once it has read the markers it recovers: past every
        horizon, so past every position a reader was handed before those markers landed."""
        return self.writer.clock.take(count, after=await self._floor(older_than))

    async def rewrite(self, workspace_id: str, event_id: str, data: dict) -> bool:
        """Replace a stored event's data; whether the workspace had it."""
        result = await self.col.update_one(
            {"_id": event_id, "workspaceId": workspace_id}, {"$set": {"data": encode(data)}}
        )
        return result.matched_count == 1

    async def delete_expired(
        self, before: dt.datetime, batch: int = 1000, max_batches: int = 10
    ) -> int:
        """Delete events that occurred before `before`, oldest first, in at most `max_batches`
        batches of `batch`; how many were deleted. Event ids sort as their instants
        (store.events), so the `_id` index finds them: no index is kept for retention alone."""
        deleted = 0
        expired = {"_id": {"$lt": first_id_at(before)}}
        for _ in range(max_batches):
            cursor = self.col.find(expired, {"_id": 1}).sort("_id", 1).limit(batch)
            ids = [doc["_id"] async for doc in cursor]
            if ids:
                result = await self.col.delete_many({"_id": {"$in": ids}})
                deleted += result.deleted_count
            if len(ids) < batch:
                break
        return deleted
