"""Dialer lists on SQLite: creation, paging, lookup, and the prospectsCount counter."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from store.exports import BATCH_SIZE, Lines
from store.idempotency import IdempotentWrite
from store.lists import Removal, list_changes
from store.paging import Page, Window
from store.records import list_document, list_record
from store.sqlite.engine import Engine
from store.sqlite.exports import export_batches
from store.sqlite.idempotency import write_once
from store.sqlite.memberships import delete_unit, purge_batch, remove_unit
from store.sqlite.paging import bump, page_query, quick
from store.sqlite.prospects import UPLOAD_TIMEOUT
from store.sqlite.schema import has_row, insert, json_record, ms, to_doc
from store.sqlite.tombstones import either_json
from store.tombstones import either_record

if TYPE_CHECKING:
    from store.sqlite.events import EventWriter

COLUMNS = ("_id", "name", "source", "ownerUserId", "createdAt", "updatedAt", "prospectsCount")
FIELDS = ", ".join(f'"{name}"' for name in COLUMNS)
SELECT = f"SELECT {FIELDS} FROM lists"
JSON = json_record({"id" if name == "_id" else name: name for name in COLUMNS})
EVENT_SOURCE = ("lists", "", JSON)  # store/sqlite/events.py
ONE = '"_id" = ? AND workspaceId = ? AND deletedAt IS NULL'


class Lists:
    def __init__(self, engine: Engine, events: EventWriter) -> None:
        self.engine = engine
        self.events = events

    async def create(
        self,
        workspace_id: str,
        name: str,
        owner_user_id: str,
        source: str = "CSV",
        created_at: dt.datetime | None = None,
        list_id: str | None = None,
        once: IdempotentWrite | None = None,
    ) -> dict:
        doc = list_document(
            workspace_id,
            name,
            owner_user_id,
            source,
            created_at or self.events.now(),
            list_id,
            once,
        )

        record = list_record(doc)

        def create(conn: sqlite3.Connection) -> dict:
            insert(conn, "lists", [doc])
            bump(conn, workspace_id, "lists", 1)
            self.events.record(conn, workspace_id, [("list.created", str(doc["_id"]))])
            return record

        return await write_once(self.engine, once, create)

    async def get(self, workspace_id: str, list_id: str) -> dict | None:
        def get(conn):
            row = conn.execute(
                f'{SELECT} WHERE "_id" = ? AND workspaceId = ? AND deletedAt IS NULL',
                (list_id, workspace_id),
            ).fetchone()
            return row and list_record(to_doc(row))

        return await self.engine.read(get, quick=True)

    async def page(
        self,
        workspace_id: str,
        window: Window,
        *,
        updated_since: dt.datetime | None = None,
        encoded: bool = False,
        include_deleted: bool = False,
    ) -> Page:
        live = not include_deleted
        where, params = _where(workspace_id, updated_since, live)
        unfiltered = live and updated_since is None

        def page_of(conn):
            return page_query(
                conn,
                fields=FIELDS if live else f'{FIELDS}, "deletedAt"',
                source="lists",
                where=where,
                params=params,
                window=window,
                order=(window.field, "_id"),
                record=list_record if live else either_record(list_record),
                encoded=(JSON if live else either_json(JSON, "")) if encoded else None,
                counted=(workspace_id, "lists") if unfiltered else None,
            )

        return await self.engine.read(
            page_of, snapshot=not encoded, quick=quick(window, unfiltered)
        )

    async def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = BATCH_SIZE,
        updated_since: dt.datetime | None = None,
    ) -> AsyncGenerator[Lines, None]:
        """The lists last changed at or before `settled_before`, in the sync order, as NDJSON
        batches."""
        where, params = _where(workspace_id, updated_since)
        async for batch in export_batches(
            self.engine,
            source="lists",
            where=where,
            params=params,
            order=("updatedAt", "_id"),
            encoded=JSON,
            settled_before=settled_before,
            batch_size=batch_size,
        ):
            yield batch

    async def update(
        self, workspace_id: str, list_id: str, fields: dict
    ) -> tuple[dict, bool] | None:
        """Set the list's `name` and/or `ownerUserId` (store.records.list_changes): the list
        and whether it changed (updatedAt moves and `list.updated` is recorded only then), or
        None when there is no such list."""

        def update(conn: sqlite3.Connection) -> tuple[dict, bool] | None:
            row = conn.execute(f"{SELECT} WHERE {ONE}", (list_id, workspace_id)).fetchone()
            if row is None:
                return None
            doc = to_doc(row)
            changes = list_changes(doc, fields)
            if not changes:
                return list_record(doc), False
            changes["updatedAt"] = self.events.now()
            assigned = ", ".join(f'"{name}" = ?' for name in changes)
            values = [ms(v) if isinstance(v, dt.datetime) else v for v in changes.values()]
            conn.execute(
                f"UPDATE lists SET {assigned} WHERE {ONE}", (*values, list_id, workspace_id)
            )
            self.events.record(conn, workspace_id, [("list.updated", list_id)])
            return list_record({**doc, **changes}), True

        return await self.engine.write(update)

    async def remove_members(
        self,
        workspace_id: str,
        listing: dict,
        prospect_ids: list[str],
        once: IdempotentWrite | None = None,
    ) -> Removal:
        """Take prospects out of `listing` (a list record) in one transaction
        (store/sqlite/memberships.py), with its stored response under an Idempotency-Key."""
        return await write_once(
            self.engine,
            once,
            remove_unit,
            workspace_id,
            listing,
            prospect_ids,
            self.events,
            once,
            timeout=UPLOAD_TIMEOUT,
        )

    async def delete(self, workspace_id: str, list_id: str) -> bool | None:
        """Make the list a tombstone (store/sqlite/memberships.py): True; False when it was
        deleted already; None when there is no such list."""
        return await self.engine.write(delete_unit, workspace_id, list_id, self.events)

    async def purge(self, batch: int) -> int:
        """One unit of a deleted list's purge (store/sqlite/memberships.py); with no purge
        waiting, no write lock is taken (an idle worker waits for no other process's import)."""
        if not await self.engine.read(
            has_row, "SELECT 1 FROM list_purges LIMIT 1", snapshot=False, quick=True
        ):
            return 0
        return await self.engine.write(purge_batch, batch, self.events, timeout=UPLOAD_TIMEOUT)

    async def set_count(self, workspace_id: str, list_id: str, members: int) -> dict | None:
        """Record the list's counted number of prospects and move updatedAt; returns the list.
        The larger count wins (as `$max` on MongoDB): a removal sets its own count."""

        def set_count(conn: sqlite3.Connection) -> dict | None:
            changed = conn.execute(
                "UPDATE lists SET prospectsCount = MAX(prospectsCount, ?), updatedAt = ? "
                'WHERE "_id" = ? AND workspaceId = ? AND deletedAt IS NULL',
                (members, ms(self.events.now()), list_id, workspace_id),
            ).rowcount
            if changed:
                self.events.record(conn, workspace_id, [("list.updated", list_id)])
            row = conn.execute(
                f'{SELECT} WHERE "_id" = ? AND workspaceId = ? AND deletedAt IS NULL',
                (list_id, workspace_id),
            ).fetchone()
            return row and list_record(to_doc(row))

        return await self.engine.write(set_count)


def _where(
    workspace_id: str, updated_since: dt.datetime | None, live: bool = True
) -> tuple[list[str], list]:
    """The WHERE of GET /lists: the workspace, not deleted (unless `live` is false), and
    updatedAt >= since."""
    where: list[str] = ["workspaceId = ?", "deletedAt IS NULL"] if live else ["workspaceId = ?"]
    params: list = [workspace_id]
    if updated_since is not None:
        where.append("updatedAt >= ?")
        params.append(ms(updated_since))
    return where, params
