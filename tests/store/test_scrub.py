"""`store.scrub()`, the end of an erasure: on SQLite every connection zeroes what it deletes
(secure_delete) and the scrub truncates the write-ahead log to nothing, trying again while a
reader holds a snapshot; the bytes of a deleted row are then in neither file. On MongoDB it is
nothing to do for bytes (None)."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from store.sqlite import checkpoints
from store.sqlite.checkpoints import truncate_log
from tests.erased_bytes import assert_absent, assert_present, occurrences, stored_forms
from tests.helpers import wait_for

EMAIL = "Quentin.Zyxwvut@Erase-Me.example"
FIRST, LAST = "Quentinius", "Zyxwvutsrq"


async def _write_person(store) -> tuple[str, dict[str, set[bytes]]]:
    """A workspace whose user (and its user.created event) carries the person; its id and the
    person's stored forms, checked to be in the database's files."""
    workspace = await store.workspaces.create("Scrub test")
    await store.users.create(workspace["id"], EMAIL, FIRST, LAST)
    forms = stored_forms(emails=[EMAIL], names=[FIRST, LAST])
    assert_present(store.path, forms)
    return workspace["id"], forms


def _delete_person(workspace_id: str):
    def delete(conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM users WHERE workspaceId = ?", (workspace_id,))
        conn.execute("DELETE FROM events WHERE workspaceId = ?", (workspace_id,))

    return delete


def _wal_size(store) -> int:
    wal = store.path.with_name(store.path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


@pytest.mark.sqlite
async def test_every_connection_zeroes_what_it_deletes(store):
    def secure(conn: sqlite3.Connection) -> int:
        return conn.execute("PRAGMA secure_delete").fetchone()[0]

    assert await store.engine.write(secure) == 1
    assert await store.engine.read(secure) == 1
    assert await store.engine.read(secure, quick=True) == 1
    assert store.engine.run_once(secure) == 1


@pytest.mark.sqlite
async def test_a_deleted_row_is_in_no_byte_of_the_file_or_its_log_after_a_scrub(store):
    workspace_id, forms = await _write_person(store)
    await store.engine.write(_delete_person(workspace_id))
    assert await store.scrub() is True
    assert _wal_size(store) == 0
    assert_absent(store.path, forms)


@pytest.mark.sqlite
async def test_without_secure_delete_the_proof_finds_the_deleted_row(store):
    """The control: the same delete with secure_delete off leaves the row's bytes in a free
    block of its page, and the proof finds them (it looks where deleted values stay)."""
    workspace_id, forms = await _write_person(store)

    def delete_insecurely(conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA secure_delete=OFF")
        _delete_person(workspace_id)(conn)

    await store.engine.write(delete_insecurely)
    await store.engine.renew_writer()  # the next writer connection zeroes again
    assert await store.scrub() is True
    assert occurrences(store.path, forms)


@pytest.mark.sqlite
async def test_the_scrub_tries_again_while_a_reader_holds_a_snapshot(store, monkeypatch):
    workspace_id, forms = await _write_person(store)
    # A reader of another connection (another process, as far as SQLite can tell) holds a
    # snapshot from before the delete: the delete's pages stay in the log while it does (taken
    # after the delete, the snapshot could find the log copied already by the checkpoints).
    reader = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM users").fetchone()
        await store.engine.write(_delete_person(workspace_id))
        assert await store.scrub(timeout=0.5) is False  # within its bound, it could not
        assert _wal_size(store) > 0

        tries: list[bool] = []

        def counted(conn: sqlite3.Connection) -> bool:
            tries.append(truncate_log(conn))
            return tries[-1]

        monkeypatch.setattr(checkpoints, "truncate_log", counted)
        scrubbing = asyncio.ensure_future(store.scrub(timeout=30))
        # The scrub keeps trying (each try gives up within SCRUB_TRY_MS) until the reader ends.
        await wait_for(lambda: len(tries) >= 3, what="three tries of the scrub")
        assert not any(tries) and not scrubbing.done()
        reader.execute("COMMIT")
        assert await asyncio.wait_for(scrubbing, 30) is True
    finally:
        reader.close()
    assert _wal_size(store) == 0
    assert_absent(store.path, forms)


@pytest.mark.mongodb
async def test_on_mongodb_the_scrub_has_nothing_to_do_for_bytes(store):
    assert await store.scrub() is None
