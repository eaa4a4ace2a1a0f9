"""The small resources on SQLite: workspaces, API keys and settings (users: users.py)."""

from __future__ import annotations

import datetime as dt
import secrets

from store.clock import new_id, utcnow
from store.keys import DEFAULT_SCOPES, ActiveKey, active_key, key_document, key_record
from store.records import workspace_document, workspace_record
from store.sqlite.engine import Engine
from store.sqlite.schema import insert, ms, to_doc


class Workspaces:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def create(
        self, name: str, workspace_id: str | None = None, created_at: dt.datetime | None = None
    ) -> dict:
        doc = workspace_document(name, workspace_id, created_at)
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


class Keys:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def create(
        self,
        workspace_id: str,
        name: str,
        scopes: frozenset[str] = DEFAULT_SCOPES,
        expires_at: dt.datetime | None = None,
    ) -> dict:
        doc = key_document(workspace_id, new_id(), name, scopes, utcnow(), expires_at)
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
                (ms(utcnow()), key_id),
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
