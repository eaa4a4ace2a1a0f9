"""Calls on MongoDB: the paginated, filtered call log, one call, the recording reference of a
call, the dialer's writes (recording calls, changing one: store/mongo/ingest.py), and the
recording retention sweep's claims (store/mongo/retention.py).

Every call is stored with its contribution to the dialer metrics (`quarter`, `m`:
store/mongo/metrics.py), which its record never shows."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, Unpack

from pymongo.asynchronous.database import AsyncDatabase

from store.activities import call_activity
from store.calls import CALL_FIELDS, INSERT_BATCH, CallFields, call_document
from store.calls import record as _record
from store.exports import BATCH_SIZE
from store.idempotency import IdempotentWrite
from store.ingest import NewCall, Recorded
from store.mongo.activities import Activities
from store.mongo.errors import translate_errors
from store.mongo.exports import export_batches
from store.mongo.idempotency import store_response
from store.mongo.ingest import CallRecorder
from store.mongo.metrics import metric_fields
from store.mongo.paging import page_query
from store.mongo.retention import claim_due, forget, postpone
from store.paging import Page, Window
from store.prospects import Contact
from store.retention import DueRecording

if TYPE_CHECKING:
    from store.mongo.events import EventWriter


def call_filters(
    workspace_id: str,
    *,
    user_id: str | None = None,
    prospect_id: str | None = None,
    list_id: str | None = None,
    direction: str | None = None,
    disposition: str | None = None,
    created_from: dt.datetime | None = None,
    created_to: dt.datetime | None = None,
    updated_since: dt.datetime | None = None,
) -> dict:
    """The query of GET /calls: equality filters, createdAt in [from, to), updatedAt >= since."""
    query: dict = {"workspaceId": workspace_id}
    for field, value in (
        ("userId", user_id),
        ("prospectId", prospect_id),
        ("listId", list_id),
        ("direction", direction),
        ("disposition", disposition),
    ):
        if value is not None:
            query[field] = value
    created: dict[str, dt.datetime] = {}
    if created_from is not None:
        created["$gte"] = created_from
    if created_to is not None:
        created["$lt"] = created_to
    if created:
        query["createdAt"] = created
    if updated_since is not None:
        query["updatedAt"] = {"$gte": updated_since}
    return query


@translate_errors
class Calls:
    def __init__(self, db: AsyncDatabase, events: EventWriter, default_region: str = "US") -> None:
        self.col = db["calls"]
        self.activities = Activities(db, events)
        self.events = events
        self.idempotency = db["idempotency"]
        self.default_region = default_region
        self.recorder = CallRecorder(db, events)

    async def get(self, workspace_id: str, call_id: str) -> dict | None:
        """The call's record, or None."""
        doc = await self.col.find_one({"_id": call_id, "workspaceId": workspace_id}, CALL_FIELDS)
        return doc and _record(doc)

    async def record(
        self,
        workspace_id: str,
        calls: list[NewCall],
        once: IdempotentWrite | None = None,
        partial: bool = False,
    ) -> list[Recorded]:
        """Record finished calls as an idempotent sequence (store/mongo/ingest.py)."""
        contacts = [
            Contact.parse(call.contact, self.default_region) if call.contact else None
            for call in calls
        ]
        recorded = await self.recorder.record(workspace_id, calls, contacts, once, partial)
        if once is not None:
            await store_response(self.idempotency, once, recorded)
        return recorded

    async def change(self, workspace_id: str, call_id: str, changes: dict) -> dict | None:
        """Change a call (store/mongo/ingest.py); its record, or None."""
        return await self.recorder.change(workspace_id, call_id, changes)

    async def create(self, workspace_id: str, **fields: Unpack[CallFields]) -> dict:
        """Record one finished call (`call_document` arguments); returns its API record."""
        doc = call_document(workspace_id, **fields)
        await self.insert_documents(workspace_id, [doc])
        return _record(doc)

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt call documents in bounded batches, each with its contribution to the
        dialer metrics, its `call` activity on the prospect's timeline, and their events."""
        if any(doc["workspaceId"] != workspace_id for doc in documents):
            raise ValueError("every document must belong to the given workspace")
        for start in range(0, len(documents), INSERT_BATCH):
            batch = documents[start : start + INSERT_BATCH]
            entries = [call_activity(doc) for doc in batch]
            pending = self.events.begin()
            await self.col.insert_many(
                [pending.new({**doc, **metric_fields(doc)}) for doc in batch], ordered=False
            )
            await self.activities.col.insert_many(
                [pending.new(entry) for entry in entries], ordered=False
            )
            await self.events.publish(
                workspace_id, pending, {"calls": [doc["_id"] for doc in batch]}, entries
            )

    async def page(
        self, workspace_id: str, window: Window, *, encoded: bool = False, **filters: Any
    ) -> Page:
        """One window of calls in the window's order; `filters` as `call_filters`. The records
        are dicts even when `encoded` is asked for (MongoDB sends BSON; the API encodes it)."""
        return await page_query(
            self.col, call_filters(workspace_id, **filters), window, CALL_FIELDS, _record
        )

    async def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = BATCH_SIZE,
        **filters: Any,
    ) -> AsyncGenerator[list[dict], None]:
        """The calls last changed at or before `settled_before`, in the sync order, in
        batches of records; `filters` as `call_filters`."""
        async for batch in export_batches(
            self.col,
            call_filters(workspace_id, **filters),
            "updatedAt",
            settled_before,
            CALL_FIELDS,
            _record,
            batch_size,
        ):
            yield batch

    async def recording_ref(self, workspace_id: str, call_id: str) -> str | None:
        """The provider's reference of the call's recording; None when the call is not in this
        workspace or has no recording."""
        doc = await self.col.find_one(
            {"_id": call_id, "workspaceId": workspace_id, "hasRecording": True}, {"recordingRef": 1}
        )
        return doc and doc.get("recordingRef")

    async def claim_expired_recordings(
        self,
        workspace_id: str,
        ended_before: dt.datetime,
        now: dt.datetime,
        lease: dt.timedelta,
        limit: int,
    ) -> list[DueRecording]:
        """Claim up to `limit` calls whose recordings are due (store/mongo/retention.py)."""
        return await claim_due(self.col, workspace_id, ended_before, now, lease, limit)

    async def forget_recording(self, workspace_id: str, due: DueRecording) -> dict | None:
        """Remove a recording reference the provider confirmed gone, with `call.updated`."""
        return await forget(self.col, self.events, workspace_id, due)

    async def postpone_recording(
        self, workspace_id: str, due: DueRecording, until: dt.datetime
    ) -> None:
        """The call is due again at `until` (a provider failure)."""
        await postpone(self.col, workspace_id, due, until)
