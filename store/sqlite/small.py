"""The small resources on SQLite: workspaces, users, API keys and settings."""

from __future__ import annotations

import builtins
import datetime as dt
import secrets

from store.clock import SYSTEM_CLOCK, Clock, new_id
from store.keys import DEFAULT_SCOPES, ActiveKey, active_key, key_document, key_record
from store.records import (
    admin_user_record,
    user_document,
    user_record,
    workspace_document,
    workspace_record,
)
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
        def get(conn):
            row = conn.execute(
                'SELECT * FROM workspaces WHERE "_id" = ?', (workspace_id,)
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


class Keys:
    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK) -> None:
        self.engine = engine
        self.clock = clock

    async def create(
        self,
        workspace_id: str,
        name: str,
        scopes: frozenset[str] = DEFAULT_SCOPES,
        expires_at: dt.datetime | None = None,
    ) -> dict:
        doc = key_document(workspace_id, new_id(), name, scopes, self.clock.now(), expires_at)
        await self.engine.write(insert, "api_keys", [doc])
        return key_record(doc)

    async def list(self, workspace_id: str) -> list[dict]:
        def listing(conn):
            rows = conn.execute(
                "SELECT * FROM api_keys WHERE workspaceId = ? ORDER BY createdAt", (workspace_id,)
            )
            return [key_record(to_doc(row)) for row in rows]

        return await self.engine.read(listing)

    async def find_active(self, workspace_id: str, key_id: str) -> ActiveKey | None:
        """The hot-path lookup behind authentication (cached by server.auth)."""

        def active(conn):
            row = conn.execute(
                'SELECT "_id", workspaceId, scopes, expiresAt FROM api_keys '
                'WHERE "_id" = ? AND workspaceId = ? AND revokedAt IS NULL',
                (key_id, workspace_id),
            ).fetchone()
            return row and active_key(to_doc(row))

        return await self.engine.read(active, quick=True)

    async def get(self, workspace_id: str, key_id: str) -> dict | None:
        def get(conn):
            row = conn.execute(
                'SELECT * FROM api_keys WHERE "_id" = ? AND workspaceId = ?',
                (key_id, workspace_id),
            ).fetchone()
            return row and key_record(to_doc(row))

        return await self.engine.read(get, quick=True)

    async def touch(self, workspace_id: str, key_id: str, at: dt.datetime) -> None:
        def touch(conn):
            conn.execute(
                'UPDATE api_keys SET lastUsedAt = ?1 WHERE "_id" = ?2 AND workspaceId = ?3 '
                "AND (lastUsedAt IS NULL OR lastUsedAt < ?1)",
                (ms(at), key_id, workspace_id),
            )

        await self.engine.write(touch)

    async def revoke(self, key_id: str) -> dict | None:
        """Operator scope (admin CLI only): revoke a key by id. Returns the record, or None."""

        def revoke(conn):
            conn.execute(
                'UPDATE api_keys SET revokedAt = ? WHERE "_id" = ? AND revokedAt IS NULL',
                (ms(self.clock.now()), key_id),
            )
            row = conn.execute('SELECT * FROM api_keys WHERE "_id" = ?', (key_id,)).fetchone()
            return row and key_record(to_doc(row))

        return await self.engine.write(revoke)


class Settings:
    """Values the service keeps in its own database file (the key-signing secret)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def signing_secret(self) -> str:
        """The secret that signs API keys, created on first use and kept in the file, so keys
        issued before a restart keep working."""

        def secret(conn):
            conn.execute(
                "INSERT OR IGNORE INTO settings (name, value) VALUES ('signing_secret', ?)",
                (secrets.token_urlsafe(48),),
            )
            return conn.execute(
                "SELECT value FROM settings WHERE name = 'signing_secret'"
            ).fetchone()[0]

        return await self.engine.write(secret)
