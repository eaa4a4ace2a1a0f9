"""Taking prospects out of a list on SQLite.

POST /lists/{id}/contacts/remove is one write transaction (all or nothing) that deletes the
memberships, takes the list out of the members' `listIds` (their updatedAt moves), adds a
`list_removed` activity to each one's timeline, sets the list's prospectsCount and records the
events of all of it.

DELETE /lists/{id} is one transaction that makes the list a tombstone (store/tombstones.py),
records `list.deleted` and a row in `list_purges`; the members then lose the list in units of
at most a batch (`purge_batch`, each one transaction with its `prospect.updated` events), run
by the lists' background work of any process (server/list_work.py) until none is left. A
process killed in between leaves the row: the work goes on after a restart, and no member is
ever half changed (a unit commits whole or not at all)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from store.activities import list_removed_activity
from store.clock import new_id
from store.events import Removed
from store.idempotency import IdempotentWrite
from store.lists import Removal, removal_results
from store.sqlite.paging import bump
from store.sqlite.schema import insert, ms

if TYPE_CHECKING:
    from store.sqlite.events import EventWriter

# The list's id taken out of a prospect's listIds (a JSON array), keeping the others' order.
WITHOUT = (
    "listIds = (SELECT json_group_array(value) FROM json_each(prospects.listIds) WHERE value != ?)"
)


def leave(
    conn: sqlite3.Connection, workspace_id: str, list_id: str, members: list[str], now: int
) -> None:
    """Delete the memberships of `members` (all of them members) and take the list out of
    their listIds, moving their updatedAt (caller's transaction)."""
    conn.executemany(
        "DELETE FROM memberships WHERE workspaceId = ? AND listId = ? AND prospectId = ?",
        [(workspace_id, list_id, member) for member in members],
    )
    conn.executemany(
        f'UPDATE prospects SET {WITHOUT}, updatedAt = ? WHERE "_id" = ? AND workspaceId = ?',
        [(list_id, now, member, workspace_id) for member in members],
    )


def remove_unit(
    conn: sqlite3.Connection,
    workspace_id: str,
    listing: dict,
    prospect_ids: list[str],
    events: EventWriter,
    once: IdempotentWrite | None = None,
) -> Removal:
    """The whole removal in the writer's transaction, with its events."""
    list_id, at = listing["id"], events.now()
    wanted = list(dict.fromkeys(prospect_id.lower() for prospect_id in prospect_ids))
    marks = ", ".join("?" * len(wanted))
    members = [
        row[0]
        for row in conn.execute(
            "SELECT prospectId FROM memberships WHERE workspaceId = ? AND listId = ? "
            f"AND prospectId IN ({marks})",
            (workspace_id, list_id, *wanted),
        )
    ]
    row = conn.execute(
        'SELECT prospectsCount FROM lists WHERE "_id" = ? AND workspaceId = ?',
        (list_id, workspace_id),
    ).fetchone()
    count = row[0] if row else 0
    if members:
        removal = once.record_id("removal") if once else new_id()
        leave(conn, workspace_id, list_id, members, ms(at))
        removed = [
            list_removed_activity(workspace_id, member, list_id, listing["name"], at, removal)
            for member in members
        ]
        insert(conn, "activities", removed, "INSERT OR IGNORE")
        count = max(count - len(members), 0)
        conn.execute(
            'UPDATE lists SET prospectsCount = ?, updatedAt = ? WHERE "_id" = ? '
            "AND workspaceId = ?",
            (count, ms(at), list_id, workspace_id),
        )
        events.record(
            conn,
            workspace_id,
            [
                *(("prospect.updated", member) for member in members),
                *(("activity.created", activity["_id"]) for activity in removed),
                ("list.updated", list_id),
            ],
        )
    return Removal(len(members), count, removal_results(prospect_ids, set(members)))


def delete_unit(
    conn: sqlite3.Connection, workspace_id: str, list_id: str, events: EventWriter
) -> bool | None:
    """Make the list a tombstone with its `list.deleted` event and its purge to come: True;
    False when it was deleted already; None when the workspace has no such list."""
    row = conn.execute(
        'SELECT deletedAt FROM lists WHERE "_id" = ? AND workspaceId = ?', (list_id, workspace_id)
    ).fetchone()
    if row is None:
        return None
    if row[0] is not None:
        return False
    at = events.now()
    conn.execute(
        'UPDATE lists SET deletedAt = ?1, updatedAt = ?1 WHERE "_id" = ?2 AND workspaceId = ?3',
        (ms(at), list_id, workspace_id),
    )
    bump(conn, workspace_id, "lists", -1)  # the counter counts live lists
    conn.execute(
        'INSERT OR IGNORE INTO list_purges ("_id", workspaceId) VALUES (?, ?)',
        (list_id, workspace_id),
    )
    events.record(conn, workspace_id, [], removed=[Removed("list", list_id, at)])
    return True


def purge_batch(conn: sqlite3.Connection, batch: int, events: EventWriter) -> int:
    """One unit of a deleted list's purge (any workspace's): up to `batch` members lose the
    list, with their events; the purge's row goes once no member is left. How many members
    it changed, or 1 for a purge it closed; 0 when no purge is waiting."""
    row = conn.execute('SELECT "_id", workspaceId FROM list_purges LIMIT 1').fetchone()
    if row is None:
        return 0
    list_id, workspace_id = row[0], row[1]
    members = [
        found[0]
        for found in conn.execute(
            "SELECT prospectId FROM memberships WHERE workspaceId = ? AND listId = ? LIMIT ?",
            (workspace_id, list_id, batch),
        )
    ]
    if not members:
        conn.execute('DELETE FROM list_purges WHERE "_id" = ?', (list_id,))
        return 1
    leave(conn, workspace_id, list_id, members, ms(events.now()))
    events.record(conn, workspace_id, [("prospect.updated", member) for member in members])
    return len(members)
