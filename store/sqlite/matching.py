"""Contact matching on SQLite, in the writer's transaction (the rules are store/prospects.py's):
the candidate prospects of an upload's contacts, the prospect each contact lands on, and the
prospects an upload creates or fills. Used by the contact upload (store/sqlite/prospects.py),
recording calls (store/sqlite/ingest.py) and do-not-call screening (store/sqlite/dnc.py)."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Collection

from store.idempotency import IdempotentWrite
from store.identity import CONTACT_FIELDS
from store.prospects import (
    DERIVED,
    Candidate,
    Contact,
    match_all,
    new_prospect_id,
    prospect_document,
)
from store.sqlite.paging import bump
from store.sqlite.schema import insert, ms, to_doc

MATCH_COLUMNS = ", ".join(
    f'"{name}"' for name in ("_id", "dedupeKey", *CONTACT_FIELDS, *DERIVED.values())
)


def marks(values: Collection[object]) -> str:
    """The `?` placeholders of an SQL IN list of `values`."""
    return ", ".join("?" * len(values))


def by_identifiers(
    conn: sqlite3.Connection,
    columns: str,
    workspace_id: str,
    emails: Collection[str],
    phones: Collection[str],
) -> list[sqlite3.Row]:
    """`columns` of the workspace's live prospects with one of these normalised emails or E.164
    phones. One indexed SELECT per identifier kind, joined by UNION (which also drops a
    prospect found by both): written with OR, SQLite walks the workspace's prospects instead."""
    selects, params = [], []
    for column, values in (("emailNorm", emails), ("phoneE164", phones)):
        if values:
            selects.append(
                f"SELECT {columns} FROM prospects WHERE workspaceId = ? AND "
                f"{column} IN ({marks(values)}) AND deletedAt IS NULL"
            )
            params += [workspace_id, *values]
    if not selects:
        return []
    return conn.execute(" UNION ".join(selects), params).fetchall()


def candidates(
    conn: sqlite3.Connection, workspace_id: str, contacts: list[Contact]
) -> list[Candidate]:
    emails = sorted({c.email for c in contacts if c.email})
    phones = sorted({c.phone for c in contacts if c.phone})
    rows = by_identifiers(conn, MATCH_COLUMNS, workspace_id, emails, phones)
    return [Candidate.from_doc(to_doc(row)) for row in rows]


def _fill(conn: sqlite3.Connection, workspace_id: str, target: Candidate, now: dt.datetime) -> None:
    """Fill the prospect's blank fields (`target.fills`), with the identifiers derived from
    them; a value already stored is never overwritten."""
    changes = {
        name: value for update in target.fill_updates().values() for name, value in update.items()
    }
    changes["updatedAt"] = ms(now)
    assignments = ", ".join(f'"{name}" = ?' for name in changes)
    conn.execute(
        f'UPDATE prospects SET {assignments} WHERE "_id" = ? AND workspaceId = ?',
        (*changes.values(), target.id, workspace_id),
    )


def resolve_contacts(
    conn: sqlite3.Connection, workspace_id: str, contacts: list[Contact]
) -> tuple[list[Candidate], list[Candidate], dict[str, Candidate]]:
    """Match contacts (store.prospects) in the writer's transaction, writing nothing: the
    distinct prospects they land on, the one per contact, and (by dedupe key) those still to
    create; a prospect created earlier under a new one's identity (without an email or phone
    match) is found by its dedupe key and stands in for it."""
    targets, chosen = match_all(contacts, candidates(conn, workspace_id, contacts))
    new = {t.key: t for t in targets if t.id is None}
    if new:
        rows = conn.execute(
            f"SELECT {MATCH_COLUMNS} FROM prospects WHERE workspaceId = ? "
            f"AND dedupeKey IN ({marks(new)})",
            (workspace_id, *new),
        )
        for row in rows:
            target = new.pop(row["dedupeKey"])
            target.id = row["_id"]
            target.fills = {f: v for f, v in target.fields.items() if row[f] is None}
    return targets, chosen, new


def create_and_fill(
    conn: sqlite3.Connection,
    workspace_id: str,
    targets: list[Candidate],
    new: dict[str, Candidate],
    owners: dict[str, str | None],
    now: dt.datetime,
    once: IdempotentWrite | None = None,
) -> list[tuple[str, str]]:
    """Insert the prospects still to create among `targets` (owner by dedupe key in `owners`),
    in no list, count them, and fill the blank fields of the ones that existed (caller's
    transaction); the events of what it changed, for the unit to record."""
    created = []
    for target in targets:
        if target.key not in new:
            continue
        contact = Contact(dict(target.fields), target.email, target.phone, target.linkedin)
        doc = prospect_document(
            workspace_id,
            contact,
            target.key,
            owners.get(target.key),
            now,
            prospect_id=new_prospect_id(once, target.key),
        )
        target.id, target.created = doc["_id"], True
        created.append(doc)
    changes: list[tuple[str, str]] = []
    if created:
        insert(conn, "prospects", created)
        bump(conn, workspace_id, "prospects", len(created))
        changes += [("prospect.created", doc["_id"]) for doc in created]
    for target in targets:  # only prospects that existed before this write get fills
        if target.key not in new and target.fills:
            _fill(conn, workspace_id, target, now)
            changes.append(("prospect.updated", str(target.id)))
    return changes
