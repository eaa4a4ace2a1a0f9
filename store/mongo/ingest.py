"""The dialer's writes on MongoDB (store/ingest.py): recording calls, changing a call, logging
activities, each an idempotent sequence of single-document writes (no multi-document
transactions), so that a retry after a crash at any point completes it exactly.

Recording calls: everything that can refuse a call is checked before anything is written (the
references, the calls of provider SIDs recorded before, compared by content); then the
prospects the calls land on are created (contacts are matched holding the workspace's upload
lease, as a contact upload does); then the calls are inserted, each with its contribution to
the dialer metrics and whether its toNumber is on the do-not-call list (read just before the
insert), by ids that converge (uuid5 of the SID, or derived from the Idempotency-Key: an id
found taken is the earlier attempt's call, or the concurrent post's of
the same SID); then every call's timeline entry is upserted (idempotent: this also completes
what a crash between the two left); then the response is stored. A post that races a
concurrent post of the same SID with other content is answered 409 `call_exists` after the
calls before it in its batch were written (only a transaction could undo them); their retry
answers `existing`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pymongo import UpdateOne
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

from store.activities import call_activity
from store.calls import CALL_FIELDS, number_keys, suppressed_numbers
from store.calls import record as call_record
from store.classify import Earlier, Recording
from store.idempotency import IdempotentWrite
from store.ingest import (
    CREATED,
    EXISTING,
    NewCall,
    Recorded,
    References,
    call_ids,
    changes_to,
    converging,
    exists,
    follows_activity,
    wanted,
)
from store.mongo.activities import off_deleted_prospects
from store.mongo.bulk import bulk, ids_in
from store.mongo.dnc import listed as dnc_listed
from store.mongo.events import MARK
from store.mongo.locks import UPLOAD_LEASE, Leases
from store.mongo.matching import ContactMatcher
from store.mongo.metrics import changed_call_set, metric_fields
from store.prospects import DUPLICATE_KEY, Contact, outcomes

if TYPE_CHECKING:
    from store.mongo.events import EventWriter, Pending

CHANGE_ATTEMPTS = 10  # a change lost to a concurrent change of the same call is tried again


async def upsert_entries(
    db: AsyncDatabase, workspace_id: str, docs: Iterable[dict], pending: Pending
) -> list[dict]:
    """The `call` timeline entries of calls, marked with `pending` (idempotent: an entry
    written before stays), but on a prospect deleted meanwhile (`off_deleted_prospects`);
    the entries this call inserted."""
    entries = [call_activity(doc) for doc in docs]
    upserted = await bulk(
        db["activities"],
        [
            UpdateOne(
                {"_id": entry["_id"], "workspaceId": workspace_id},
                {"$setOnInsert": pending.new(entry)},
                upsert=True,
            )
            for entry in entries
        ],
    )
    orphans = await off_deleted_prospects(
        db, workspace_id, [(entry["_id"], entry["prospectId"]) for entry in entries]
    )
    return [e for e in entries if e["_id"] in upserted and e["_id"] not in orphans]


class CallRecorder:
    """The calls' side of recording: its collections and the prospects' matcher."""

    def __init__(self, db: AsyncDatabase, events: EventWriter) -> None:
        self.db = db
        self.col = db["calls"]
        self.activities = db["activities"]
        self.matcher = ContactMatcher(db["prospects"])  # the contact upload's rules
        self.leases = Leases(db)
        self.events = events

    async def references(self, workspace_id: str, calls: list[NewCall]) -> References:
        users, prospects, lists = wanted(calls)
        return References(
            await ids_in(self.db["users"], workspace_id, users, deletedAt=None),
            await ids_in(self.db["prospects"], workspace_id, prospects, deletedAt=None),
            await ids_in(self.db["lists"], workspace_id, lists, deletedAt=None),
        )

    async def record(
        self,
        workspace_id: str,
        calls: list[NewCall],
        contacts: list[Contact | None],
        once: IdempotentWrite | None,
        partial: bool,
    ) -> list[Recorded]:
        """Record calls (the module's docstring), with their events: `call.created` and the
        `activity.created` of its timeline entry for each call this write creates, and
        `prospect.created` or `prospect.updated` for each prospect a contact created or
        filled, published before the answer (a writer that dies first leaves its markers to
        the event sweep)."""
        now = self.events.now()
        marker = self.events.begin()
        recording = Recording(calls, partial)
        results, batch, refuse = recording.results, recording.batch, recording.refuse
        recording.check_references(await self.references(workspace_id, calls))
        marks = [once.record_id("call", str(i)) for i in range(len(calls))] if once else None
        ids = call_ids(workspace_id, calls, marks)
        looked_up = [ids[i] for i in converging(calls, marks)]
        found = await self.found(workspace_id, looked_up)
        given = [i for i, c in enumerate(contacts) if c is not None and results[i] is None]
        parsed = [c for i in given if (c := contacts[i]) is not None]
        # Matching reads and then writes: it takes turns with uploads, as uploads do.
        lease = self.leases.held(workspace_id, UPLOAD_LEASE) if parsed else _nothing()
        async with lease:
            prospect_of = dict(
                zip(given, await self.matcher.preview(workspace_id, parsed), strict=True)
            )
            earlier = {
                call_id: Earlier(doc.get("contentHash"), doc.get("createdWith"))
                for call_id, doc in found.items()
            }
            owners = recording.classify(ids, prospect_of, earlier, marks)
            written = [i for i, r in enumerate(results) if r is not None and r.refusal is None]
            matches: dict[int, dict] = {}
            touched: list[str] = []
            if parsed:
                needed = [i in written for i in given]
                _, chosen = await self.matcher.resolve(
                    workspace_id, parsed, None, now, once, marker, needed=needed, owners=owners
                )
                touched = [
                    t.id for t, wanted in zip(chosen, needed, strict=True) if wanted and t.id
                ]
                prospect_of = dict(zip(given, chosen, strict=True))
                picked = [i for i in written if i in prospect_of]
                matches = {
                    i: {k: v for k, v in outcome.items() if k != "index"}
                    for i, outcome in zip(
                        picked, outcomes([prospect_of[i] for i in picked]), strict=True
                    )
                }
        docs: dict[str, dict] = {}
        for index in written:
            call, call_id = calls[index], ids[index]
            result = results[index]
            if result is None or result.outcome != CREATED or call_id in docs:
                continue
            if call_id in found:  # written by an earlier attempt of this request
                docs[call_id] = found[call_id]
                continue
            target = prospect_of.get(index)
            prospect_id = call.prospect_id or (target.id if target else None)
            if prospect_id is None:
                raise RuntimeError("a contact's prospect was not created")
            doc = call.document(workspace_id, call_id, prospect_id, now)
            if marks:
                doc["createdWith"] = marks[index]
            docs[call_id] = doc
        fresh = [doc for call_id, doc in docs.items() if call_id not in found]
        # The list as read just before the insert: an entry committed meanwhile is not seen.
        listed = await dnc_listed(self.db["do_not_call"], workspace_id, number_keys(fresh))
        suppressed_numbers(fresh, set(listed))
        taken = await self.insert(fresh, marker)
        if taken:  # a concurrent post of the same SID was first
            raced = await self.found(workspace_id, list(taken))
            for index in written:
                call_id = ids[index]
                if call_id not in raced:
                    continue
                result = results[index]
                assert result is not None
                mine = docs[call_id]
                if raced[call_id].get("contentHash") == mine.get("contentHash"):
                    result.outcome = EXISTING
                    docs[call_id] = raced[call_id]
                else:
                    refuse(index, exists(call_id, index if batch else None))
            found.update(raced)
        kept = [i for i in written if (r := results[i]) is not None and r.refusal is None]
        final = {ids[i]: docs.get(ids[i]) or found[ids[i]] for i in kept}
        entries = await upsert_entries(self.db, workspace_id, final.values(), marker)
        await self.events.publish(
            workspace_id, marker, {"prospects": touched, "calls": list(final)}, entries
        )
        for index in kept:
            result = results[index]
            assert result is not None
            result.call, result.match = call_record(final[ids[index]]), matches.get(index)
        return [r for r in results if r is not None]

    async def found(self, workspace_id: str, ids: list[str]) -> dict[str, dict]:
        """The calls of the workspace among `ids`, with their content hash and marker."""
        if not ids:
            return {}
        fields = {**CALL_FIELDS, "contentHash": 1, "createdWith": 1, "workspaceId": 1}
        cursor = self.col.find({"_id": {"$in": ids}, "workspaceId": workspace_id}, fields)
        return {doc["_id"]: doc async for doc in cursor}

    async def insert(self, docs: list[dict], pending: Pending) -> set[str]:
        """Insert new calls with their metrics fields, marked with `pending`; the ids found
        taken."""
        if not docs:
            return set()
        try:
            await self.col.insert_many(
                [pending.new({**doc, **metric_fields(doc)}) for doc in docs], ordered=False
            )
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors", [])
            if any(e.get("code") != DUPLICATE_KEY for e in errors):
                raise
            return {docs[e["index"]]["_id"] for e in errors}
        return set()

    async def change(self, workspace_id: str, call_id: str, changes: dict) -> dict | None:
        """Change a call: one conditional single-document update (on the updatedAt it read,
        with the call's new metrics contribution), then its timeline entry rewritten from the
        call as it is (also when nothing changed: that completes a change cut short), where it
        is (a deleted prospect's timeline went with it, and stays gone), and its
        `call.updated` event (the update carries the marker)."""
        pending = self.events.begin()
        for _ in range(CHANGE_ATTEMPTS):
            doc = await self.col.find_one({"_id": call_id, "workspaceId": workspace_id})
            if doc is None:
                return None
            changed = changes_to(doc, changes)
            if changed:
                moved = {**changed, "updatedAt": max(self.events.now(), doc["updatedAt"])}
                result = await self.col.update_one(
                    {"_id": call_id, "workspaceId": workspace_id, "updatedAt": doc["updatedAt"]},
                    pending.update({"$set": changed_call_set(doc, moved)}),
                )
                if not result.matched_count:
                    continue  # changed meanwhile: read it again
                doc = {**doc, **moved}
            entry = call_activity(doc)
            rewrite: dict = {
                "$set": {name: value for name, value in entry.items() if name != "_id"}
            }
            rewritten = follows_activity(changed)
            if rewritten and pending.enabled:  # no `activity.updated`: it is sent as created again
                rewrite["$push"] = {MARK: pending.entry(True)}
            # $set rather than a replacement: the entry keeps a marker it may carry still.
            await self.activities.update_one(
                {"_id": entry["_id"], "workspaceId": workspace_id}, rewrite
            )
            if changed:
                touched = {"calls": [call_id], "activities": [entry["_id"]] if rewritten else []}
                await self.events.publish(workspace_id, pending, touched)
            return call_record(doc)
        raise RuntimeError(f"call {call_id} kept changing while it was being changed")


class _nothing:
    """An async context manager that does nothing (no lease needed)."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None
