"""The do-not-call suppression list on MongoDB (store/dnc.py has the rules).

Without multi-document transactions, exactness against contact uploads comes from the turn
uploads already take: adding or removing entries holds the workspace's upload lease
(store/mongo/locks.py, UPLOAD_LEASE), and an upload reads the list while it holds that lease,
before it writes. So an upload and a suppression of the same number are one after the other:
an upload either ran wholly before the entry was added (its members were added before the
suppression, and the prospects it created are marked do-not-call by the suppression), or it
reads the entry and adds nothing for that contact. Each step is idempotent (the entries are
unique by key, the prospects' values recomputed from the list as it is), so a retry completes
what a crash left half done.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from pymongo import UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

from store.dnc import (
    FIELDS,
    RESOURCE,
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
from store.mongo.errors import translate_errors
from store.mongo.locks import UPLOAD_LEASE, Leases
from store.mongo.matching import ContactMatcher
from store.mongo.paging import page_query
from store.paging import Page, Window
from store.prospects import Contact

if TYPE_CHECKING:
    from store.mongo.events import EventWriter, Pending

PROSPECT_FIELDS = {"phoneE164": 1, "emailNorm": 1, "doNotCallReason": 1, "doNotCallSelf": 1}
DUPLICATE_KEY = 11000


async def listed(col: AsyncCollection, workspace_id: str, keys: Collection[str]) -> dict[str, dict]:
    """The entries of `keys` on the workspace's list, by key (index ws_key)."""
    if not keys:
        return {}
    cursor = col.find({"workspaceId": workspace_id, "key": {"$in": sorted(keys)}})
    return {doc["key"]: doc async for doc in cursor}


async def screen_contacts(
    db: AsyncDatabase, workspace_id: str, contacts: list[Contact], matcher: ContactMatcher
) -> Screen:
    """Which of an upload's contacts are suppressed (store.dnc.screen), read while the upload
    holds its turn, before it matches."""
    found = set(await listed(db[RESOURCE], workspace_id, contact_keys(contacts)))
    # The do-not-call prospects the contacts could match: mostly none, and then (nothing
    # listed either) the upload goes on without reading more.
    clauses: list[dict] = []
    if phones := sorted({c.phone for c in contacts if c.phone}):
        clauses.append({"phoneE164": {"$in": phones}})
    if emails := sorted({c.email for c in contacts if c.email}):
        clauses.append({"emailNorm": {"$in": emails}})
    dnc_ids: set[str] = set()
    if clauses:
        cursor = db["prospects"].find(
            {"workspaceId": workspace_id, "$or": clauses, "doNotCall": True}, {"_id": 1}
        )
        dnc_ids = {doc["_id"] async for doc in cursor}
    if not found and not dnc_ids:
        return Screen({})
    pool = await matcher.candidates(workspace_id, contacts)  # screening consumes it
    return screen(contacts, pool, found, dnc_ids)


