"""Change events, backend-neutral: the event types and the write that produces each, the ids
and instants events are recorded with, the JSON text an event is stored and served as, and a
page of the feed.

An event is `{"id", "type", "occurredAt", "data"}`: `type` is `<resource>.<action>`, `data` the
resource's API record as of the change (for an activity: the record GET /prospect-activities
returns, with its `prospectId`). `occurredAt` is when the event was recorded, which is after the
change it describes landed, never the time the writer stamped on the record: a write held back
on its way still gets an instant no reader has passed yet.

The feed's order is (occurredAt, id), ascending. Ids are UUIDv7 (RFC 9562) whose first 48 bits
are occurredAt in milliseconds and the next 12 bits the fraction of that millisecond (its
"increased clock precision" method), so that id order is recording order, even inside one
millisecond; `EventClock` never hands out an id at or below the last one it gave or the `floor`
it is told (SQLite passes the workspace's last event id, read inside the write transaction, so
that order holds across the processes sharing the file and across a clock that stepped back).

Each backend records events on its own terms (store/sqlite/events.py: in the transaction of
the change; store/mongo/events.py: a marker in the changed documents, then the events, then the
marker removed, and a sweeper for writers that died in between); both serve the same page.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import random
import threading

import orjson

from store.clock import SYSTEM_CLOCK, Clock
from store.paging import Position

# type: (resource, action). The writes that produce each are listed in docs/api.md ("Events").
TYPES: dict[str, tuple[str, str]] = {
    "call.created": ("call", "created"),
    "call.updated": ("call", "updated"),
    "prospect.created": ("prospect", "created"),
    "prospect.updated": ("prospect", "updated"),
    "prospect.deleted": ("prospect", "deleted"),
    "list.created": ("list", "created"),
    "list.updated": ("list", "updated"),
    "list.deleted": ("list", "deleted"),
    "activity.created": ("activity", "created"),
    "user.created": ("user", "created"),
    "user.updated": ("user", "updated"),
    "user.deleted": ("user", "deleted"),
    "do_not_call.added": ("do_not_call", "added"),
    "do_not_call.removed": ("do_not_call", "removed"),
    "erasure.completed": ("erasure", "completed"),
}
# Resources whose creation is not called "created": a suppression entry is "added".
CREATED = {"do_not_call": "added"}
RESOURCE = "events"  # the cursors' resource name
SORT = "occurredAt"  # the cursors' order (store.paging.SORTS)
# Events older than the retention horizon are removed this much later than the API stops
# serving them (410 events_expired), so that no page is read while its events are deleted.
DELETE_MARGIN = dt.timedelta(hours=1)
MAX_PAGE = 100
EPOCH = dt.datetime(1970, 1, 1)
FRACTION = 4096  # parts of a millisecond in an id (12 bits)
VARIANTS = "89ab"  # the first hex digit of an id's 4th group: RFC 9562's variant, 2 random bits


def event_type(resource: str, created: bool) -> str:
    """The type of an event about `resource` ("call", "prospect", ...)."""
    if created:
        return f"{resource}.{CREATED.get(resource, 'created')}"
    return f"{resource}.updated"


@dataclasses.dataclass(frozen=True)
class Removed:
    """A record a write removed, as the write recorded it in its unit (the record is gone:
    its event is made from this, never from the row): a `<resource>.deleted` event whose
    data is `{"id", "deletedAt"}` (a user's or a list's delete keeps a tombstone row), or,
    with `action` and `record`, `<resource>.<action>` carrying the record
    (DELETE /v1/do-not-call/{entryId}: `do_not_call.removed`)."""

    resource: str
    id: str
    at: dt.datetime
    # A removal that is not a deletion carries its own action and the record as its data (a
    # suppression entry's do_not_call.removed).
    action: str = "deleted"
    record: dict | None = None

    @property
    def type(self) -> str:
        return f"{self.resource}.{self.action}"

    @property
    def data(self) -> dict:
        return self.record if self.record is not None else {"id": self.id, "deletedAt": self.at}


# The random bits of ids: a generator of the process's own, seeded anew in every forked child
# (`serve --processes N`), so that no two processes draw the same bits.
_random = random.Random()
os.register_at_fork(after_in_child=_random.seed)


class EventClock:
    """Hands out (id, occurredAt) pairs in increasing order (the module's docstring)."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._time_ns = clock.time_ns
        self._last = 0  # the last id's time: milliseconds * FRACTION + fraction
        self._lock = threading.Lock()

    def now(self) -> dt.datetime:
        """The clock's current instant (milliseconds), never before an instant it handed out."""
        with self._lock:
            ticks = max(self._time_ns() * FRACTION // 1_000_000, self._last)
        return EPOCH + dt.timedelta(milliseconds=ticks // FRACTION)

    def take(
        self, count: int, floor: str | None = None, after: dt.datetime | None = None
    ) -> list[tuple[str, dt.datetime]]:
        """`count` ids with their instants, each after the previous and after `floor` (an
        id), and in a millisecond after `after` (an instant)."""
        with self._lock:
            ticks = self._time_ns() * FRACTION // 1_000_000
            if floor:
                ticks = max(ticks, _ticks(floor) + 1)
            if after is not None:
                ticks = max(ticks, ((after - EPOCH) // dt.timedelta(milliseconds=1) + 1) * FRACTION)
            ticks = max(ticks, self._last + 1)
            self._last = ticks + count - 1
        randoms = f"{_random.getrandbits(64 * count):0{16 * count}x}"
        stamps, instant, previous = [], EPOCH, -1
        for offset in range(count):
            millis, fraction = divmod(ticks + offset, FRACTION)
            if millis != previous:  # most ids of one call share their millisecond
                instant, previous = EPOCH + dt.timedelta(milliseconds=millis), millis
                head = f"{millis:012x}"
                head = f"{head[:8]}-{head[8:]}-7"
            tail = randoms[16 * offset : 16 * offset + 16]
            variant = VARIANTS[int(tail[0], 16) & 3]  # RFC 9562's variant bits, 10xx
            stamps.append((f"{head}{fraction:03x}-{variant}{tail[1:4]}-{tail[4:]}", instant))
        return stamps


def id_at(at: dt.datetime) -> str:
    """An event id of instant `at` (to the millisecond), as EventClock makes them: for events
    written by other means than a write path (the benchmark's deep feed)."""
    millis = (at - EPOCH) // dt.timedelta(milliseconds=1)
    head, tail = f"{millis:012x}", f"{_random.getrandbits(64):016x}"
    variant = VARIANTS[int(tail[0], 16) & 3]
    return f"{head[:8]}-{head[8:]}-7000-{variant}{tail[1:4]}-{tail[4:]}"


def first_id_at(at: dt.datetime) -> str:
    """The smallest event id of instant `at`: every event that occurred before `at` has a
    smaller id (ids sort as their instants), every other one a larger or equal id."""
    millis = (at - EPOCH) // dt.timedelta(milliseconds=1)
    head = f"{millis:012x}"
    return f"{head[:8]}-{head[8:]}-7000-8000-000000000000"


def instant_of(event_id: str) -> dt.datetime:
    """The instant (to the millisecond) an event id carries: its occurredAt."""
    return EPOCH + dt.timedelta(milliseconds=_ticks(event_id) // FRACTION)


def _ticks(event_id: str) -> int:
    """The time an id carries: its first 48 bits and its 12-bit fraction."""
    hexa = event_id.replace("-", "")
    return int(hexa[:12], 16) * FRACTION + int(hexa[13:16], 16)


def _default(value: object) -> object:
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.isoformat(timespec="milliseconds") + "Z"
    raise TypeError(f"cannot encode {type(value).__name__}")


def encode(record: dict) -> str:
    """A record as the API writes it (handlers.jsonio's form: instants with milliseconds and
    a Z), as the JSON text an event keeps in `data`."""
    return orjson.dumps(record, default=_default, option=orjson.OPT_PASSTHROUGH_DATETIME).decode()


def event_json(event_id: str, type: str, occurred_at: dt.datetime, data: str) -> str:
    """The API form of a stored event as JSON text, `data` spliced in as it is stored."""
    stamp = occurred_at.isoformat(timespec="milliseconds") + "Z"
    return f'{{"id":"{event_id}","type":"{type}","occurredAt":"{stamp}","data":{data}}}'


@dataclasses.dataclass(frozen=True)
class StoredEvent:
    """One event of a page: its id, type and instant, and its API form as JSON text."""

    id: str
    type: str
    occurred_at: dt.datetime
    text: str

    @property
    def position(self) -> Position:
        return Position(self.occurred_at, self.id)

    @property
    def key(self) -> tuple[dt.datetime, str]:
        """Its place in the feed's order."""
        return (self.occurred_at, self.id)


@dataclasses.dataclass
class EventPage:
    """Events after a position, oldest first. `settled` is the instant up to which every event
    there will ever be was visible to this read: when `has_more` is false, nothing at or
    before it can still arrive after the page's last event."""

    events: list[StoredEvent]
    has_more: bool
    settled: dt.datetime

    @property
    def last(self) -> Position | None:
        return self.events[-1].position if self.events else None

    def resume(self, after: Position) -> Position:
        """Where the page after this one starts (it was read after `after`): after its last
        event while more follow; caught up, right after the instant up to which the page was
        final (no event at or before it can arrive any more), unless `after` is further
        already. So a follower that keeps polling moves with time even when nothing happens,
        and never falls behind the retention horizon."""
        if self.has_more:
            assert self.events  # more follow: the page is full
            return self.events[-1].position
        settled = Position(self.settled + dt.timedelta(milliseconds=1), "")
        last = self.last or after
        return max(last, settled, key=lambda p: (p.value, p.id))


def merge(pages: list[list[StoredEvent]], limit: int) -> list[StoredEvent]:
    """The first `limit` events of several lists each in feed order (one per type)."""
    return sorted((event for page in pages for event in page), key=lambda e: e.key)[:limit]
