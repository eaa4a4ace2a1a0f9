"""Change events on SQLite: recorded in the write transaction of the change they describe, and
the feed read back by keyset (store/events.py has the rules both backends share).

How a write path records its events: at the end of its write unit (the function that runs in
`Engine.write`), it calls `writer.record(conn, workspace_id, changes)` with (type, record id)
pairs. The events are inserted there, in the same transaction: all or nothing with the change.
Their `data` is built by SQL from the rows as the unit leaves them (a call's stored `record`,
`json_object` for the others), so several changes of one record in one unit are one event with
its latest state; a record created in the unit gets its `*.created` event only. Their instants
and ids are taken there too, after BEGIN IMMEDIATE and past the workspace's last event id, so
they never go backwards, whichever process of the host writes.

Why the feed needs no settle period here: its order is the order in which writes commit. Every
write unit holds the database's one write lock (BEGIN IMMEDIATE) from before it reads the
workspace's last event until its COMMIT, and its ids come after that last event; so a unit
that commits later has ids above every event committed before it, in whichever process it
ran. A read sees a prefix of the commits (WAL), so every event it does not see yet will sort
after every event of the workspace it sees: a page holds every committed event after its
position, and a reader that moves to its last event can never be passed by a write in flight.
The settle horizon (`settled_before`) only says how far a caught-up reader may move without an
event, so that a quiet workspace's cursor keeps up with time (store.events.EventPage.resume):
there, a write in flight stamped before the horizon would be passed, as on MongoDB.
"""

from __future__ import annotations

import collections
import datetime as dt
import sqlite3
from collections.abc import Callable, Iterable, Sequence

from store.clock import SYSTEM_CLOCK, Clock
from store.events import TYPES, EventClock, EventPage, Removed, StoredEvent, encode, instant_of
from store.paging import Position
from store.sqlite.engine import Engine
from store.sqlite.schema import instant, ms

# What the events of a resource are made from: (the table as FROM names it, the prefix of its
# columns, the SQL of a row's API record). Each family's module defines its own; the store hands
# them to its EventWriter (store/sqlite/__init__.py).
Source = tuple[str, str, str]


def insert_sql(source: Source) -> str:
    """The statement that inserts one event of a record, its data built from the record's row."""
    table, alias, record = source
    return (
        'INSERT INTO events ("_id", workspaceId, type, resourceId, occurredAt, data) '
        f'SELECT ?1, ?2, ?3, {alias}"_id", ?4, {record} FROM {table} '
        f'WHERE {alias}"_id" = ?5 AND {alias}workspaceId = ?2'
    )


LAST = 'SELECT "_id" FROM events WHERE workspaceId = ? ORDER BY occurredAt DESC, "_id" DESC LIMIT 1'
# An event's API form, built by the statement that reads the page (ids and types are plain
# ASCII; `data` is stored as the JSON text it is served as).
SERVED = (
    """'{"id":"' || "_id" || '","type":"' || type || '","occurredAt":"' || """
    """strftime('%Y-%m-%dT%H:%M:%fZ', occurredAt / 1000.0, 'unixepoch') || '","data":' || """
    """data || '}'"""
)
FEED = (
    f'SELECT {SERVED}, occurredAt, "_id", type FROM events WHERE workspaceId = ? '
    'AND (occurredAt, "_id") > (?, ?) TYPED'
    'ORDER BY occurredAt, "_id" LIMIT ?'
)


