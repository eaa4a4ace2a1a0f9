"""Values the service keeps in its own database: none on MongoDB. The key-signing secret is
configuration there (WSAPI_SECRET, required: server.auth.resolve_secret), the same on every
host that shares the database, and never stored beside the data it protects."""

from __future__ import annotations


class Settings:
    async def signing_secret(self) -> str | None:
        """None: this store keeps no signing secret (see the module's docstring)."""
        return None