@translate_errors
class DoNotCall:
    def __init__(self, db: AsyncDatabase, events: EventWriter, default_region: str = "US") -> None:
        self.col = db[RESOURCE]
        self.prospects = db["prospects"]
        self.leases = Leases(db)
        self.events = events
        self.default_region = default_region

    async def _recompute(
        self, workspace_id: str, phones: list[str], emails: list[str], pending: Pending
    ) -> list[str]:
        """Set doNotCall and doNotCallReason of the prospects with these phones or emails as
        the list now says, marked with `pending`; the ids of those whose value changed."""
        clauses: list[dict] = []
        if phones:
            clauses.append({"phoneE164": {"$in": phones}})
        if emails:
            clauses.append({"emailNorm": {"$in": emails}})
        if not clauses:
            return []
        cursor = self.prospects.find({"workspaceId": workspace_id, "$or": clauses}, PROSPECT_FIELDS)
        docs = [doc async for doc in cursor]
        keys = {phone_key(d["phoneE164"]) for d in docs if d.get("phoneE164")}
        keys |= {email_key(d["emailNorm"]) for d in docs if d.get("emailNorm")}
        changed = prospect_changes(docs, set(await listed(self.col, workspace_id, keys)))
        if changed:
            now = self.events.now()
            await self.prospects.bulk_write(
                [
                    UpdateOne(
                        {"_id": pid, "workspaceId": workspace_id},
                        pending.update(
                            {
                                "$set": {
                                    "doNotCall": why is not None,
                                    "doNotCallReason": why,
                                    "updatedAt": now,
                                }
                            }
                        ),
                    )
                    for pid, why in changed.items()
                ],
                ordered=False,
            )
        return list(changed)

    async def add(self, workspace_id: str, entries: list[dict], reason: str | None) -> list[dict]:
        wanted = parse_entries(entries, self.default_region)
        keys = list(dict.fromkeys(w.key for w in wanted))
        pending = self.events.begin()
        async with self.leases.held(workspace_id, UPLOAD_LEASE):
            found = await listed(self.col, workspace_id, keys)
            now = self.events.now()
            new = {
                w.key: entry_document(workspace_id, w, reason, now)
                for w in wanted
                if w.key not in found
            }
            if new:
                try:
                    await self.col.insert_many(
                        [pending.new(doc) for doc in new.values()], ordered=False
                    )
                except BulkWriteError as exc:  # a write that held no turn (cannot be), or a
                    errors = exc.details.get("writeErrors", [])  # retry's: theirs stand
                    if any(e.get("code") != DUPLICATE_KEY for e in errors):
                        raise
                    taken = await listed(self.col, workspace_id, list(new))
                    for key, doc in taken.items():
                        if doc["_id"] != new[key]["_id"]:
                            found[key] = doc
                            del new[key]
            fresh: list[Wanted] = [w for w in wanted if w.key in new]
            changed = await self._recompute(
                workspace_id,
                [w.value for w in fresh if w.field == "phoneNumber"],
                [w.value for w in fresh if w.field == "email"],
                pending,
            )
            await self.events.publish(
                workspace_id,
                pending,
                {RESOURCE: [doc["_id"] for doc in new.values()], "prospects": changed},
            )
        return results(wanted, {**found, **new}, set(new))

    async def remove(self, workspace_id: str, entry_id: str) -> bool:
        """The tombstone first (bury, with the entry as its event's data), then the delete,
        then the prospects it no longer suppresses, then the events."""
        async with self.leases.held(workspace_id, UPLOAD_LEASE):
            doc = await self.col.find_one({"_id": entry_id, "workspaceId": workspace_id})
            if doc is None:
                return False
            pending = self.events.begin()
            gone = Removed(RESOURCE, entry_id, self.events.now(), "removed", record(doc))
            await self.events.bury(workspace_id, pending, [gone])
            await self.col.delete_one({"_id": entry_id, "workspaceId": workspace_id})
            phones = [doc["phoneNumber"]] if doc.get("phoneNumber") else []
            emails = [doc["email"]] if doc.get("email") else []
            changed = await self._recompute(workspace_id, phones, emails, pending)
            await self.events.publish(workspace_id, pending, {"prospects": changed}, removed=[gone])
        return True

    async def page(
        self,
        workspace_id: str,
        window: Window,
        *,
        phone: str | None = None,
        email: str | None = None,
    ) -> Page:
        query: dict = {"workspaceId": workspace_id}
        key = lookup_key(phone, email, self.default_region)
        if key is not None:
            query["key"] = key
        return await page_query(self.col, query, window, FIELDS, record)

    async def is_listed(self, workspace_id: str, phone: str | None, email: str | None) -> bool:
        keys = [phone_key(phone)] if phone else []
        if email:
            keys.append(email_key(email))
        return bool(await listed(self.col, workspace_id, keys))
