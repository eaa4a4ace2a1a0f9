"""Prospects written as they are, without matching, on SQLite (seeding, bulk loads and tests;
a part of store/sqlite/prospects.py's Prospects)."""

from __future__ import annotations

import datetime as dt
import sqlite3
from typing import TYPE_CHECKING

from store.activities import check_scope
from store.prospects import INSERT_BATCH, Contact, seeded_document
from store.prospects import record as prospect_record
from store.sqlite.paging import bump
from store.sqlite.schema import insert, ms

if TYPE_CHECKING:
    from store.sqlite.engine import Engine
    from store.sqlite.events import EventWriter


def write_prospects(
    conn: sqlite3.Connection, workspace_id: str, documents: list[dict], events: EventWriter
) -> None:
    """Insert prospect documents with their list memberships, count them and record their
    `prospect.created` events (caller's transaction)."""
    insert(conn, "prospects", documents)
    conn.executemany(
        "INSERT OR IGNORE INTO memberships (workspaceId, listId, prospectId, prospectCreatedAt) "
        "VALUES (?, ?, ?, ?)",
        [
            (workspace_id, list_id, doc["_id"], ms(doc["createdAt"]))
            for doc in documents
            for list_id in doc.get("listIds", [])
        ],
    )
    bump(conn, workspace_id, "prospects", len(documents))
    events.record(conn, workspace_id, (("prospect.created", doc["_id"]) for doc in documents))


class ProspectRows:
    engine: Engine
    events: EventWriter

    def parse_contact(self, raw: dict) -> Contact:
        raise NotImplementedError

    async def create(
        self,
        workspace_id: str,
        contact: dict,
        owner_user_id: str | None = None,
        list_ids: list[str] | None = None,
        created_at: dt.datetime | None = None,
        prospect_id: str | None = None,
    ) -> dict:
        """Insert one prospect as is, without matching (seeding and tests); its API record."""
        doc = seeded_document(
            workspace_id,
            self.parse_contact(contact),
            owner_user_id,
            list_ids,
            created_at,
            prospect_id,
        )
        await self.engine.write(write_prospects, workspace_id, [doc], self.events)
        return prospect_record(doc)

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt prospect documents (`prospect_document`) in bounded batches."""
        check_scope(workspace_id, documents)
        for start in range(0, len(documents), INSERT_BATCH):
            await self.engine.write(
                write_prospects,
                workspace_id,
                documents[start : start + INSERT_BATCH],
                self.events,
                timeout=600,
            )
