"""Workspaces on SQLite: the tenants. Created by operators through the admin CLI."""

from __future__ import annotations

import builtins
import datetime as dt
import json
from collections.abc import Sequence

import store.sqlite.workspace_deletion as deletion
from store.clock import SYSTEM_CLOCK, Clock
from store.records import workspace_document, workspace_record
from store.sqlite.engine import Engine
from store.sqlite.schema import insert, ms, to_doc


class Workspaces:
    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK) -> None:
        self.engine = engine
        self.clock = clock

    async def create(
        self, name: str, workspace_id: str | None = None, created_at: dt.datetime | None = None
    ) -> dict:
        doc = workspace_document(name, workspace_id, created_at or self.clock.now())
        await self.engine.write(insert, "workspaces", [doc])
        return workspace_record(doc)

    async def get(self, workspace_id: str) -> dict | None:
        """The workspace's record; None when there is none, or it is being deleted."""

        def get(conn):
            row = conn.execute(
                'SELECT * FROM workspaces WHERE "_id" = ? AND deletingAt IS NULL', (workspace_id,)
            ).fetchone()
            return row and workspace_record(to_doc(row))

        return await self.engine.read(get, quick=True)

    async def list(self) -> list[dict]:
        """Operator scope (admin CLI, demo): every workspace, oldest first."""

        def listing(conn):
            rows = conn.execute("SELECT * FROM workspaces ORDER BY createdAt, _id")
            return [workspace_record(to_doc(row)) for row in rows]

        return await self.engine.read(listing)

    async def rename(self, workspace_id: str, name: str) -> dict | None:
        """Operator scope (admin CLI only): the workspace's new record, or None."""

        def rename(conn):
            conn.execute('UPDATE workspaces SET name = ? WHERE "_id" = ?', (name, workspace_id))
            row = conn.execute(
                'SELECT * FROM workspaces WHERE "_id" = ?', (workspace_id,)
            ).fetchone()
            return row and workspace_record(to_doc(row))

        return await self.engine.write(rename)

    async def update_settings(self, workspace_id: str, changes: dict) -> dict | None:
        """Operator scope (admin CLI only): set the settings named in `changes` (None removes
        one: the default applies again); the workspace's new record, or None."""

        def update(conn):
            row = conn.execute(
                'SELECT * FROM workspaces WHERE "_id" = ?', (workspace_id,)
            ).fetchone()
            if row is None:
                return None
            doc = to_doc(row)
            settings = {**(doc.get("settings") or {}), **changes}
            settings = {name: value for name, value in settings.items() if value is not None}
            conn.execute(
                'UPDATE workspaces SET settings = ? WHERE "_id" = ?',
                (json.dumps(settings) if settings else None, workspace_id),
            )
            return workspace_record({**doc, "settings": settings})

        return await self.engine.write(update)

    # -- deleting a workspace (store/workspace_deletion.py) -------------------------------------
    async def find(self, workspace_id: str) -> dict | None:
        return await self.engine.read(deletion.find, workspace_id)

    async def begin_delete(self, workspace_id: str, now: dt.datetime) -> dict | None:
        return await self.engine.write(deletion.begin, workspace_id, ms(now))

    async def recordings(
        self, workspace_id: str, after: str, limit: int
    ) -> builtins.list[tuple[str, str]]:
        return await self.engine.read(deletion.recordings, workspace_id, after, limit)

    async def forget_recordings(self, workspace_id: str, keys: Sequence[str]) -> None:
        await self.engine.write(deletion.forget_recordings, workspace_id, list(keys))

    async def purge(self, workspace_id: str, batch: int = 1000) -> int:
        return await self.engine.write(deletion.purge, workspace_id, batch)

    async def remove(self, workspace_id: str) -> bool:
        return await self.engine.write(deletion.remove, workspace_id)
