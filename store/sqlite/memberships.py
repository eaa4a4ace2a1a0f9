"""Taking prospects out of a list on SQLite: POST /lists/{id}/contacts/remove, one write
transaction (all or nothing) that deletes the memberships, takes the list out of the members'
`listIds` (their updatedAt moves), adds a `list_removed` activity to each one's timeline,
sets the list's prospectsCount and records the events of all of it."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from store.activities import list_removed_activity
from store.clock import new_id
from store.idempotency import IdempotentWrite
from store.lists import Removal, removal_results
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
