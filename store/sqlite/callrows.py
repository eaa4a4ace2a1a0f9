"""How a call is stored on SQLite: its columns, the record JSON its insert writes beside them,
and the insert of new calls with everything kept in the same transaction (their `call`
timeline entries, whether each call's toNumber is on the do-not-call list, the workspace's call
total, the dialer metrics' quarter-hour counts, their events)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import sqlite3
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from store.activities import call_activity
from store.calls import ERASED_AT, RECORD_FIELDS, suppressed_numbers
from store.sqlite.metrics import add_to_quarters, quarter_sums
from store.sqlite.paging import bump
from store.sqlite.schema import Rows, insert_rows, json_record, ms, rows_of, to_row

if TYPE_CHECKING:
    from store.sqlite.events import EventWriter

FIELDS = ", ".join(f'"{name}"' for name in ("_id", *RECORD_FIELDS, ERASED_AT))
SELECT = f"SELECT {FIELDS} FROM calls"
SHOWN = {"id": "_id", **{name: name for name in RECORD_FIELDS}}  # record key: column
JSON = json_record(SHOWN)  # a call's record built from its columns
# A page reads each call's record as stored by its insert (or, in a row written before the
# `record` column existed, builds it there and then; a row written before `toNumberSuppressed`
# existed has it NULL, and false added to its stored record).
ENCODED = (
    f"CASE WHEN record IS NULL THEN {JSON} WHEN toNumberSuppressed IS NULL "
    "THEN json_set(record, '$.toNumberSuppressed', json('false')) ELSE record END"
)


@dataclasses.dataclass
class NewCalls:
    """What inserting a batch of calls writes, made before the write unit (`prepare`)."""

    count: int
    calls: Rows
    activities: Rows
    quarters: dict[tuple, list[int]]
    events: list[tuple[str, str]]  # (event type, record id)


def prepare(documents: list[dict]) -> NewCalls:
    """The rows of new call documents, their `call` timeline entries, their quarter-hour counts
    and their events: pure Python, made on a worker thread while the writer writes the previous
    batch."""
    entries = [call_activity(doc) for doc in documents]
    for doc in documents:  # a prebuilt document may lack it: it was not checked
        doc.setdefault("toNumberSuppressed", False)
    return NewCalls(
        len(documents),
        rows_of(documents),
        rows_of(entries),
        quarter_sums(documents),
        [("call.created", doc["_id"]) for doc in documents]
        + [("activity.created", entry["_id"]) for entry in entries],
    )


@dataclasses.dataclass
class Ahead:
    """A new call's rows, made before its write unit and off the writer's thread (a batch of
    the import, while the writer writes the batch before it); the unit sets the instants that
    must be taken under the write lock (the call's updatedAt, its entry's storedAt)."""

    doc: dict
    columns: tuple
    values: list
    entry_id: str
    entry_columns: tuple
    entry_values: list


def ahead(doc: dict) -> Ahead:
    entry = call_activity(doc)
    row, entry_row = to_row(doc), to_row(entry)
    return Ahead(
        doc,
        tuple(row),
        list(row.values()),
        entry["_id"],
        tuple(entry_row),
        list(entry_row.values()),
    )


def from_ahead(
    items: list[Ahead],
    now: dt.datetime,
    quarters: dict[tuple, list[int]] | None = None,
    listed: AbstractSet[str] = frozenset(),
) -> NewCalls:
    """The NewCalls of calls made ahead, written at `now`: each call's updatedAt is `now` (or
    its endedAt, up to a minute ahead: as NewCall.document makes it), its entry's storedAt
    `now`, its toNumberSuppressed whether its toNumber's key is among `listed` (the do-not-call
    keys read in the write unit). `quarters`: the items' quarter_sums, when made ahead too
    (instants of the write do not count; nor do they when a call is suppressed)."""
    calls: Rows = {}
    entries: Rows = {}
    stored = ms(now)
    docs = [item.doc for item in items]
    suppressed_numbers(docs, listed)
    if any(doc["toNumberSuppressed"] for doc in docs):
        quarters = None  # made ahead as unsuppressed
    for item in items:
        doc = item.doc
        doc["updatedAt"] = updated = max(now, doc["endedAt"])
        item.values[item.columns.index("updatedAt")] = ms(updated)
        item.values[item.columns.index("toNumberSuppressed")] = int(doc["toNumberSuppressed"])
        item.entry_values[item.entry_columns.index("storedAt")] = stored
        calls.setdefault(item.columns, []).append(tuple(item.values))
        entries.setdefault(item.entry_columns, []).append(tuple(item.entry_values))
    return NewCalls(
        len(items),
        calls,
        entries,
        quarter_sums(docs) if quarters is None else quarters,
        [("call.created", doc["_id"]) for doc in docs]
        + [("activity.created", item.entry_id) for item in items],
    )


def write_calls(
    conn: sqlite3.Connection,
    workspace_id: str,
    new: NewCalls,
    events: EventWriter,
    also: Iterable[tuple[str, str]] = (),
) -> None:
    """Insert calls with their `call` timeline entries, count them and record their events
    (with the events `also` of the same unit), in the caller's transaction."""
    insert_rows(
        conn, "calls", new.calls, computed={"record": lambda value: json_record(SHOWN, value)}
    )
    insert_rows(conn, "activities", new.activities, "INSERT OR IGNORE")
    bump(conn, workspace_id, "calls", new.count)
    add_to_quarters(conn, workspace_id, new.quarters)
    events.record(conn, workspace_id, [*also, *new.events])
