"""SQLite's durability setting: `sqlite_synchronous` (full by default: a commit is on disk
before the write is answered; normal: at the next checkpoint) on every connection of the file
store; the throwaway store syncs nothing either way."""

from __future__ import annotations

import pytest

from store.database import open_store

pytestmark = pytest.mark.sqlite

FULL, NORMAL = 2, 1  # PRAGMA synchronous


async def synchronous_of(store) -> set[int]:
    """The setting on the writer's connection and on the readers'."""

    def read(conn):
        return conn.execute("PRAGMA synchronous").fetchone()[0]

    return {
        await store.engine.write(read),
        await store.engine.read(read),
        await store.engine.read(read, quick=True),
    }


@pytest.mark.parametrize("setting, expected", [(None, FULL), ("full", FULL), ("normal", NORMAL)])
async def test_the_file_store_syncs_as_configured(tmp_path, setting, expected):
    extra = {"sqlite_synchronous": setting} if setting else {}
    store = open_store("", "x", sqlite_path=str(tmp_path / "db.sqlite3"), **extra)
    try:
        assert await synchronous_of(store) == {expected}
    finally:
        await store.close()


async def test_a_throwaway_store_does_not_sync(tmp_path):
    store = open_store("memory", "x", sqlite_synchronous="full")
    try:
        assert await synchronous_of(store) == {NORMAL}
    finally:
        await store.close()


def test_only_full_and_normal_are_accepted():
    from server.config import ConfigError, load_config
    from tests.helpers import test_environ

    with pytest.raises(ConfigError, match="sqlite_synchronous"):
        load_config(environ=test_environ(WSAPI_SQLITE_SYNCHRONOUS="off"))


async def test_a_write_that_need_not_be_durable_skips_the_sync_and_only_it(tmp_path):
    """Bookkeeping that is redone when lost (the webhook dispatcher's claims) commits without
    waiting for the disk; the writes after it are durable again."""
    store = open_store("", "x", sqlite_path=str(tmp_path / "db.sqlite3"))

    def read(conn):
        return conn.execute("PRAGMA synchronous").fetchone()[0]

    try:
        assert await store.engine.write(read, durable=False) == NORMAL
        assert await synchronous_of(store) == {FULL}

        def fail(conn):
            raise RuntimeError("the unit fails")

        with pytest.raises(RuntimeError):
            await store.engine.write(fail, durable=False)
        assert await synchronous_of(store) == {FULL}
    finally:
        await store.close()
