"""Workspace users on SQLite (the people who dial): a deleted user keeps its row with deletedAt
set. Each write records its event in its own transaction (store/sqlite/events.py); the rules
both backends share (email checks and comparison, what a change changes) are store/users.py's."""

from __future__ import annotations

import builtins
import datetime as dt
import sqlite3
from typing import TYPE_CHECKING

from store.clock import SYSTEM_CLOCK, Clock
from store.events import Removed
from store.idempotency import IdempotentWrite
from store.records import admin_user_record, user_document, user_record
from store.sqlite.engine import Engine
from store.sqlite.idempotency import write_once
from store.sqlite.schema import insert, json_record, ms, to_doc
from store.users import UserExists, changes_of, check_seeded, checked_email, email_taken

if TYPE_CHECKING:
    from store.sqlite.events import EventWriter

COLUMNS = ("_id", "email", "firstName", "lastName", "createdAt", "updatedAt", "deletedAt")
JSON = json_record({"id" if name == "_id" else name: name for name in COLUMNS})
EVENT_SOURCE = ("users", "", JSON)  # store/sqlite/events.py
ONE = 'SELECT * FROM users WHERE "_id" = ? AND workspaceId = ?'
# The emails of the workspace's non-deleted users, from index users_ws_active_created.
HELD = 'SELECT "_id", email FROM users WHERE workspaceId = ? AND deletedAt IS NULL'


def _held(conn: sqlite3.Connection, workspace_id: str) -> list[tuple[str, str]]:
    return [(row[0], row[1] or "") for row in conn.execute(HELD, (workspace_id,))]


class Users:
    def __init__(self, engine: Engine, events: EventWriter, clock: Clock = SYSTEM_CLOCK) -> None:
        self.engine = engine
        self.events = events
        self.clock = clock

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt user documents as given (seeding), in one transaction with their
        events."""
        check_seeded(workspace_id, documents)

        def write(conn: sqlite3.Connection) -> None:
            insert(conn, "users", documents)
            self.events.record(
                conn, workspace_id, [("user.created", str(doc["_id"])) for doc in documents]
            )

        if documents:
            await self.engine.write(write)

    async def create(
        self,
        workspace_id: str,
        email: str,
        first_name: str,
        last_name: str,
        created_at: dt.datetime | None = None,
        user_id: str | None = None,
        once: IdempotentWrite | None = None,
    ) -> dict:
        user_id = user_id or (once.record_id("user") if once else None)
        doc = user_document(
            workspace_id,
            checked_email(email),
            first_name,
            last_name,
            created_at or self.clock.now(),
            user_id,
        )

        def create(conn: sqlite3.Connection) -> dict:
            if email_taken(doc["email"], _held(conn, workspace_id)):
                raise UserExists(doc["email"])
            insert(conn, "users", [doc])
            self.events.record(conn, workspace_id, [("user.created", str(doc["_id"]))])
            return admin_user_record(doc)

        return await write_once(self.engine, once, create)

    async def get(self, workspace_id: str, user_id: str) -> dict | None:
        def get(conn):
            row = conn.execute(ONE, (user_id, workspace_id)).fetchone()
            return row and admin_user_record(to_doc(row))

        return await self.engine.read(get, quick=True)

    async def update(
        self, workspace_id: str, user_id: str, fields: dict
    ) -> tuple[dict, bool] | None:
        if "email" in fields:
            fields = {**fields, "email": checked_email(fields["email"])}

        def update(conn: sqlite3.Connection) -> tuple[dict, bool] | None:
            row = conn.execute(ONE, (user_id, workspace_id)).fetchone()
            if row is None or row["deletedAt"] is not None:
                return None
            doc = to_doc(row)
            changes = changes_of(doc, fields)
            if not changes:
                return admin_user_record(doc), False
            if "email" in changes and email_taken(
                changes["email"], _held(conn, workspace_id), except_id=user_id
            ):
                raise UserExists(changes["email"])
            changes["updatedAt"] = self.clock.now()
            assigned = ", ".join(f'"{name}" = ?' for name in changes)
            values = [ms(v) if isinstance(v, dt.datetime) else v for v in changes.values()]
            conn.execute(
                f'UPDATE users SET {assigned} WHERE "_id" = ? AND workspaceId = ?',
                (*values, user_id, workspace_id),
            )
            self.events.record(conn, workspace_id, [("user.updated", user_id)])
            return admin_user_record({**doc, **changes}), True

        return await self.engine.write(update)

    async def list_active(self, workspace_id: str) -> list[dict]:
        def active(conn):
            rows = conn.execute(
                'SELECT "_id", email, firstName, lastName, createdAt, updatedAt FROM users '
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
        def delete(conn: sqlite3.Connection) -> bool:
            at = self.clock.now()
            deleted = conn.execute(
                'UPDATE users SET deletedAt = ?1, updatedAt = ?1 WHERE "_id" = ?2 '
                "AND workspaceId = ?3 AND deletedAt IS NULL",
                (ms(at), user_id, workspace_id),
            ).rowcount
            if deleted:
                self.events.record(conn, workspace_id, [], removed=[Removed("user", user_id, at)])
            return deleted == 1

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
