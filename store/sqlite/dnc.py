"""The do-not-call suppression list on SQLite (store/dnc.py has the rules).

Adding or removing entries is one write transaction with the prospects it makes do-not-call or
no longer so and the events of both; a contact upload reads the list in its own write
transaction (`screen_contacts`), so an upload and a suppression of the same number are one
before the other, never interleaved.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from typing import TYPE_CHECKING

from store.dnc import (
    Screen,
    Wanted,
    contact_keys,
    email_key,
    entry_document,
    lookup_key,
    parse_entries,
    phone_key,
    prospect_changes,
    record,
    results,
    screen,
)
from store.events import Removed
from store.paging import Page, Window
from store.prospects import Contact
from store.sqlite.engine import Engine
from store.sqlite.matching import by_identifiers, candidates, marks
from store.sqlite.paging import page_query
from store.sqlite.schema import insert, ms, to_doc

if TYPE_CHECKING:
    from store.sqlite.events import EventWriter

# An entry's API form in SQL (the events' data): the record without the field it does not have.
JSON = (
    "json_remove(json_object('id', \"_id\", 'phoneNumber', phoneNumber, 'email', email, "
    "'reason', reason, 'createdAt', strftime('%Y-%m-%dT%H:%M:%fZ', createdAt / 1000.0, "
    "'unixepoch')), CASE WHEN phoneNumber IS NULL THEN '$.phoneNumber' ELSE '$.email' END)"
)
EVENT_SOURCE = ("do_not_call", "", JSON)  # store/sqlite/events.py
FIELDS = '"_id", phoneNumber, email, reason, createdAt'
PROSPECT_COLUMNS = '"_id", phoneE164, emailNorm, doNotCallReason, doNotCallSelf'


def listed(conn: sqlite3.Connection, workspace_id: str, keys: Collection[str]) -> dict[str, dict]:
    """The entries of `keys` on the workspace's list, by key (index do_not_call_ws_key)."""
    if not keys:
        return {}
    rows = conn.execute(
        f"SELECT * FROM do_not_call WHERE workspaceId = ? AND key IN ({marks(keys)})",
        (workspace_id, *keys),
    )
    return {row["key"]: to_doc(row) for row in rows}


def recompute(
    conn: sqlite3.Connection,
    workspace_id: str,
    phones: Collection[str],
    emails: Collection[str],
    now_ms: int,
) -> list[str]:
    """Set doNotCall and doNotCallReason of the prospects with these phones or emails as the
    list now says (caller's transaction); the ids of those whose value changed."""
    rows = by_identifiers(conn, PROSPECT_COLUMNS, workspace_id, emails, phones)
    docs = [to_doc(row) for row in rows]
    keys = {phone_key(d["phoneE164"]) for d in docs if d.get("phoneE164")}
    keys |= {email_key(d["emailNorm"]) for d in docs if d.get("emailNorm")}
    changed = prospect_changes(docs, set(listed(conn, workspace_id, keys)))
    conn.executemany(
        "UPDATE prospects SET doNotCall = ?, doNotCallReason = ?, updatedAt = ? "
        'WHERE "_id" = ? AND workspaceId = ?',
        [
            (int(why is not None), why, now_ms, prospect_id, workspace_id)
            for prospect_id, why in changed.items()
        ],
    )
    return list(changed)


def _identifiers(wanted: list[Wanted]) -> tuple[list[str], list[str]]:
    phones = [w.value for w in wanted if w.field == "phoneNumber"]
    return phones, [w.value for w in wanted if w.field == "email"]


