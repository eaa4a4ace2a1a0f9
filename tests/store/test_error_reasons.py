"""What a database failure says: SQLite's errors by their code (damaged, unusable, unavailable,
busy), and the MongoDB driver's error class and message, always without a URI, a credential
or a key's values, since they go into log lines."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from pymongo.errors import DuplicateKeyError, ServerSelectionTimeoutError

from store.errors import StoreBusy, StoreDamaged, StoreError, StoreUnavailable, StoreUnusable
from store.mongo.errors import translated
from store.sqlite.opening import translate


def sqlite_error(kind: type, message: str, name: str) -> sqlite3.Error:
    error = kind(message)
    error.sqlite_errorname = name  # as sqlite3 sets it
    return error


CASES = [  # SQLite's error: (class, message, code); the store's error: (class, what it says)
    (
        sqlite3.DatabaseError,
        "database disk image is malformed",
        "SQLITE_CORRUPT",
        StoreDamaged,
        "is damaged",
    ),
    (
        sqlite3.DatabaseError,
        "file is not a database",
        "SQLITE_NOTADB",
        StoreDamaged,
        "is not a SQLite database",
    ),
    (
        sqlite3.OperationalError,
        "attempt to write a readonly database",
        "SQLITE_READONLY",
        StoreUnusable,
        "cannot be written",
    ),
    (
        sqlite3.OperationalError,
        "unable to open database file",
        "SQLITE_CANTOPEN",
        StoreUnusable,
        "cannot be opened",
    ),
    (
        sqlite3.OperationalError,
        "database or disk is full",
        "SQLITE_FULL",
        StoreUnavailable,
        "database: database or disk is full (SQLITE_FULL)",
    ),
    (
        sqlite3.OperationalError,
        "disk I/O error",
        "SQLITE_IOERR_WRITE",
        StoreUnavailable,
        "disk I/O error (SQLITE_IOERR_WRITE)",
    ),
    (
        sqlite3.OperationalError,
        "database is locked",
        "SQLITE_BUSY",
        StoreBusy,
        "database is locked",
    ),
    (sqlite3.OperationalError, "interrupted", "SQLITE_INTERRUPT", StoreBusy, "interrupted"),
    (
        sqlite3.IntegrityError,
        "UNIQUE constraint failed: lists._id",
        "SQLITE_CONSTRAINT_PRIMARYKEY",
        StoreError,
        "UNIQUE constraint failed",
    ),
]


@pytest.mark.parametrize("kind, message, name, expected, said", CASES)
def test_sqlite_errors_by_their_code(kind, message, name, expected, said):
    error = translate(Path("/srv/db.sqlite3"), sqlite_error(kind, message, name))
    assert type(error) is expected and said in str(error)
    if isinstance(error, StoreUnusable):  # one line: which file, and what to do
        assert str(error).startswith("the database file /srv/db.sqlite3 ")
        assert "\n" not in str(error) and ("backup" in str(error) or "permissions" in str(error))


def test_mongodb_reasons_carry_no_uri_credentials_or_key_values():
    timeout = ServerSelectionTimeoutError(
        "db1:27017: [Errno 111] Connection refused (configured timeouts: connectTimeoutMS: "
        "500.0ms) for mongodb://ann:pa55@db1:27017/x, Timeout: 0.5s, Topology Description: "
        "<TopologyDescription id: 1, servers: [<ServerDescription ('db1', 27017)>]>"
    )
    error = translated(timeout)
    assert isinstance(error, StoreUnavailable)
    assert str(error).startswith("MongoDB did not answer in time (ServerSelectionTimeoutError: ")
    assert "db1:27017: [Errno 111] Connection refused" in str(error)
    for secret in ("pa55", "ann", "mongodb://", "Topology"):
        assert secret not in str(error)
    duplicate = DuplicateKeyError(
        "E11000 duplicate key error collection: x.prospects index: ws_dedupe dup key: "
        '{ workspaceId: "w", dedupeKey: "e:ann@example.com" }',
        11000,
    )
    refused = translated(duplicate)
    assert type(refused) is StoreError and "E11000" in str(refused)
    assert "ann@example.com" not in str(refused)
    assert len(str(translated(ServerSelectionTimeoutError("x" * 5000)))) < 400
