"""Changing and deleting a prospect on SQLite, each one write transaction with its events.

A delete leaves the tombstone store/tombstones.py describes, takes the prospect out of each of
its lists (membership, prospectsCount, updatedAt, `list.updated`), deletes its timeline and
takes it off the workspace's prospects counter, all or nothing; its calls keep their
prospectId. Every statement is served by a primary key or an index.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

from store.dnc import PROSPECT_FIELDS as DNC_FIELDS
from store.events import Removed
from store.identity import CONTACT_FIELDS
from store.prospect_changes import (
    ProspectExists,
    changes_of,
    dnc_keys,
    do_not_call_changes,
    identifying,
)
from store.prospects import DERIVED
from store.prospects import record as prospect_record
from store.sqlite.dnc import listed as on_list
from store.sqlite.paging import bump
from store.sqlite.schema import ms, to_doc
from store.tombstones import PROSPECT_CLEARED, dedupe_key

if TYPE_CHECKING:
    from store.sqlite.engine import Engine
    from store.sqlite.events import EventWriter

STORED = (
    *("_id", "dedupeKey", *CONTACT_FIELDS, *DERIVED.values(), "ownerUserId", "listIds"),
    *DNC_FIELDS,
)
READ = (
    f"SELECT {', '.join(f'{chr(34)}{name}{chr(34)}' for name in STORED)}, createdAt, updatedAt "
    'FROM prospects WHERE "_id" = ? AND workspaceId = ? AND deletedAt IS NULL'
)
TOMBSTONE = (
    "UPDATE prospects SET "
    + "".join(f'"{name}" = NULL, ' for name in PROSPECT_CLEARED)
    + "listIds = '[]', dedupeKey = ?1, deletedAt = ?2, updatedAt = ?2 "
    'WHERE "_id" = ?3 AND workspaceId = ?4 AND deletedAt IS NULL'
)


def update_unit(
    conn: sqlite3.Connection,
    workspace_id: str,
    prospect_id: str,
    fields: dict,
    region: str,
    events: EventWriter,
) -> tuple[dict, bool] | None:
    """PATCH's write unit: the prospect as it is after the change and whether anything
    changed, or None when there is no live prospect with this id."""
    row = conn.execute(READ, (prospect_id, workspace_id)).fetchone()
    if row is None:
        return None
    doc = to_doc(row)
    changes = changes_of(doc, fields, region)
    listed = set(on_list(conn, workspace_id, dnc_keys(doc, changes)))
    changes |= do_not_call_changes(doc, fields, changes, listed)
    if not changes:
        return prospect_record(doc), False
    if "dedupeKey" in changes:
        taken = conn.execute(
            'SELECT 1 FROM prospects WHERE workspaceId = ? AND dedupeKey = ? AND "_id" != ?',
            (workspace_id, changes["dedupeKey"], prospect_id),
        ).fetchone()
        if taken:
            raise ProspectExists(identifying(fields))
    now = events.now()
    assigned = ", ".join(f'"{name}" = ?' for name in (*changes, "updatedAt"))
    conn.execute(
        f'UPDATE prospects SET {assigned} WHERE "_id" = ? AND workspaceId = ?',
        (*changes.values(), ms(now), prospect_id, workspace_id),
    )
    events.record(conn, workspace_id, [("prospect.updated", prospect_id)])
    changed = {**doc, **changes, "updatedAt": now}
    return prospect_record({k: v for k, v in changed.items() if v is not None}), True


def delete_unit(
    conn: sqlite3.Connection, workspace_id: str, prospect_id: str, events: EventWriter
) -> bool | None:
    """DELETE's write unit: True when it deleted the prospect, False when it was deleted
    already (its tombstone is kept), None when no such prospect ever was (or it is swept)."""
    row = conn.execute(
        'SELECT deletedAt, listIds FROM prospects WHERE "_id" = ? AND workspaceId = ?',
        (prospect_id, workspace_id),
    ).fetchone()
    if row is None:
        return None
    if row[0] is not None:
        return False
    at = events.now()
    left = []
    for list_id in json.loads(row[1]):
        gone = conn.execute(
            "DELETE FROM memberships WHERE workspaceId = ? AND listId = ? AND prospectId = ?",
            (workspace_id, list_id, prospect_id),
        ).rowcount
        if (
            gone
            and conn.execute(
                "UPDATE lists SET prospectsCount = MAX(prospectsCount - 1, 0), updatedAt = ? "
                'WHERE "_id" = ? AND workspaceId = ? AND deletedAt IS NULL',
                (ms(at), list_id, workspace_id),
            ).rowcount
        ):
            left.append(list_id)
    conn.execute(
        "DELETE FROM activities WHERE workspaceId = ? AND prospectId = ?",
        (workspace_id, prospect_id),
    )
    conn.execute(TOMBSTONE, (dedupe_key(prospect_id), ms(at), prospect_id, workspace_id))
    bump(conn, workspace_id, "prospects", -1)
    events.record(
        conn,
        workspace_id,
        [("list.updated", list_id) for list_id in left],
        removed=[Removed("prospect", prospect_id, at)],
    )
    return True


class ProspectChanges:
    """PATCH and DELETE of a prospect (a part of store/sqlite/prospects.py's Prospects)."""

    engine: Engine
    events: EventWriter
    default_region: str

    async def update(
        self, workspace_id: str, prospect_id: str, fields: dict
    ) -> tuple[dict, bool] | None:
        return await self.engine.write(
            update_unit, workspace_id, prospect_id, fields, self.default_region, self.events
        )

    async def delete(self, workspace_id: str, prospect_id: str) -> bool | None:
        return await self.engine.write(delete_unit, workspace_id, prospect_id, self.events)
