"""The SQLite tables and every index, created idempotently when the store opens.

Columns carry the same names as the MongoDB documents' fields (`_id`, `workspaceId`,
`createdAt`, ...), so one record shape serves both backends. Instants are INTEGER milliseconds
since the Unix epoch (UTC), booleans 0/1, `listIds` and `details` JSON text. Each index starts
with `workspaceId` but the expiry sweep's (`idempotency_expire`, `provider_calls_expire`) and
the tombstone sweep's (`prospects_deleted`, `lists_deleted`);
docs/deployment.md lists them beside the MongoDB ones.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Callable
from typing import overload

EPOCH = dt.datetime(1970, 1, 1)

TABLES = {
    "settings": "name TEXT PRIMARY KEY, value TEXT NOT NULL",
    "workspaces": '"_id" TEXT PRIMARY KEY, name TEXT NOT NULL, createdAt INTEGER NOT NULL, '
    "settings TEXT",
    "users": '"_id" TEXT PRIMARY KEY, workspaceId TEXT NOT NULL, email TEXT, firstName TEXT, '
    "lastName TEXT, createdAt INTEGER NOT NULL, deletedAt INTEGER",
    "api_keys": '"_id" TEXT PRIMARY KEY, workspaceId TEXT NOT NULL, name TEXT, '
    "createdAt INTEGER NOT NULL, revokedAt INTEGER",
    "lists": '"_id" TEXT PRIMARY KEY, workspaceId TEXT NOT NULL, name TEXT NOT NULL, '
    "source TEXT, ownerUserId TEXT, createdAt INTEGER NOT NULL, "
    "updatedAt INTEGER NOT NULL, prospectsCount INTEGER NOT NULL DEFAULT 0, deletedAt INTEGER",
    "prospects": '"_id" TEXT PRIMARY KEY, workspaceId TEXT NOT NULL, dedupeKey TEXT NOT NULL, '
    "firstName TEXT, lastName TEXT, phoneNumber TEXT, email TEXT, companyName TEXT, "
    "companyDomain TEXT, jobTitle TEXT, linkedinUrl TEXT, emailNorm TEXT, "
    "phoneE164 TEXT, linkedinNorm TEXT, ownerUserId TEXT, "
    "listIds TEXT NOT NULL DEFAULT '[]', createdAt INTEGER NOT NULL, "
    "updatedAt INTEGER NOT NULL, deletedAt INTEGER, doNotCall INTEGER, doNotCallReason TEXT, "
    "doNotCallSelf INTEGER",
    # Deleted lists whose members still have them in listIds (store/sqlite/memberships.py):
    # one row each until the list's purge is done.
    "list_purges": '"_id" TEXT PRIMARY KEY, workspaceId TEXT NOT NULL',
    # The do-not-call suppression list (store/dnc.py): `key` is "p:<E.164>" or "e:<email>".
    "do_not_call": '"_id" TEXT PRIMARY KEY, workspaceId TEXT NOT NULL, key TEXT NOT NULL, '
    "phoneNumber TEXT, email TEXT, reason TEXT, createdAt INTEGER NOT NULL",
    # A prospect's list memberships, one row each (the prospect's `listIds` in table form),
    # with the prospect's createdAt so a list's prospects page newest first from the index.
    "memberships": "workspaceId TEXT NOT NULL, listId TEXT NOT NULL, prospectId TEXT NOT NULL, "
    "prospectCreatedAt INTEGER NOT NULL, "
    "PRIMARY KEY (workspaceId, listId, prospectId)",
    "calls": '"_id" TEXT PRIMARY KEY, workspaceId TEXT NOT NULL, direction TEXT NOT NULL, '
    "disposition TEXT NOT NULL, fromNumber TEXT, toNumber TEXT, userId TEXT, "
    "prospectId TEXT, listId TEXT, startedAt INTEGER NOT NULL, answeredAt INTEGER, "
    "endedAt INTEGER NOT NULL, durationSeconds INTEGER NOT NULL, "
    "hasRecording INTEGER NOT NULL, recordingDurationSeconds INTEGER, "
    "recordingRef TEXT, meetingBooked INTEGER NOT NULL, notes TEXT, "
    "createdAt INTEGER NOT NULL, updatedAt INTEGER NOT NULL, record TEXT, "
    "toNumberSuppressed INTEGER, recordingRetryAt INTEGER, recordingClaim TEXT, "
    "recordingAttempts INTEGER",
    "activities": '"_id" TEXT PRIMARY KEY, workspaceId TEXT NOT NULL, prospectId TEXT NOT NULL, '
    "type TEXT NOT NULL, occurredAt INTEGER NOT NULL, userId TEXT, callId TEXT, "
    "summary TEXT, details TEXT NOT NULL DEFAULT '{}', storedAt INTEGER",
    # Idempotency-Key records: in progress (status NULL, lockedUntil, the holding process) or a
    # stored response; `seed` derives the ids of what the request creates (store/idempotency.py).
    "idempotency": "workspaceId TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, "
    "status INTEGER, body TEXT, contentType TEXT, location TEXT, "
    "lockedUntil INTEGER NOT NULL, expiresAt INTEGER NOT NULL, seed TEXT, holder TEXT, "
    "PRIMARY KEY (workspaceId, key)",
    # The dialer metrics' counts per workspace, direction, quarter hour (createdAt // 900,000
    # ms) and user, kept in the same transaction as every call insert (store/sqlite/metrics.py).
    "call_quarters": "workspaceId TEXT NOT NULL, direction TEXT NOT NULL, "
    "quarter INTEGER NOT NULL, userId TEXT NOT NULL DEFAULT '', "
    "dials INTEGER NOT NULL, connects INTEGER NOT NULL, "
    "conversations INTEGER NOT NULL, meetingsBooked INTEGER NOT NULL, "
    "voicemails INTEGER NOT NULL, talkTimeSeconds INTEGER NOT NULL, "
    "callsToSuppressedNumbers INTEGER NOT NULL DEFAULT 0, "
    "PRIMARY KEY (workspaceId, direction, quarter, userId)",
    # Exact per-workspace totals, kept in the same transaction as every insert.
    "counters": "workspaceId TEXT NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL, "
    "PRIMARY KEY (workspaceId, name)",
    # Change events (store/sqlite/events.py), written in the transaction of the change they
    # describe; `data` is the record's API form as JSON text, served as it is.
    "events": '"_id" TEXT NOT NULL, workspaceId TEXT NOT NULL, type TEXT NOT NULL, '
    "resourceId TEXT NOT NULL, occurredAt INTEGER NOT NULL, data TEXT NOT NULL",
    # Webhook endpoints (store/sqlite/webhook_endpoints.py): `secrets` and `eventTypes` JSON
    # text, the feed position (positionAt, positionId), a recovery's (recoverAt, recoverId)
    # and the fan-out's lease (fanoutAt, fanoutToken).
    "webhook_endpoints": '"_id" TEXT PRIMARY KEY, workspaceId TEXT NOT NULL, url TEXT NOT NULL, '
    "eventTypes TEXT, description TEXT, status TEXT NOT NULL, disabledReason TEXT, "
    "disabledAt INTEGER, createdAt INTEGER NOT NULL, updatedAt INTEGER NOT NULL, "
    "secrets TEXT NOT NULL, positionAt INTEGER NOT NULL, positionId TEXT NOT NULL, "
    "recoverAt INTEGER, recoverId TEXT, generation INTEGER NOT NULL DEFAULT 0, "
    "fanoutAt INTEGER NOT NULL, fanoutToken TEXT, failingSince INTEGER",
    # One delivery per (endpoint, event, generation): its `_id` says which
    # (store.webhooks.delivery_id); `event` is the event's API form as JSON text.
    "webhook_deliveries": '"_id" TEXT PRIMARY KEY, workspaceId TEXT NOT NULL, '
    "endpointId TEXT NOT NULL, eventId TEXT NOT NULL, eventType TEXT NOT NULL, "
    "generation INTEGER NOT NULL, event TEXT NOT NULL, state TEXT NOT NULL, "
    "attempts INTEGER NOT NULL DEFAULT 0, nextAttemptAt INTEGER, "
    "createdAt INTEGER NOT NULL, updatedAt INTEGER NOT NULL",
    # The deliveries' leases (store/sqlite/webhook_deliveries.py): one row per claim (`token`)
    # and endpoint, with the ids of the deliveries it still holds (JSON text) until `until`.
    "webhook_leases": "workspaceId TEXT NOT NULL, endpointId TEXT NOT NULL, "
    "token TEXT NOT NULL, until INTEGER NOT NULL, deliveries TEXT NOT NULL, "
    "PRIMARY KEY (workspaceId, endpointId, token)",
    # Every delivery attempt, written in the order of `at` (ids sort as their instants).
    "webhook_attempts": '"_id" TEXT NOT NULL, workspaceId TEXT NOT NULL, '
    "endpointId TEXT NOT NULL, deliveryId TEXT NOT NULL, eventId TEXT NOT NULL, "
    "eventType TEXT NOT NULL, attempt INTEGER NOT NULL, at INTEGER NOT NULL, "
    "statusCode INTEGER, durationMs INTEGER NOT NULL, error TEXT, nextAttemptAt INTEGER",
    # What is remembered of a call the telephony provider reports, between its callbacks
    # (store/provider_calls.py): progress instants, a recording that came first, a final status
    # kept aside (`final`, JSON text) and the call it became (`callId`).
    "provider_calls": "workspaceId TEXT NOT NULL, callSid TEXT NOT NULL, initiatedAt INTEGER, "
    "answeredAt INTEGER, recordingSid TEXT, recordingDurationSeconds INTEGER, final TEXT, "
    "pendingReason TEXT, receivedAt INTEGER, callId TEXT, expiresAt INTEGER NOT NULL, "
    "PRIMARY KEY (workspaceId, callSid)",
    # Erasure requests (store/erasures.py): the identifiers' keyed hashes, never the values;
    # `counts`, `hashes`, `prospectIds`, `callIds` and `recordings` JSON text; the worker's lease.
    "erasures": '"_id" TEXT PRIMARY KEY, workspaceId TEXT NOT NULL, status TEXT NOT NULL, '
    "requestedAt INTEGER NOT NULL, completedAt INTEGER, reason TEXT, counts TEXT NOT NULL, "
    "hashes TEXT NOT NULL, prospectIds TEXT NOT NULL, done TEXT NOT NULL, callIds TEXT NOT NULL, "
    "recordings TEXT NOT NULL, attempts INTEGER NOT NULL, nextAttemptAt INTEGER, "
    "leaseToken TEXT, leaseUntil INTEGER",
}
# Columns added to a table after files with that table were written: created with the table in
# a new file, added (NULL in the existing rows) when an older file opens.
ADDED_COLUMNS = {
    # A call's API record as JSON text, built by the insert statement (store/sqlite/calls.py):
    # a page of calls reads it instead of building 100 records. NULL in a row written before
    # the column existed, whose record is then built when it is read.
    # And what made a call recorded with a provider SID (store.ingest.NewCall.content_hash):
    # posting the SID again with other content is refused. NULL for calls without a SID.
    # Whether the call's toNumber was on the do-not-call list when it was recorded: NULL (false)
    # in a call written before the column existed (its stored record lacks the field: ENCODED
    # in store/sqlite/callrows.py adds it).
    # The recording retention sweep's claim of a call (store/retention.py): NULL until then.
    # When an erasure rewrote the call (store/erasures.py): NULL for every other call.
    "calls": {
        "record": "TEXT",
        "contentHash": "TEXT",
        "toNumberSuppressed": "INTEGER",
        "recordingRetryAt": "INTEGER",
        "recordingClaim": "TEXT",
        "recordingAttempts": "INTEGER",
        "erasedAt": "INTEGER",
    },
    # A workspace's own settings (JSON object, store/retention.py): NULL for none. When the
    # workspace's deletion began (store/workspace_deletion.py): NULL while it lives.
    "workspaces": {"settings": "TEXT", "deletingAt": "INTEGER"},
    # Every call counted before the column existed was recorded before do-not-call: 0 is exact.
    "call_quarters": {"callsToSuppressedNumbers": "INTEGER NOT NULL DEFAULT 0"},
    # When an activity was stored (store/activities.py): the activities export's order.
    "activities": {"storedAt": "INTEGER"},
    # When a user last changed (a user written before it existed: when it was created).
    "users": {"updatedAt": "INTEGER"},
    # A key's scopes (JSON array), expiry and last use (store/keys.py): NULL in a key written
    # before they existed, which is `read,write` and never expires.
    "api_keys": {"scopes": "TEXT", "expiresAt": "INTEGER", "lastUsedAt": "INTEGER"},
    # The seed of ids derived from an Idempotency-Key, and the process holding a claim.
    "idempotency": {"seed": "TEXT", "holder": "TEXT"},
    # A prospect's do-not-call value, its reason and its own flag (store/dnc.py): NULL (false)
    # in a prospect written before they existed. When a prospect or list was deleted
    # (store/tombstones.py): NULL while it lives.
    "prospects": {
        "doNotCall": "INTEGER",
        "doNotCallReason": "TEXT",
        "doNotCallSelf": "INTEGER",
        "deletedAt": "INTEGER",
    },
    "lists": {"deletedAt": "INTEGER"},
}
# Added columns that existing rows get a value for, from another column, when they are added.
# (An SQL literal serves as well: the prospects written before do-not-call are not.)
FILLED_FROM = {
    ("activities", "storedAt"): "occurredAt",
    ("users", "updatedAt"): "createdAt",
    ("prospects", "doNotCall"): "0",
    ("prospects", "doNotCallSelf"): "0",
}
DERIVED = {"record"}  # columns that hold nothing but what other columns say
# Tables added after files without them were written (a backup of such a file restores): created
# when such a file opens. The webhook deliveries' leases, which were columns of theirs before.
ADDED_TABLES = ("webhook_leases",)
# Tables of older files that nothing uses any more, dropped when such a file opens: the rate
# limit's counters moved to a shared memory-mapped file (store/sqlite/ratecounts.py).
RETIRED = ("rate_limits",)
# Indexes of older files that another index replaced, dropped when such a file opens: the dialer
# metrics' covering index before it covered toNumberSuppressed; the webhook deliveries' indexes
# from before their leases moved to the webhook_leases table (their leaseToken and leaseUntil
# columns stay in such a file, unused) and before the due and retention indexes held only the
# deliveries they serve.
RETIRED_INDEXES = (
    "calls_ws_metrics",
    "webhook_deliveries_due_endpoint",
    "webhook_deliveries_done",
    "webhook_deliveries_ws_endpoint",
)
WITHOUT_ROWID = {
    "settings",
    "memberships",
    "counters",
    "idempotency",
    "call_quarters",
    "provider_calls",
    "webhook_leases",
}

# The WHERE of the webhook deliveries' due index, which a query names word for word to use it.
PENDING_ONLY = "state = 'pending'"
INDEXES = {
    "users_ws_active_created": "users (workspaceId, deletedAt, createdAt, _id)",
    "api_keys_ws_created": "api_keys (workspaceId, createdAt)",
    "lists_ws_newest": "lists (workspaceId, createdAt DESC, _id DESC)",
    "lists_ws_updated": "lists (workspaceId, updatedAt, _id)",
    "prospects_ws_dedupe": "UNIQUE prospects (workspaceId, dedupeKey)",
    "prospects_ws_email": "prospects (workspaceId, emailNorm)",
    "prospects_ws_phone": "prospects (workspaceId, phoneE164)",
    "prospects_ws_newest": "prospects (workspaceId, createdAt DESC, _id DESC)",
    "prospects_ws_updated": "prospects (workspaceId, updatedAt, _id)",
    "prospects_ws_dnc_newest": "prospects (workspaceId, doNotCall, createdAt DESC, _id DESC)",
    "do_not_call_ws_key": "UNIQUE do_not_call (workspaceId, key)",
    "do_not_call_ws_newest": "do_not_call (workspaceId, createdAt DESC, _id DESC)",
    # The tombstone sweep's (across workspaces): deleted rows only.
    "prospects_deleted": "prospects (deletedAt) WHERE deletedAt IS NOT NULL",
    "lists_deleted": "lists (deletedAt) WHERE deletedAt IS NOT NULL",
    "memberships_ws_list_newest": (
        "memberships (workspaceId, listId, prospectCreatedAt DESC, prospectId DESC)"
    ),
    "calls_ws_newest": "calls (workspaceId, createdAt DESC, _id DESC)",
    "calls_ws_user_newest": "calls (workspaceId, userId, createdAt DESC, _id DESC)",
    "calls_ws_prospect_newest": "calls (workspaceId, prospectId, createdAt DESC, _id DESC)",
    "calls_ws_list_newest": "calls (workspaceId, listId, createdAt DESC, _id DESC)",
    "calls_ws_disposition_newest": "calls (workspaceId, disposition, createdAt DESC, _id DESC)",
    "calls_ws_updated": "calls (workspaceId, updatedAt, _id)",
    # The recording retention sweep's: a workspace's recorded calls, oldest end first.
    "calls_ws_recording_due": "calls (workspaceId, hasRecording, endedAt, recordingRetryAt)",
    # Covering index of the dialer metrics: the query reads nothing but this index.
    "calls_ws_metrics_dnc": (
        "calls (workspaceId, direction, createdAt, userId, disposition, "
        "durationSeconds, meetingBooked, toNumberSuppressed)"
    ),
    "activities_ws_prospect_timeline": (
        "activities (workspaceId, prospectId, occurredAt DESC, _id DESC)"
    ),
    "activities_ws_stored": "activities (workspaceId, storedAt, _id)",
    "idempotency_expire": "idempotency (expiresAt)",
    "events_ws_feed": "events (workspaceId, occurredAt, _id)",
    "events_ws_type": "events (workspaceId, type, occurredAt, _id)",
    # An erasure's: the events of the records it erases.
    "events_ws_resource": "events (workspaceId, resourceId)",
    "webhook_endpoints_ws_created": "webhook_endpoints (workspaceId, createdAt, _id)",
    # Operator scope (the dispatchers of every workspace): fan-outs and attempts that are due.
    "webhook_endpoints_fanout": "webhook_endpoints (status, fanoutAt)",
    # Pending deliveries only: an outcome takes its delivery out (or moves it to its next
    # attempt), and a claim moves nothing (store/sqlite/webhook_deliveries.py).
    "webhook_deliveries_pending_due": (
        f"webhook_deliveries (endpointId, nextAttemptAt) WHERE {PENDING_ONLY}"
    ),
    # The retention sweep's: the deliveries that ended (a pending one is never in it).
    "webhook_deliveries_ended": "webhook_deliveries (state, updatedAt) WHERE state != 'pending'",
    "webhook_deliveries_by_endpoint": "webhook_deliveries (workspaceId, endpointId)",
    "webhook_attempts_ws_endpoint_newest": (
        "webhook_attempts (workspaceId, endpointId, at DESC, _id DESC)"
    ),
    # The callbacks kept aside, newest first; and the expiry sweep's (across workspaces).
    "provider_calls_ws_pending": "provider_calls (workspaceId, receivedAt DESC, callSid DESC)",
    "provider_calls_expire": "provider_calls (expiresAt)",
    "erasures_ws_newest": "erasures (workspaceId, requestedAt DESC, _id DESC)",
    # The erasure workers' (across workspaces): open requests by when they are due.
    "erasures_open_due": "erasures (status, nextAttemptAt) WHERE status IN ('pending', 'running')",
}

INSTANTS = {
    "createdAt",
    "deletingAt",
    "updatedAt",
    "deletedAt",
    "revokedAt",
    "startedAt",
    "answeredAt",
    "endedAt",
    "occurredAt",
    "storedAt",
    "prospectCreatedAt",
    "lockedUntil",
    "expiresAt",
    "lastUsedAt",
    "disabledAt",
    "positionAt",
    "recoverAt",
    "fanoutAt",
    "failingSince",
    "nextAttemptAt",
    "leaseUntil",
    "at",
    "initiatedAt",
    "receivedAt",
    "recordingRetryAt",
    "requestedAt",
    "completedAt",
    "erasedAt",
}
BOOLEANS = {"hasRecording", "meetingBooked", "doNotCall", "doNotCallSelf", "toNumberSuppressed"}
JSON_FIELDS = {
    *("listIds", "details", "scopes", "eventTypes", "final", "settings"),
    *("counts", "hashes", "prospectIds", "done", "callIds", "recordings"),
}
# A prospect's contact fields and identifiers are absent, not null, when unknown (as on MongoDB).
SPARSE = {
    "firstName",
    "lastName",
    "phoneNumber",
    "email",
    "companyName",
    "companyDomain",
    "jobTitle",
    "linkedinUrl",
    "emailNorm",
    "phoneE164",
    "linkedinNorm",
}


def create(conn: sqlite3.Connection) -> None:
    """Every table and index (idempotent); runs inside the caller's transaction."""
    for table, columns in TABLES.items():
        suffix = " WITHOUT ROWID" if table in WITHOUT_ROWID else ""
        conn.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns}){suffix}")
    for table in RETIRED:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    for index in RETIRED_INDEXES:
        conn.execute(f"DROP INDEX IF EXISTS {index}")
    for table, added in ADDED_COLUMNS.items():
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        for name, kind in added.items():
            if name not in present:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
                if source := FILLED_FROM.get((table, name)):
                    conn.execute(f"UPDATE {table} SET {name} = {source}")
    for name, spec in INDEXES.items():
        kind = "UNIQUE INDEX" if spec.startswith("UNIQUE ") else "INDEX"
        conn.execute(f"CREATE {kind} IF NOT EXISTS {name} ON {spec.removeprefix('UNIQUE ')}")