class EventWriter:
    """Records events inside write units. While `enabled` is false it records none: bulk loads
    (`SQLiteStore.bulk_load`) and the benchmark that measures what events cost."""

    def __init__(self, sources: dict[str, Source], clock: Clock = SYSTEM_CLOCK) -> None:
        self.enabled = True
        # Told (event type, count) of each write's events, on the writer thread (metrics).
        self.observe: Callable[[str, int], None] | None = None
        self.clock = EventClock(clock)
        self.now = clock.now  # the instants of the writes that record through it
        self.inserts = {resource: insert_sql(source) for resource, source in sources.items()}

    def record(
        self,
        conn: sqlite3.Connection,
        workspace_id: str,
        changes: Iterable[tuple[str, str]],
        removed: Iterable[Removed] = (),
    ) -> int:
        """Insert the events of what the unit touched, in the caller's write transaction:
        `changes`, (event type, record id) pairs of the records it created or changed (one
        event per record, created wins over updated, its data the record as the unit leaves
        it), and `removed`, the records it deleted (`<resource>.deleted`, its data made from
        the unit's Removed: the row is gone). Call it last in the unit. How many events it
        wrote."""
        if not self.enabled:
            return 0
        kinds: dict[tuple[str, str], str] = {}
        for kind, record_id in changes:
            resource = TYPES[kind][0]
            if kinds.get((resource, record_id), "").endswith(".created"):
                continue
            kinds[(resource, record_id)] = kind
        gone = {(r.resource, r.id): r for r in removed}
        for key in gone:
            kinds.pop(key, None)  # removed in the same unit: its last state is gone
        if not kinds and not gone:
            return 0
        last = conn.execute(LAST, (workspace_id,)).fetchone()
        stamps = self.clock.take(len(kinds) + len(gone), last[0] if last else None)
        rows: dict[str, list[tuple]] = {}
        for ((resource, record_id), kind), (event_id, at) in zip(
            kinds.items(), stamps[: len(kinds)], strict=True
        ):
            rows.setdefault(resource, []).append((event_id, workspace_id, kind, ms(at), record_id))
        for resource, values in rows.items():
            conn.executemany(self.inserts[resource], values)
        conn.executemany(
            'INSERT INTO events ("_id", workspaceId, type, resourceId, occurredAt, data) '
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (event_id, workspace_id, r.type, r.id, ms(at), encode(r.data))
                for r, (event_id, at) in zip(gone.values(), stamps[len(kinds) :], strict=True)
            ],
        )
        if self.observe is not None:
            counted = collections.Counter(kinds.values())
            counted.update(r.type for r in gone.values())
            for kind, count in counted.items():
                self.observe(kind, count)
        return len(kinds) + len(gone)


def _page(
    conn: sqlite3.Connection,
    workspace_id: str,
    after: Position,
    limit: int,
    types: Sequence[str] | None,
) -> list[StoredEvent]:
    position = (ms(after.value), after.id)
    found: list[StoredEvent] = []
    for kind in types or (None,):
        query = FEED.replace("TYPED", "" if kind is None else "AND type = ?")
        typed = () if kind is None else (kind,)
        params = (workspace_id, *position, *typed, limit)
        found += [
            StoredEvent(event_id, kind_of, instant(at), text)
            for text, at, event_id, kind_of in conn.execute(query, params)
        ]
    if types and len(types) > 1:
        found.sort(key=lambda event: event.key)
    return found[:limit]


class Events:
    """The events feed on SQLite (store.contract.Events)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def page(
        self,
        workspace_id: str,
        after: Position,
        settled_before: dt.datetime,
        page_size: int,
        types: Sequence[str] | None = None,
    ) -> EventPage:
        """The committed events after `after`, of `types` (all when None), oldest first: at
        most `page_size`, and whether more follow; every one is final, whether or not it
        occurred after `settled_before`, which only bounds how far a caught-up page moves
        (the module's docstring). One keyset read per type on an index, each at most
        `page_size` + 1 rows, in one snapshot, so a page costs the same at any depth."""
        settled = ms(settled_before)
        ordered = sorted(set(types)) if types else None
        found = await self.engine.read(
            _page,
            workspace_id,
            after,
            page_size + 1,
            ordered,
            quick=True,
            snapshot=bool(ordered and len(ordered) > 1),
        )
        return EventPage(found[:page_size], len(found) > page_size, instant(settled))

    async def recover(self, older_than: dt.datetime, batch: int = 50) -> int:
        """Nothing to recover: every event is written in the transaction of its change."""
        return 0

    async def rewrite(self, workspace_id: str, event_id: str, data: dict) -> bool:
        """Replace a stored event's data (one write unit); whether the workspace had it."""

        def rewrite(conn: sqlite3.Connection) -> bool:
            return bool(
                conn.execute(
                    "UPDATE events SET data = ? WHERE workspaceId = ? AND occurredAt = ? "
                    'AND "_id" = ?',  # the feed's index: an id carries its instant
                    (encode(data), workspace_id, ms(instant_of(event_id)), event_id),
                ).rowcount
            )

        return await self.engine.write(rewrite)

    async def delete_expired(
        self, before: dt.datetime, batch: int = 1000, max_batches: int = 10
    ) -> int:
        """Delete events that occurred before `before`, oldest first, in at most `max_batches`
        write units of `batch` (requests interleave between them); how many were deleted.
        Events are written in the order of their instants, so the table's own order (rowid)
        is the age order: each unit looks at the `batch` oldest rows only, and no index is
        kept for retention alone."""

        def delete(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM events WHERE rowid IN (SELECT rowid FROM (SELECT rowid, "
                "occurredAt FROM events ORDER BY rowid LIMIT ?) WHERE occurredAt < ?)",
                (batch, ms(before)),
            ).rowcount

        deleted = 0
        for _ in range(max_batches):
            found = await self.engine.write(delete)
            deleted += found
            if found < batch:
                break
        return deleted
