"""Contact matching on MongoDB: the reads and writes that land contacts on prospects with the
upload's rules (store/prospects.py decides; this module reads the candidates and writes the
prospects). Shared by the contact upload and the prospects import (store/mongo/prospects.py)
and by recording calls given by contact (store/mongo/ingest.py). Every write is marked with
the caller's pending events (store/mongo/events.py); the caller publishes them, holding the
workspace's upload lease."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pymongo import UpdateOne
from pymongo.asynchronous.collection import AsyncCollection

from store.idempotency import IdempotentWrite
from store.prospects import (
    MATCH_FIELDS,
    Candidate,
    Contact,
    match_all,
    new_prospect_id,
    prospect_document,
    recognise_created,
)

if TYPE_CHECKING:
    from store.mongo.events import Pending


class ContactMatcher:
    """Matches contacts against a workspace's prospects and creates or fills what they land on."""

    def __init__(self, prospects: AsyncCollection) -> None:
        self.col = prospects

    async def resolve(
        self,
        workspace_id: str,
        contacts: list[Contact],
        owner_user_id: str | None,
        now: dt.datetime,
        once: IdempotentWrite | None,
        pending: Pending,
        needed: list[bool] | None = None,
        owners: Mapping[str, str | None] | None = None,
    ) -> tuple[list[Candidate], list[Candidate]]:
        """Match the contacts, create the prospects that no existing one matches (owned by
        `owner_user_id`, or by dedupe key in `owners`) and fill the blanks of the matched
        ones: the distinct prospects and the one per contact. With `needed`, only the prospects
        of the contacts it marks are created or filled (the others keep no id when they would
        be new). Its writes are marked with `pending` (the caller publishes). Idempotent; run it
        holding the workspace's upload lease."""
        targets, chosen = match_all(contacts, await self.candidates(workspace_id, contacts))
        if needed is not None:
            used = {id(t) for t, wanted in zip(chosen, needed, strict=True) if wanted}
            targets = [t for t in targets if id(t) in used]
        # First bulk write: an upsert per new prospect (on its unique dedupeKey) and the blank
        # fields of prospects that existed before; a prospect just upserted has no blanks.
        writes, upserts = [], {}
        for target in targets:
            if target.id is None:
                selector = {"workspaceId": workspace_id, "dedupeKey": target.key}
                created = Contact(dict(target.fields), target.email, target.phone, target.linkedin)
                doc = prospect_document(
                    workspace_id,
                    created,
                    target.key,
                    (owners or {}).get(target.key, owner_user_id),
                    now,
                    prospect_id=new_prospect_id(once, target.key),
                )
                for field in selector:  # the upsert takes these from the selector
                    doc.pop(field)
                upserts[doc["_id"]] = target
                writes.append(UpdateOne(selector, {"$setOnInsert": pending.new(doc)}, upsert=True))
            else:
                writes += self.fills(workspace_id, target, now, pending)
        if writes:
            written = await self.col.bulk_write(writes, ordered=True)
            # Matched by the proposed _id, not by op index; an upsert that found a concurrent
            # upload's prospect inserted nothing.
            for prospect_id in (written.upserted_ids or {}).values():
                upserts[prospect_id].id, upserts[prospect_id].created = prospect_id, True
        raced = [t for t in targets if t.id is None]  # created by a concurrent upload
        if raced:
            cursor = self.col.find(
                {"workspaceId": workspace_id, "dedupeKey": {"$in": [t.key for t in raced]}},
                {"_id": 1, "dedupeKey": 1},
            )
            ids = {doc["dedupeKey"]: doc["_id"] async for doc in cursor}
            fills = []
            for target in raced:
                target.id = ids.get(target.key)
                target.fills = dict(target.fields)
                if target.id:
                    fills += self.fills(workspace_id, target, now, pending)
            if fills:
                await self.col.bulk_write(fills, ordered=False)
        recognise_created(targets, once)
        return targets, chosen

    @staticmethod
    def fills(
        workspace_id: str, target: Candidate, now: dt.datetime, pending: Pending
    ) -> list[UpdateOne]:
        """Fill blanks field by field: each update applies only while the field is still
        absent, so a concurrent writer's value is never overwritten."""
        selector = {"_id": target.id, "workspaceId": workspace_id}
        return [
            UpdateOne(
                {**selector, field: {"$exists": False}},
                pending.update({"$set": {**update, "updatedAt": now}}),
            )
            for field, update in target.fill_updates().items()
        ]

    async def candidates(self, workspace_id: str, contacts: list[Contact]) -> list[Candidate]:
        emails = sorted({c.email for c in contacts if c.email})
        phones = sorted({c.phone for c in contacts if c.phone})
        clauses = []
        if emails:
            clauses.append({"emailNorm": {"$in": emails}})
        if phones:
            clauses.append({"phoneE164": {"$in": phones}})
        if not clauses:
            return []
        cursor = self.col.find(
            {"workspaceId": workspace_id, "$or": clauses, "deletedAt": None}, MATCH_FIELDS
        )
        return [Candidate.from_doc(doc) async for doc in cursor]

    async def preview(self, workspace_id: str, contacts: list[Contact]) -> list[Candidate]:
        """The prospect each contact would land on, writing nothing: an existing prospect's
        id, or none for one still to create (a prospect created earlier under its identity
        is found by its dedupe key)."""
        if not contacts:
            return []
        targets, chosen = match_all(contacts, await self.candidates(workspace_id, contacts))
        new = {t.key: t for t in targets if t.id is None}
        if new:
            cursor = self.col.find(
                {"workspaceId": workspace_id, "dedupeKey": {"$in": sorted(new)}},
                {"_id": 1, "dedupeKey": 1},
            )
            async for doc in cursor:
                new[doc["dedupeKey"]].id = doc["_id"]
        return chosen
