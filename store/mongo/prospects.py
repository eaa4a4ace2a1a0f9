"""Contact upload and prospect reads on MongoDB.

An upload costs a fixed number of round trips whatever the number of contacts: one read of the
candidate prospects, one bulk write of new prospects (upserts on their dedupe key) and of the
blank fields of prospects that existed before, one bulk write of list memberships, then one bulk
write of `list_added` activities (one per prospect and list, idempotent by _id), plus one read
of prospect ids and one bulk write of their blank fields only when a concurrent upload created
some of this upload's new prospects first.
Uploads of one workspace take turns through a lease (store/mongo/locks.py); the list is
marked before the memberships are written and its count set after (store/mongo/lists.py), so
that its prospectsCount is exact after a crash at any point.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

from pymongo import UpdateOne
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

from store.dnc import Screen
from store.exports import BATCH_SIZE
from store.idempotency import IdempotentWrite
from store.identity import normalize_email, normalize_phone
from store.mongo.activities import Activities, record_list_added
from store.mongo.dnc import screen_contacts
from store.mongo.errors import translate_errors
from store.mongo.exports import export_batches
from store.mongo.idempotency import store_response
from store.mongo.lists import mark_counting, set_counted
from store.mongo.locks import UPLOAD_LEASE, Leases
from store.mongo.matching import ContactMatcher
from store.mongo.paging import page_query
from store.mongo.prospect_changes import ProspectChanges
from store.paging import Page, Window
from store.prospects import (
    DUPLICATE_KEY,
    INSERT_BATCH,
    RECORD_FIELDS,
    Candidate,
    Contact,
    Upload,
    outcomes,
    seeded_document,
)
from store.prospects import record as _record
from store.tombstones import either_record

if TYPE_CHECKING:
    from store.mongo.events import EventWriter, Pending


@translate_errors
class Prospects(ProspectChanges):
    def __init__(self, db: AsyncDatabase, events: EventWriter, default_region: str = "US") -> None:
        self.col = db["prospects"]
        self.lists = db["lists"]
        self.idempotency = db["idempotency"]
        self.activities = Activities(db, events)
        self.leases = Leases(db)
        self.matcher = ContactMatcher(self.col)
        self.events = events
        self.default_region = default_region

    def parse_contact(self, raw: dict) -> Contact:
        return Contact.parse(raw, self.default_region)

    async def add_to_list(
        self,
        workspace_id: str,
        listing: dict,
        raw_contacts: list[dict],
        once: IdempotentWrite | None = None,
    ) -> Upload:
        """Match or create a prospect for each contact and add it to `listing` (a list record),
        and set the list's prospectsCount.

        Returns the list's number of prospects after the upload (counted while the upload still
        holds its turn) and each contact's outcome. Idempotent: the same upload again adds
        nothing. With an Idempotency-Key (`once`) the prospects it creates take ids derived
        from the key, so that a retry after a crash answers as the first attempt would have,
        and the response is stored at the end.
        """
        contacts = [self.parse_contact(raw) for raw in raw_contacts]
        list_id = listing["id"]
        pending = self.events.begin()
        # Matching reads the workspace's prospects and then writes: uploads of one workspace
        # take turns (a lease shared by every process), so two uploads can never both miss a
        # prospect the other is creating under a different identifier. The unique dedupeKey
        # upserts stay as the second line of defence.
        async with self.leases.held(workspace_id, UPLOAD_LEASE):
            # The suppression list is read under the same turn its writes take (store/mongo/
            # dnc.py): no entry can be added between this read and the upload's writes.
            db = self.col.database
            screened = await screen_contacts(db, workspace_id, contacts, self.matcher)
            contacts = screened.kept(raw := contacts)
            if not contacts:
                found = await self.lists.find_one(
                    {"_id": list_id, "workspaceId": workspace_id}, {"prospectsCount": 1}
                )
                upload = Upload(found["prospectsCount"] if found else 0, [])
                return await self._answer(upload, screened, raw, once)
            mark = await mark_counting(self.lists, workspace_id, list_id)
            try:
                chosen, added = await self._add_to_list(
                    workspace_id, listing, contacts, once, pending
                )
            except BulkWriteError as exc:  # a fallback: the lease already serialises uploads
                if any(e.get("code") != DUPLICATE_KEY for e in exc.details.get("writeErrors", [])):
                    raise
                chosen, added = await self._add_to_list(
                    workspace_id, listing, contacts, once, pending
                )
            touched = [target.id for target in chosen if target.id]
            await self.events.publish(workspace_id, pending, {"prospects": touched}, added)
            members = await self.count_in_list(workspace_id, list_id)
            await set_counted(self.lists, self.events, workspace_id, list_id, mark, members)
        return await self._answer(Upload(members, outcomes(chosen)), screened, raw, once)

    async def _answer(
        self, upload: Upload, screened: Screen, raw: list[Contact], once: IdempotentWrite | None
    ) -> Upload:
        """The upload's answer with the suppressed contacts' results, stored for its key."""
        upload = Upload(
            upload.members, screened.merge(len(raw), upload.results), len(screened.suppressed)
        )
        if once is not None:
            await store_response(self.idempotency, once, upload)
        return upload

    async def match(
        self,
        workspace_id: str,
        raw_contacts: list[dict],
        owner_user_id: str | None = None,
        once: IdempotentWrite | None = None,
    ) -> list[dict]:
        """Match or create a prospect for each contact with the upload's rules, adding none
        to a list; each contact's outcome (store.prospects.outcomes), with the events of the
        prospects it created or filled. Idempotent; with an Idempotency-Key the prospects it
        creates take ids derived from it."""
        contacts = [self.parse_contact(raw) for raw in raw_contacts]
        pending = self.events.begin()
        async with self.leases.held(workspace_id, UPLOAD_LEASE):
            db = self.col.database
            screened = await screen_contacts(db, workspace_id, contacts, self.matcher)
            kept = screened.kept(contacts)
            _, chosen = await self.matcher.resolve(
                workspace_id, kept, owner_user_id, self.events.now(), once, pending
            )
            touched = [target.id for target in chosen if target.id]
            await self.events.publish(workspace_id, pending, {"prospects": touched})
        results = screened.merge(len(contacts), outcomes(chosen))
        if once is not None:
            await store_response(self.idempotency, once, results)
        return results

    async def count_in_list(self, workspace_id: str, list_id: str) -> int:
        """How many prospects the list has (index workspaceId+listIds+createdAt+_id)."""
        return await self.col.count_documents({"workspaceId": workspace_id, "listIds": list_id})

    async def _add_to_list(
        self,
        workspace_id: str,
        listing: dict,
        contacts: list[Contact],
        once: IdempotentWrite | None,
        pending: Pending,
    ) -> tuple[list[Candidate], list[dict]]:
        """One attempt at the upload, its writes marked with `pending`: the prospect each
        contact landed on, and the `list_added` activities it inserted."""
        list_id, now = listing["id"], self.events.now()
        targets, chosen = await self.matcher.resolve(
            workspace_id, contacts, listing["ownerUserId"], now, once, pending
        )
        members = [t.id for t in targets if t.id]
        if not members:
            return chosen, []
        await self.col.bulk_write(
            [
                UpdateOne(
                    {"_id": member, "workspaceId": workspace_id, "listIds": {"$ne": list_id}},
                    pending.update({"$push": {"listIds": list_id}, "$set": {"updatedAt": now}}),
                )
                for member in members
            ],
            ordered=False,
        )
        added = await record_list_added(
            self.activities.col, workspace_id, list_id, listing["name"], members, now, pending
        )
        return chosen, added

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
        pending = self.events.begin()
        await self.col.insert_one(pending.new(doc))
        await self.events.publish(workspace_id, pending, {"prospects": [doc["_id"]]})
        return _record(doc)

    def normalize_phone(self, value: str) -> str | None:
        """A phone number as stored and matched (E.164), or None when it cannot be read."""
        return normalize_phone(value, self.default_region)

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt prospect documents (`prospect_document`) in bounded batches."""
        if any(doc["workspaceId"] != workspace_id for doc in documents):
            raise ValueError("every document must belong to the given workspace")
        for start in range(0, len(documents), INSERT_BATCH):
            batch = documents[start : start + INSERT_BATCH]
            pending = self.events.begin()
            await self.col.insert_many([pending.new(doc) for doc in batch], ordered=False)
            await self.events.publish(
                workspace_id, pending, {"prospects": [doc["_id"] for doc in batch]}
            )

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
        tombstones too (store/tombstones.py). The records are dicts even when `encoded` is
        asked for (MongoDB sends BSON; the API encodes it)."""
        query = self._filtered(workspace_id, list_id, email, phone, updated_since, do_not_call)
        if include_deleted:
            del query["deletedAt"]
            fields = {**RECORD_FIELDS, "deletedAt": 1}
            return await page_query(self.col, query, window, fields, either_record(_record))
        return await page_query(self.col, query, window, RECORD_FIELDS, _record)

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
    ) -> AsyncGenerator[list[dict], None]:
        """The prospects last changed at or before `settled_before`, in the sync order, in
        batches of records; filters as `page`."""
        async for batch in export_batches(
            self.col,
            self._filtered(workspace_id, list_id, email, phone, updated_since, do_not_call),
            "updatedAt",
            settled_before,
            RECORD_FIELDS,
            _record,
            batch_size,
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
        query = self._query(workspace_id, email=email, phone=phone)
        if prospect_id is not None:
            query["_id"] = prospect_id
        cursor = self.col.find(query, RECORD_FIELDS).sort([("createdAt", 1), ("_id", 1)])
        return [_record(doc) async for doc in cursor.limit(limit)]

    def _filtered(
        self,
        workspace_id: str,
        list_id: str | None,
        email: str | None,
        phone: str | None,
        updated_since: dt.datetime | None,
        do_not_call: bool | None = None,
    ) -> dict:
        """The query of GET /prospects's filters."""
        query = self._query(workspace_id, email=email, phone=phone)
        if do_not_call is not None:  # a prospect stored before do-not-call has no field: false
            query["doNotCall"] = True if do_not_call else {"$in": [False, None]}
        if list_id is not None:
            query["listIds"] = list_id
        if updated_since is not None:
            query["updatedAt"] = {"$gte": updated_since}
        return query

    def _query(self, workspace_id: str, *, email: str | None, phone: str | None) -> dict:
        query: dict = {"workspaceId": workspace_id, "deletedAt": None}  # live ones only
        if email is not None:
            query["emailNorm"] = normalize_email(email)
        if phone is not None:
            query["phoneE164"] = self.normalize_phone(phone)
        return query
