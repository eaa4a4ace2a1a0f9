"""Values the service keeps in its own database file on SQLite: the key-signing secret."""

from __future__ import annotations

import secrets

from store.sqlite.engine import Engine


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
