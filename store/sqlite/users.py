"""Workspace users on SQLite (the people who dial). Deleted users keep their record with deletedAt
set."""

from __future__ import annotations

import builtins
import datetime as dt

from store.clock import SYSTEM_CLOCK, Clock
from store.records import admin_user_record, user_document, user_record
from store.sqlite.engine import Engine
from store.sqlite.schema import insert, ms, to_doc


class Users:
    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK) -> None:
        self.engine = engine
        self.clock = clock

    async def create(
        self,
        workspace_id: str,
        email: str,
        first_name: str,
        last_name: str,
        created_at: dt.datetime | None = None,
        user_id: str | None = None,
    ) -> dict:
        doc = user_document(
            workspace_id, email, first_name, last_name, created_at or self.clock.now(), user_id
        )
        await self.engine.write(insert, "users", [doc])
        return user_record(doc)

    async def list_active(self, workspace_id: str) -> list[dict]:
        def active(conn):
            rows = conn.execute(
                'SELECT "_id", email, firstName, lastName, createdAt FROM users '
                "WHERE workspaceId = ? AND deletedAt IS NULL ORDER BY createdAt, _id",
                (workspace_id,),
            )
            return [user_record(to_doc(row)) for row in rows]

        return await self.engine.read(active, quick=True)

    async def is_active(self, workspace_id: str, user_id: str) -> bool:
        def active(conn):
            return (
                conn.execute(
                    'SELECT 1 FROM users WHERE "_id" = ? AND workspaceId = ? AND deletedAt IS NULL',
                    (user_id, workspace_id),
                ).fetchone()
                is not None
            )

        return await self.engine.read(active, quick=True)

    async def delete(self, workspace_id: str, user_id: str) -> bool:
        def delete(conn):
            return (
                conn.execute(
                    'UPDATE users SET deletedAt = ? WHERE "_id" = ? AND workspaceId = ? '
                    "AND deletedAt IS NULL",
                    (ms(self.clock.now()), user_id, workspace_id),
                ).rowcount
                == 1
            )

        return await self.engine.write(delete)

    async def workspace_of(self, user_id: str) -> str | None:
        """Operator scope (admin CLI only): which workspace a user id belongs to."""

        def find(conn):
            row = conn.execute(
                'SELECT workspaceId FROM users WHERE "_id" = ?', (user_id,)
            ).fetchone()
            return row and row[0]

        return await self.engine.read(find)

    async def list(self, workspace_id: str, include_deleted: bool = False) -> builtins.list[dict]:
        """The workspace's users with their deletedAt, oldest first (admin CLI)."""
        active = "" if include_deleted else " AND deletedAt IS NULL"

        def listing(conn):
            rows = conn.execute(
                f"SELECT * FROM users WHERE workspaceId = ?{active} ORDER BY createdAt, _id",
                (workspace_id,),
            )
            return [admin_user_record(to_doc(row)) for row in rows]

        return await self.engine.read(listing)
