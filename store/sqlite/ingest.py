"""The dialer's writes on SQLite (store/ingest.py): recording calls, changing a call, logging
activities, each one write unit (all or nothing).

Recording calls checks their references, matches the contacts of calls given by contact (the
upload's rules, store/sqlite/prospects.py), compares the calls whose provider SID is recorded
already, creates the prospects the calls land on, and inserts the new calls with their
timeline entries, the workspace's call total and the dialer metrics' quarter-hour counts, in
the writer's transaction, each call's toNumberSuppressed read from the do-not-call list there:
concurrent posts of one SID take turns at the write lock, and the later ones find the first.
With `partial` (the import), a refused call is left out and the others are written;
otherwise the first refusal rolls the whole unit back.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Collection
from typing import TYPE_CHECKING

from store.activities import call_activity
from store.activities import record as activity_record
from store.calls import number_keys
from store.calls import record as call_record
from store.classify import Earlier, Recording
from store.clock import utcnow
from store.idempotency import IdempotentWrite
from store.ingest import (
    CREATED,
    EXISTING,
    Logged,
    NewActivity,
    NewCall,
    Recorded,
    References,
    Refusal,
    activity_documents,
    activity_wanted,
    call_ids,
    changes_to,
    converging,
    follows_activity,
    wanted,
)
from store.prospects import Candidate, Contact, outcomes, recognise_created
from store.sqlite.callrows import JSON as CALL_JSON
from store.sqlite.callrows import SELECT, Ahead, ahead, from_ahead, write_calls
from store.sqlite.dnc import listed as dnc_listed
from store.sqlite.matching import create_and_fill, resolve_contacts
from store.sqlite.metrics import add_to_quarters, quarter_sums
from store.sqlite.schema import insert, ms, to_doc

if TYPE_CHECKING:
    from store.sqlite.events import EventWriter

LIVE = " AND deletedAt IS NULL"  # a deleted user, prospect or list is an unknown reference
# Whether a call changes what it counts for in the dialer metrics.
COUNTED = ("disposition", "meetingBooked")


def _marks(values: Collection[object]) -> str:
    return ", ".join("?" * len(values))


def existing_ids(
    conn: sqlite3.Connection, table: str, workspace_id: str, ids: Collection[str], extra: str = ""
) -> set[str]:
    """The ids among `ids` of records of the workspace in `table` (by primary key: the unary +
    keeps SQLite from walking a workspaceId index instead)."""
    if not ids:
        return set()
    rows = conn.execute(
        f'SELECT "_id" FROM {table} WHERE +workspaceId = ? AND "_id" IN ({_marks(ids)}){extra}',
        (workspace_id, *ids),
    )
    return {row[0] for row in rows}


def references(conn: sqlite3.Connection, workspace_id: str, calls: list[NewCall]) -> References:
    users, prospects, lists = wanted(calls)
    return References(
        existing_ids(conn, "users", workspace_id, users, LIVE),
        existing_ids(conn, "prospects", workspace_id, prospects, LIVE),
        existing_ids(conn, "lists", workspace_id, lists, LIVE),
    )


def record_calls(
    conn: sqlite3.Connection,
    workspace_id: str,
    calls: list[NewCall],
    contacts: list[Contact | None],
    once: IdempotentWrite | None,
    partial: bool,
    events: EventWriter,
    made: Made | None = None,
) -> list[Recorded]:
    """The write unit of Calls.record: see the module's docstring. `contacts` are the parsed
    contacts of the calls given by contact (None for the others); `made` the rows of calls
    made ahead (`make_ahead`), by index, used where they are what the unit would make. Its
    events: `call.created` and the `activity.created` of its timeline entry for each call it
    creates, and `prospect.created` or `prospect.updated` for each prospect a contact created
    or filled."""
    now = events.now()  # taken under the write lock: never behind a commit before it
    recording = Recording(calls, partial)
    results = recording.results
    recording.check_references(references(conn, workspace_id, calls))
    # Contacts are matched together (one read of the candidates); the prospects of the calls
    # that are written are created below.
    given = [i for i, c in enumerate(contacts) if c is not None and results[i] is None]
    parsed = [c for i in given if (c := contacts[i]) is not None]
    targets, chosen, new = resolve_contacts(conn, workspace_id, parsed)
    prospect_of = dict(zip(given, chosen, strict=True))
    marks = [once.record_id("call", str(i)) for i in range(len(calls))] if once else None
    ids = made.ids if made else call_ids(workspace_id, calls, marks)
    found = {
        row["_id"]: row
        for row in _rows(conn, workspace_id, [ids[i] for i in converging(calls, marks)])
    }
    earlier = {call_id: Earlier(row["contentHash"]) for call_id, row in found.items()}
    owners = recording.classify(ids, prospect_of, earlier, marks)
    written = [i for i, r in enumerate(results) if r is not None and r.refusal is None]
    used = {id(prospect_of[i]) for i in written if i in prospect_of}
    changed = create_and_fill(
        conn,
        workspace_id,
        [t for t in targets if id(t) in used],
        {key: t for key, t in new.items() if id(t) in used},
        owners,
        now,
        once,
    )
    recognise_created(targets, once)
    docs: dict[str, dict] = {}
    items: list[Ahead] = []
    not_made_ahead = 0
    for index in written:
        call, call_id = calls[index], ids[index]
        if (r := results[index]) is not None and r.outcome == CREATED and call_id not in docs:
            target = prospect_of.get(index)
            prospect_id = call.prospect_id or (target.id if target else None)
            assert prospect_id is not None  # created above
            item = made.rows.get(index) if made else None
            if item is None or (item.doc["_id"], item.doc["prospectId"]) != (call_id, prospect_id):
                item = ahead(call.document(workspace_id, call_id, prospect_id, now))
                not_made_ahead += 1
            docs[call_id] = item.doc
            items.append(item)
    if items:
        # The quarter-hour counts made ahead hold when every row made ahead is written.
        whole = made is not None and not not_made_ahead and len(items) == len(made.rows)
        quarters = made.quarters if made is not None and whole else None
        # Read in the unit: a call counts as suppressed exactly when its number's entry was
        # committed before it.
        listed = set(dnc_listed(conn, workspace_id, number_keys([i.doc for i in items])))
        inserted = from_ahead(items, now, quarters, listed)
        write_calls(conn, workspace_id, inserted, events, changed)
    else:
        events.record(conn, workspace_id, changed)
    matched = [i for i in written if i in prospect_of]
    matches = dict(zip(matched, _matches([prospect_of[i] for i in matched]), strict=True))
    for index in written:
        result = results[index]
        assert result is not None
        call_id = ids[index]
        doc = docs[call_id] if call_id in docs else to_doc(found[call_id])
        result.call, result.match = call_record(doc), matches.get(index)
    return [r for r in results if r is not None]


@dataclasses.dataclass
class Made:
    """What make_ahead made of a batch: every call's id, the rows of the calls whose id and
    prospect are known before the write unit (by index), and their quarter-hour counts."""

    ids: list[str]
    rows: dict[int, Ahead]
    quarters: dict[tuple, list[int]]


def make_ahead(workspace_id: str, calls: list[NewCall], once: IdempotentWrite | None) -> Made:
    """The ids and rows of a batch's calls (pure Python: made on another thread while the
    writer writes; record_calls checks and completes them). The id of a call without a
    converging id (store.ingest.converging) is a new one, made here instead of in the unit."""
    marks = [once.record_id("call", str(i)) for i in range(len(calls))] if once else None
    ids = call_ids(workspace_id, calls, marks)
    placeholder = utcnow()  # record_calls sets the instants of the write
    rows = {
        index: ahead(call.document(workspace_id, ids[index], call.prospect_id, placeholder))
        for index in converging(calls, marks)
        if (call := calls[index]).prospect_id is not None
    }
    return Made(ids, rows, quarter_sums([item.doc for item in rows.values()]))


def _matches(chosen: list[Candidate]) -> list[dict]:
    """Per call given by contact: which prospect it became ({prospectId, outcome, reason?})."""
    return [{k: v for k, v in outcome.items() if k != "index"} for outcome in outcomes(chosen)]


def _rows(conn: sqlite3.Connection, workspace_id: str, ids: list[str]) -> list[sqlite3.Row]:
    if not ids:
        return []
    return conn.execute(
        f'{SELECT_HASHED} WHERE +workspaceId = ? AND "_id" IN ({_marks(ids)})',
        (workspace_id, *ids),
    ).fetchall()


SELECT_HASHED = SELECT.replace(" FROM calls", ", contentHash FROM calls")


def change_call(
    conn: sqlite3.Connection,
    workspace_id: str,
    call_id: str,
    changes: dict,
    events: EventWriter,
) -> dict | None:
    """The write unit of Calls.change: the changed fields, updatedAt moved (never backwards),
    the stored record rebuilt, the timeline entry and the quarter-hour counts following the
    change, and its `call.updated` event (with `activity.created` again for a rewritten timeline
    entry); a change that changes nothing writes nothing."""
    row = conn.execute(
        'SELECT * FROM calls WHERE "_id" = ? AND workspaceId = ?', (call_id, workspace_id)
    ).fetchone()
    if row is None:
        return None
    before = to_doc(row)
    changed = changes_to(before, changes)
    if not changed:
        return call_record(before)
    after = {**before, **changed, "updatedAt": max(events.now(), before["updatedAt"])}
    values = {name: after[name] for name in (*changed, "updatedAt")}
    stored = {
        name: ms(value)
        if name == "updatedAt"
        else (int(value) if isinstance(value, bool) else value)
        for name, value in values.items()
    }
    assignments = ", ".join(f'"{name}" = ?' for name in stored)
    conn.execute(
        f'UPDATE calls SET {assignments} WHERE "_id" = ? AND workspaceId = ?',
        (*stored.values(), call_id, workspace_id),
    )
    conn.execute(  # the stored record, from the columns as they are now
        f'UPDATE calls SET record = {CALL_JSON} WHERE "_id" = ? AND workspaceId = ?',
        (call_id, workspace_id),
    )
    if any(name in changed for name in COUNTED):
        sums = quarter_sums([after])
        for key, row_sums in quarter_sums([before]).items():
            target = sums.setdefault(key, [0] * len(row_sums))
            for i, value in enumerate(row_sums):
                target[i] -= value
        add_to_quarters(conn, workspace_id, sums)
    recorded = [("call.updated", call_id)]
    if follows_activity(changed):
        entry = call_activity(after)
        # The entry is rewritten where it is: a deleted prospect's timeline went with it, and
        # stays gone.
        if conn.execute(
            'SELECT 1 FROM activities WHERE "_id" = ? AND workspaceId = ?',
            (entry["_id"], workspace_id),
        ).fetchone():
            insert(conn, "activities", [entry], "INSERT OR REPLACE")
            # Activities have no `updated` event: the rewritten entry is sent again as created.
            recorded.append(("activity.created", entry["_id"]))
    events.record(conn, workspace_id, recorded)
    return call_record(after)


def log_activities(
    conn: sqlite3.Connection,
    workspace_id: str,
    activities: list[NewActivity],
    ids: list[str],
    partial: bool,
    events: EventWriter,
) -> list[Logged]:
    """The write unit of Activities.log: each activity's record and outcome (created, or
    existing: its id was written before), or its refusal; an `activity.created` event for each
    activity it created."""
    prospects, users, calls = activity_wanted(activities)
    found = (
        existing_ids(conn, "prospects", workspace_id, prospects, LIVE),
        existing_ids(conn, "users", workspace_id, users, LIVE),
        existing_ids(conn, "calls", workspace_id, calls),
    )
    results = []
    for doc in activity_documents(workspace_id, activities, ids, found, partial):
        if isinstance(doc, Refusal):
            results.append(Logged(None, None, doc))
        else:
            written = insert(conn, "activities", [doc], "INSERT OR IGNORE")
            results.append(Logged(activity_record(doc), CREATED if written else EXISTING))
    events.record(
        conn,
        workspace_id,
        [
            ("activity.created", r.activity["id"])
            for r in results
            if r.activity and r.outcome == CREATED
        ],
    )
    return results