def screen_contacts(conn: sqlite3.Connection, workspace_id: str, contacts: list[Contact]) -> Screen:
    """Which of an upload's contacts are suppressed (store.dnc.screen), read in the upload's
    own write transaction, before it matches."""
    found = set(listed(conn, workspace_id, contact_keys(contacts)))
    # The do-not-call prospects the contacts could match, by the matcher's own indexes: mostly
    # none, and then (nothing listed either) the upload goes on without reading more.
    selects, params = [], []
    for column, values in (
        ("phoneE164", {c.phone for c in contacts if c.phone}),
        ("emailNorm", {c.email for c in contacts if c.email}),
    ):
        if values:
            selects.append(
                f'SELECT "_id" FROM prospects WHERE workspaceId = ? AND {column} IN '
                f"({marks(values)}) AND doNotCall = 1"
            )
            params += [workspace_id, *sorted(values)]
    dnc_ids = (
        {row[0] for row in conn.execute(" UNION ".join(selects), params)} if selects else set()
    )
    if not found and not dnc_ids:
        return Screen({})
    pool = candidates(conn, workspace_id, contacts)  # a read of its own: screening consumes it
    return screen(contacts, pool, found, dnc_ids)


class DoNotCall:
    def __init__(self, engine: Engine, events: EventWriter, default_region: str = "US") -> None:
        self.engine = engine
        self.events = events
        self.default_region = default_region

    async def add(self, workspace_id: str, entries: list[dict], reason: str | None) -> list[dict]:
        wanted = parse_entries(entries, self.default_region)

        def add(conn: sqlite3.Connection) -> list[dict]:
            now = self.events.now()
            keys = list(dict.fromkeys(w.key for w in wanted))
            found = listed(conn, workspace_id, keys)
            new = {
                w.key: entry_document(workspace_id, w, reason, now)
                for w in wanted
                if w.key not in found
            }
            insert(conn, "do_not_call", list(new.values()))
            fresh = [w for w in wanted if w.key in new]
            changed = recompute(conn, workspace_id, *_identifiers(fresh), ms(now))
            self.events.record(
                conn,
                workspace_id,
                [
                    *(("do_not_call.added", doc["_id"]) for doc in new.values()),
                    *(("prospect.updated", pid) for pid in changed),
                ],
            )
            return results(wanted, {**found, **new}, set(new))

        return await self.engine.write(add)

    async def remove(self, workspace_id: str, entry_id: str) -> bool:
        def remove(conn: sqlite3.Connection) -> bool:
            row = conn.execute(
                'SELECT * FROM do_not_call WHERE "_id" = ? AND workspaceId = ?',
                (entry_id, workspace_id),
            ).fetchone()
            if row is None:
                return False
            doc, now = to_doc(row), self.events.now()
            conn.execute(
                'DELETE FROM do_not_call WHERE "_id" = ? AND workspaceId = ?',
                (entry_id, workspace_id),
            )
            phones = [doc["phoneNumber"]] if doc.get("phoneNumber") else []
            emails = [doc["email"]] if doc.get("email") else []
            changed = recompute(conn, workspace_id, phones, emails, ms(now))
            gone = Removed("do_not_call", entry_id, now, "removed", record(doc))
            self.events.record(
                conn, workspace_id, [("prospect.updated", pid) for pid in changed], [gone]
            )
            return True

        return await self.engine.write(remove)

    async def page(
        self,
        workspace_id: str,
        window: Window,
        *,
        phone: str | None = None,
        email: str | None = None,
    ) -> Page:
        where, params = ["workspaceId = ?"], [workspace_id]
        key = lookup_key(phone, email, self.default_region)
        if key is not None:
            where.append("key = ?")
            params.append(key)

        def page_of(conn):
            return page_query(
                conn,
                fields=FIELDS,
                source="do_not_call",
                where=where,
                params=params,
                window=window,
                order=("createdAt", '"_id"'),
                record=record,
            )

        return await self.engine.read(page_of, quick=True)

    async def is_listed(self, workspace_id: str, phone: str | None, email: str | None) -> bool:
        keys = []
        if phone:
            keys.append(phone_key(phone))
        if email:
            keys.append(email_key(email))

        def find(conn):
            return bool(listed(conn, workspace_id, keys))

        return await self.engine.read(find, quick=True)