@overload
def ms(value: dt.datetime) -> int: ...
@overload
def ms(value: None) -> None: ...
@overload
def ms(value: dt.datetime | None) -> int | None: ...
def ms(value: dt.datetime | None) -> int | None:
    """A naive UTC datetime as integer milliseconds since the epoch."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    delta = value - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


@overload
def instant(value: int) -> dt.datetime: ...
@overload
def instant(value: None) -> None: ...
@overload
def instant(value: int | None) -> dt.datetime | None: ...
def instant(value: int | None) -> dt.datetime | None:
    return None if value is None else EPOCH + dt.timedelta(milliseconds=value)


def _json_default(value: object) -> str:
    """Instants inside JSON fields (an activity's details) as the API writes them."""
    if isinstance(value, dt.datetime):
        return instant(ms(value)).isoformat(timespec="milliseconds") + "Z"
    raise TypeError(f"cannot store {type(value).__name__} in JSON")


def to_row(doc: dict) -> dict:
    """A document as column values."""
    row = {}
    for name, value in doc.items():
        if name in INSTANTS:
            value = ms(value)
        elif name in JSON_FIELDS:
            value = json.dumps(value, separators=(",", ":"), default=_json_default)
        elif name in BOOLEANS:
            value = int(bool(value))
        row[name] = value
    return row


def to_doc(row: sqlite3.Row) -> dict:
    """A row as a document (the MongoDB document shape)."""
    doc = {}
    for name in row.keys():  # noqa: SIM118 - iterating a sqlite3.Row gives its values
        if name in DERIVED:
            continue
        value = row[name]
        if value is None and name in SPARSE:
            continue
        if name in INSTANTS:
            value = instant(value)
        elif name in JSON_FIELDS:
            value = None if value is None else json.loads(value)
        elif name in BOOLEANS:
            value = bool(value)
        doc[name] = value
    return doc


def json_record(fields: dict[str, str], column: Callable[[str], str] = '"{}"'.format) -> str:
    """SQL that builds a record as JSON text: `fields` maps each key of the record, in order, to
    the column it shows, and `column(name)` is the SQL of that column's value (by default the
    column itself; a table alias, or a statement's parameter, otherwise). Instants are written
    as the API writes them (2026-11-21T09:30:00.000Z: integer milliseconds make an exact
    'unixepoch' instant), booleans as true/false, JSON columns embedded as JSON, the rest as the
    values they are (NULL as null)."""
    parts = []
    for key, name in fields.items():
        column_sql = column(name)
        if name in INSTANTS:
            column_sql = f"strftime('%Y-%m-%dT%H:%M:%fZ', {column_sql} / 1000.0, 'unixepoch')"
        elif name in BOOLEANS:
            column_sql = f"iif({column_sql}, json('true'), json('false'))"
        elif name in JSON_FIELDS:
            column_sql = f"json({column_sql})"
        parts.append(f"'{key}', {column_sql}")
    return f"json_object({', '.join(parts)})"


Rows = dict[tuple, list[tuple]]  # column names: the rows' values, for insert_rows


def rows_of(docs: list[dict]) -> Rows:
    """Documents as rows, grouped by the columns they fill (pure Python: it can be made on
    another thread than the writer's)."""
    groups: Rows = {}
    for doc in docs:
        row = to_row(doc)
        groups.setdefault(tuple(row), []).append(tuple(row.values()))
    return groups


def insert(
    conn: sqlite3.Connection,
    table: str,
    docs: list[dict],
    verb: str = "INSERT",
    computed: dict[str, Callable[[Callable[[str], str]], str]] | None = None,
) -> int:
    """Insert documents into `table` (absent fields stay NULL); the number of rows written.
    `computed` maps further columns to their SQL, made by calling it with a function that gives
    the SQL of a document field's value (the statement's parameter that holds it)."""
    return insert_rows(conn, table, rows_of(docs), verb, computed)


def insert_rows(
    conn: sqlite3.Connection,
    table: str,
    groups: Rows,
    verb: str = "INSERT",
    computed: dict[str, Callable[[Callable[[str], str]], str]] | None = None,
) -> int:
    """`insert` of rows made by `rows_of`."""
    before = conn.total_changes
    for names, rows in groups.items():
        number = {name: f"?{index}" for index, name in enumerate(names, 1)}
        extra = {name: sql(number.__getitem__) for name, sql in (computed or {}).items()}
        columns = ", ".join(f'"{name}"' for name in (*names, *extra))
        values = ", ".join((*number.values(), *extra.values()))
        conn.executemany(f"{verb} INTO {table} ({columns}) VALUES ({values})", rows)
    return conn.total_changes - before


def has_row(conn: sqlite3.Connection, sql: str, params: tuple = ()) -> bool:
    """Whether the one statement `sql` finds a row: with `Engine.read(..., snapshot=False,
    quick=True)`, an idle background worker's look before it takes the write lock."""
    return conn.execute(sql, params).fetchone() is not None
