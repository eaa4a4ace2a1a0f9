"""The store and the key service a process opens first: `serve`, the demo and every operator
command (kept apart from server/app.py, so a command does not import the web application)."""

from __future__ import annotations

from server.auth import KeyService, resolve_secret
from server.config import Config, ConfigError
from store.clock import SYSTEM_CLOCK, Clock
from store.contract import Store
from store.database import open_store


def configured_store(config: Config, clock: Clock = SYSTEM_CLOCK) -> Store:
    """The store `config` names, on `clock`, not yet used (no index ensured)."""
    return open_store(
        config.mongodb_uri,
        config.database,
        config.db_timeout_seconds,
        config.default_region,
        config.sqlite_path,
        config.sqlite_synchronous,
        clock,
    )


async def open_services(
    config: Config,
    clock: Clock = SYSTEM_CLOCK,
    wait_for_indexes: bool = True,
) -> tuple[Store, KeyService]:
    """Connect the store (creating indexes idempotently) and the key service, both on `clock`
    (store.clock: tests pass a fake one and move it). Without `wait_for_indexes` the caller ensures
    indexes itself (serve retries them in the background). On shutdown, stop the key service's
    last-use writer (`auth.usage.stop()`) before closing the store."""
    secret = resolve_secret(config)
    store = configured_store(config, clock)
    try:
        if wait_for_indexes or store.embedded:
            await store.ensure_indexes()
        if secret is None:  # SQLite without a configured secret: the one kept in the file
            secret = await store.settings.signing_secret()
        if secret is None:  # a store that keeps none (MongoDB): resolve_secret requires it
            raise ConfigError("WSAPI_SECRET must be set for this store")
    except Exception:
        await store.close()
        raise
    auth = KeyService(secret, store.keys, config.key_cache_seconds, clock)
    return store, auth
