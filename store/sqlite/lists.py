"""Dialer lists on SQLite: creation, paging, lookup, and the prospectsCount counter."""

from __future__ import annotations

import datetime as dt
import sqlite3
from typing import TYPE_CHECKING

from store.clock import new_id, utcnow
from store.paging import Page, Window
from store.records import list_record
from store.sqlite.engine import Engine
from store.sqlite.paging import bump, page_query, quick
from store.sqlite.schema import insert, json_record, ms, to_doc

if TYPE_CHECKING:
    from store.sqlite.events import EventWriter

COLUMNS = ("_id", "name", "source", "ownerUserId", "createdAt", "updatedAt", "prospectsCount")
FIELDS = ", ".join(f'"{name}"' for name in COLUMNS)
SELECT = f"SELECT {FIELDS} FROM lists"
JSON = json_record({"id" if name == "_id" else name: name for name in COLUMNS})
EVENT_SOURCE = ("lists", "", JSON)  # store/sqlite/events.py


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
    ) -> dict:
        now = created_at or utcnow()
        doc = {
            "_id": list_id or new_id(),
            "workspaceId": workspace_id,
            "name": name,
            "source": source,
            "ownerUserId": owner_user_id,
            "createdAt": now,
            "updatedAt": now,
            "prospectsCount": 0,
        }

        def create(conn: sqlite3.Connection) -> None:
            insert(conn, "lists", [doc])
            bump(conn, workspace_id, "lists", 1)
            self.events.record(conn, workspace_id, [("list.created", str(doc["_id"]))])

        await self.engine.write(create)
        return list_record(doc)

    async def get(self, workspace_id: str, list_id: str) -> dict | None:
        def get(conn):
            row = conn.execute(
                f'{SELECT} WHERE "_id" = ? AND workspaceId = ?', (list_id, workspace_id)
            ).fetchone()
            return row and list_record(to_doc(row))

        return await self.engine.read(get, quick=True)

    async def page(self, workspace_id: str, window: Window, *, encoded: bool = False) -> Page:
        def page_of(conn):
            return page_query(
                conn,
                fields=FIELDS,
                source="lists",
                where=["workspaceId = ?"],
                params=[workspace_id],
                window=window,
                order=(window.field, "_id"),
                record=list_record,
                encoded=JSON if encoded else None,
                counted=(workspace_id, "lists"),
            )

        return await self.engine.read(page_of, snapshot=not encoded, quick=quick(window, True))

    async def set_count(self, workspace_id: str, list_id: str, members: int) -> dict | None:
        """Record the list's counted number of prospects and move updatedAt; returns the list.
        Members are never removed, so the larger count wins (as `$max` on MongoDB)."""

        def set_count(conn: sqlite3.Connection) -> dict | None:
            changed = conn.execute(
                "UPDATE lists SET prospectsCount = MAX(prospectsCount, ?), updatedAt = ? "
                'WHERE "_id" = ? AND workspaceId = ?',
                (members, ms(utcnow()), list_id, workspace_id),
            ).rowcount
            if changed:
                self.events.record(conn, workspace_id, [("list.updated", list_id)])
            row = conn.execute(
                f'{SELECT} WHERE "_id" = ? AND workspaceId = ?', (list_id, workspace_id)
            ).fetchone()
            return row and list_record(to_doc(row))

        return await self.engine.write(set_count)
