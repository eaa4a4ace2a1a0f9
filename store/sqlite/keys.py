"""API key records on SQLite. The plain key (a signed JWT) is never stored: only its id and
metadata (store/keys.py)."""

from __future__ import annotations

import datetime as dt

from store.clock import SYSTEM_CLOCK, Clock, new_id
from store.keys import DEFAULT_SCOPES, ActiveKey, active_key, key_document, key_record
from store.sqlite.engine import Engine
from store.sqlite.schema import insert, ms, to_doc


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
