"""Contact upload and prospect reads on SQLite.

An upload is one write transaction (all or nothing): it reads the candidate prospects, matches
(store.prospects), inserts the new prospects, fills blanks of existing ones, adds memberships
and `list_added` activities, and moves the list's prospectsCount, every statement served by an
index. Writers take turns through SQLite's write lock, in one process or several, so nothing
can slip in between the read and the writes.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from store.activities import list_added_activity
from store.exports import BATCH_SIZE, Lines
from store.idempotency import IdempotentWrite
from store.identity import CONTACT_FIELDS, normalize_email, normalize_phone
from store.paging import Page, Window
from store.prospects import (
    Contact,
    Upload,
    outcomes,
    recognise_created,
)
from store.prospects import record as prospect_record
from store.sqlite.dnc import screen_contacts
from store.sqlite.engine import Engine
from store.sqlite.exports import export_batches
from store.sqlite.idempotency import write_once
from store.sqlite.matching import create_and_fill, marks, resolve_contacts
from store.sqlite.paging import page_query, quick
from store.sqlite.prospect_changes import ProspectChanges
from store.sqlite.prospect_rows import ProspectRows
from store.sqlite.schema import insert, json_record, ms, to_doc
from store.sqlite.tombstones import either_json
from store.tombstones import either_record

if TYPE_CHECKING:
    from store.sqlite.events import EventWriter

RECORD_COLUMNS = (
    *("_id", *CONTACT_FIELDS, "ownerUserId", "listIds"),
    *("doNotCall", "doNotCallReason", "createdAt", "updatedAt"),
)
FIELDS = ", ".join(f'p."{name}"' for name in RECORD_COLUMNS)
SELECT = f"SELECT {FIELDS} FROM prospects p"
IN_LIST = (
    'prospects p JOIN memberships m ON p."_id" = m.prospectId AND p.workspaceId = m.workspaceId'
)
JSON = json_record(
    {"id" if name == "_id" else name: name for name in RECORD_COLUMNS}, 'p."{}"'.format
)
EVENT_SOURCE = ("prospects p", "p.", JSON)  # store/sqlite/events.py
# The conditions of every ordinary read: the workspace, and not deleted (store/tombstones.py).
LIVE = ("p.workspaceId = ?", "p.deletedAt IS NULL")
UPLOAD_TIMEOUT = 10.0  # the documented longest wait for an upload's turn


def match_unit(
    conn: sqlite3.Connection,
    workspace_id: str,
    contacts: list[Contact],
    owner_user_id: str | None,
    events: EventWriter,
    once: IdempotentWrite | None = None,
) -> list[dict]:
    """Match or create a prospect for each contact that is not suppressed, in no list, with the
    events of what it created or filled (the writer's transaction)."""
    screened = screen_contacts(conn, workspace_id, contacts)
    kept = screened.kept(contacts)
    targets, chosen, new = resolve_contacts(conn, workspace_id, kept)
    owners: dict[str, str | None] = dict.fromkeys(new, owner_user_id)
    changes = create_and_fill(conn, workspace_id, targets, new, owners, events.now(), once)
    recognise_created(targets, once)
    events.record(conn, workspace_id, changes)
    return screened.merge(len(contacts), outcomes(chosen))


def upload(
    conn: sqlite3.Connection,
    workspace_id: str,
    listing: dict,
    contacts: list[Contact],
    events: EventWriter,
    once: IdempotentWrite | None = None,
) -> Upload:
    """The whole contact upload in the writer's transaction, with its events: the prospects it
    created, filled or added to the list, the `list_added` activities, and the list."""
    list_id, now = listing["id"], events.now()
    # Suppressed contacts (store/dnc.py) are read in this transaction and left out.
    screened = screen_contacts(conn, workspace_id, contacts)
    everyone, contacts = contacts, screened.kept(contacts)
    if not contacts:
        row = conn.execute(
            'SELECT prospectsCount FROM lists WHERE "_id" = ? AND workspaceId = ?',
            (list_id, workspace_id),
        ).fetchone()
        return Upload(row[0] if row else 0, screened.merge(len(everyone), []), len(everyone))
    targets, chosen, new = resolve_contacts(conn, workspace_id, contacts)
    owners: dict[str, str | None] = dict.fromkeys(new, listing["ownerUserId"])
    changes = create_and_fill(conn, workspace_id, targets, new, owners, now, once)
    # Memberships: only the ones that are new move the prospect (listIds, updatedAt).
    ids = [t.id for t in targets if t.id is not None]  # each has one by now
    # By primary key: the unary + keeps SQLite from walking a workspaceId index instead.
    created_at = {
        row[0]: row[1]
        for row in conn.execute(
            f'SELECT "_id", createdAt FROM prospects WHERE +workspaceId = ? AND "_id" IN '
            f"({marks(ids)})",
            (workspace_id, *ids),
        )
    }
    joined = []
    for prospect_id in ids:
        cursor = conn.execute(
            "INSERT OR IGNORE INTO memberships (workspaceId, listId, prospectId, "
            "prospectCreatedAt) VALUES (?, ?, ?, ?)",
            (workspace_id, list_id, prospect_id, created_at[prospect_id]),
        )
        if cursor.rowcount == 1:
            joined.append(prospect_id)
    if joined:
        conn.executemany(
            "UPDATE prospects SET listIds = json_insert(listIds, '$[#]', ?), updatedAt = ? "
            'WHERE "_id" = ? AND workspaceId = ?',
            [(list_id, ms(now), prospect_id, workspace_id) for prospect_id in joined],
        )
    added = [
        list_added_activity(workspace_id, prospect_id, list_id, listing["name"], now)
        for prospect_id in joined
    ]
    insert(conn, "activities", added, "INSERT OR IGNORE")
    changes += [("prospect.updated", prospect_id) for prospect_id in joined]
    changes += [("activity.created", activity["_id"]) for activity in added]
    row = conn.execute(
        'SELECT prospectsCount FROM lists WHERE "_id" = ? AND workspaceId = ?',
        (list_id, workspace_id),
    ).fetchone()
    members = (row[0] if row else 0) + len(joined)
    conn.execute(
        'UPDATE lists SET prospectsCount = ?, updatedAt = ? WHERE "_id" = ? AND workspaceId = ?',
        (members, ms(now), list_id, workspace_id),
    )
    recognise_created(targets, once)
    events.record(conn, workspace_id, [*changes, ("list.updated", list_id)])
    results = screened.merge(len(everyone), outcomes(chosen))
    return Upload(members, results, len(screened.suppressed))


class Prospects(ProspectChanges, ProspectRows):
    def __init__(self, engine: Engine, events: EventWriter, default_region: str = "US") -> None:
        self.engine = engine
        self.events = events
        self.default_region = default_region

    def parse_contact(self, raw: dict) -> Contact:
        return Contact.parse(raw, self.default_region)

    def normalize_phone(self, value: str) -> str | None:
        """A phone number as stored and matched (E.164), or None when it cannot be read."""
        return normalize_phone(value, self.default_region)

    async def add_to_list(
        self,
        workspace_id: str,
        listing: dict,
        raw_contacts: list[dict],
        once: IdempotentWrite | None = None,
    ) -> Upload:
        """Match or create a prospect for each contact and add it to `listing` (a list record),
        all in one transaction, with the list's prospectsCount and, with an Idempotency-Key,
        its stored response. Idempotent: the same upload again adds nothing."""
        contacts = [self.parse_contact(raw) for raw in raw_contacts]
        return await write_once(
            self.engine,
            once,
            upload,
            workspace_id,
            listing,
            contacts,
            self.events,
            once,
            timeout=UPLOAD_TIMEOUT,
        )

    async def match(
        self,
        workspace_id: str,
        raw_contacts: list[dict],
        owner_user_id: str | None = None,
        once: IdempotentWrite | None = None,
    ) -> list[dict]:
        """Match or create a prospect for each contact with the upload's rules, adding none
        to a list, in one transaction; each contact's outcome (store.prospects.outcomes)."""
        contacts = [self.parse_contact(raw) for raw in raw_contacts]
        return await write_once(
            self.engine,
            once,
            match_unit,
            workspace_id,
            contacts,
            owner_user_id,
            self.events,
            once,
            timeout=UPLOAD_TIMEOUT,
        )

    async def count_in_list(self, workspace_id: str, list_id: str) -> int:
        def count(conn):
            return conn.execute(
                "SELECT COUNT(*) FROM memberships WHERE workspaceId = ? AND listId = ?",
                (workspace_id, list_id),
            ).fetchone()[0]

        return await self.engine.read(count)

    async def page(
        self,
        workspace_id: str,
        window: Window,
        *,
        list_id: str | None = None,
        email: str | None = None,
        phone: str | None = None,
        updated_since: dt.datetime | None = None,
        do_not_call: bool | None = None,
        encoded: bool = False,
        include_deleted: bool = False,
    ) -> Page:
        """One window of prospects in the window's order. `email` and `phone` are compared
        like the matcher compares them; `updated_since` is inclusive; `include_deleted` shows
        tombstones too (store/tombstones.py). With `encoded` the records come as one JSON array
        (store.paging.RawJSON)."""
        live = not include_deleted
        where, params = self._where(
            workspace_id,
            email=email,
            phone=phone,
            updated_since=updated_since,
            do_not_call=do_not_call,
            live=live,
        )
        unfiltered = live and len(where) == len(LIVE)
        source = "prospects p"
        columns = (f"p.{window.field}", "p._id")
        if list_id is not None and window.field == "createdAt":
            # Newest first in a list: the list's memberships in their own index order.
            where = ["m.workspaceId = ?", "m.listId = ?", *where[1:]]
            params = [workspace_id, list_id, *params[1:]]
            source = IN_LIST
            columns = ("m.prospectCreatedAt", "m.prospectId")
        elif list_id is not None:
            _in_list(where, params, workspace_id, list_id)
        unfiltered = unfiltered and list_id is None

        def page_of(conn):
            return page_query(
                conn,
                fields=FIELDS if live else f'{FIELDS}, p."deletedAt"',
                source=source,
                where=where,
                params=params,
                window=window,
                order=columns,
                record=prospect_record if live else either_record(prospect_record),
                encoded=(JSON if live else either_json(JSON, "p.")) if encoded else None,
                counted=(workspace_id, "prospects") if unfiltered else None,
            )

        return await self.engine.read(
            page_of, snapshot=not encoded, quick=quick(window, unfiltered)
        )

    async def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = BATCH_SIZE,
        list_id: str | None = None,
        email: str | None = None,
        phone: str | None = None,
        updated_since: dt.datetime | None = None,
        do_not_call: bool | None = None,
    ) -> AsyncGenerator[Lines, None]:
        """The prospects last changed at or before `settled_before`, in the sync order, as
        NDJSON batches; filters as `page`."""
        where, params = self._where(
            workspace_id,
            email=email,
            phone=phone,
            updated_since=updated_since,
            do_not_call=do_not_call,
        )
        if list_id is not None:
            _in_list(where, params, workspace_id, list_id)
        # The prospects of an email or a phone number are few: found by that index and sorted,
        # rather than picked out of the whole sync order's index.
        source = "prospects p"
        if email is not None:
            source += " INDEXED BY prospects_ws_email"
        elif phone is not None:
            source += " INDEXED BY prospects_ws_phone"
        async for batch in export_batches(
            self.engine,
            source=source,
            where=where,
            params=params,
            order=("p.updatedAt", "p._id"),
            encoded=JSON,
            settled_before=settled_before,
            batch_size=batch_size,
        ):
            yield batch

    async def lookup(
        self,
        workspace_id: str,
        *,
        prospect_id: str | None = None,
        email: str | None = None,
        phone: str | None = None,
        limit: int = 2,
    ) -> list[dict]:
        """The prospects (at most `limit`, oldest first) selected by id, email or phone."""
        where, params = self._where(workspace_id, email=email, phone=phone)
        if prospect_id is not None:
            where.append('p."_id" = ?')
            params.append(prospect_id)

        def find(conn):
            rows = conn.execute(
                f"{SELECT} WHERE {' AND '.join(where)} ORDER BY p.createdAt, p._id LIMIT ?",
                (*params, limit),
            )
            return [prospect_record(to_doc(row)) for row in rows]

        return await self.engine.read(find, quick=True)

    def _where(
        self,
        workspace_id: str,
        *,
        email: str | None,
        phone: str | None,
        updated_since: dt.datetime | None = None,
        do_not_call: bool | None = None,
        live: bool = True,
    ) -> tuple[list[str], list]:
        where: list[str] = list(LIVE) if live else [LIVE[0]]
        params: list = [workspace_id]
        if email is not None:
            where.append("p.emailNorm = ?")
            params.append(normalize_email(email))
        if phone is not None:
            where.append("p.phoneE164 = ?")
            params.append(self.normalize_phone(phone))
        if updated_since is not None:
            where.append("p.updatedAt >= ?")
            params.append(ms(updated_since))
        if do_not_call is not None:
            where.append("p.doNotCall = ?")
            params.append(int(do_not_call))
        return where, params


def _in_list(where: list[str], params: list, workspace_id: str, list_id: str) -> None:
    """Keep only members of the list (in the sync order: each membership checked by its key)."""
    where.append(
        "EXISTS (SELECT 1 FROM memberships m WHERE m.workspaceId = ? AND "
        "m.listId = ? AND m.prospectId = p._id)"
    )
    params += [workspace_id, list_id]
