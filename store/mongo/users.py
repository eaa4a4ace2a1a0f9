"""Workspace users (the people who dial). Deleted users keep their record with deletedAt set.

Each write records its event as every MongoDB write does (store/mongo/events.py): a create or a
change marks the user's document, a delete buries a tombstone first. Writes that could take an
email another write is taking (a create, a change of email) run one at a time per workspace,
under a lease, so that two of them never both find the email free."""

from __future__ import annotations

import builtins
import contextlib
import datetime as dt
from typing import TYPE_CHECKING

from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import DuplicateKeyError

from store.clock import SYSTEM_CLOCK, Clock
from store.events import Removed
from store.idempotency import IdempotentWrite
from store.mongo.errors import translate_errors
from store.mongo.idempotency import store_response
from store.mongo.locks import Leases
from store.records import USER_FIELDS, admin_user_record, user_document
from store.records import user_record as _record
from store.users import UserExists, changes_of, check_seeded, checked_email, email_taken

if TYPE_CHECKING:
    from store.mongo.events import EventWriter

RECORD_FIELDS = USER_FIELDS  # admin_user_record's (the events' data too)
ACTIVE_FIELDS = {name: 1 for name in USER_FIELDS if name != "deletedAt"}  # user_record's
EMAILS_LEASE = "user-emails"  # held by the writes that may take an email (the docstring)


@translate_errors
class Users:
    def __init__(self, db: AsyncDatabase, events: EventWriter, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self.col = db["users"]
        self.idempotency = db["idempotency"]
        self.tombstones = db["tombstones"]
        self.leases = Leases(db)
        self.events = events

    async def _held(self, workspace_id: str) -> list[tuple[str, str]]:
        """The (id, email) pairs of the workspace's non-deleted users (index ws_active_created)."""
        cursor = self.col.find({"workspaceId": workspace_id, "deletedAt": None}, {"email": 1})
        return [(doc["_id"], doc.get("email") or "") async for doc in cursor]

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt user documents as given (seeding): no email check, so no lease."""
        check_seeded(workspace_id, documents)
        if not documents:
            return
        pending = self.events.begin()
        await self.col.insert_many([pending.new(doc) for doc in documents], ordered=False)
        await self.events.publish(
            workspace_id, pending, {"users": [str(doc["_id"]) for doc in documents]}
        )

    async def create(
        self,
        workspace_id: str,
        email: str,
        first_name: str,
        last_name: str,
        created_at: dt.datetime | None = None,
        user_id: str | None = None,
        once: IdempotentWrite | None = None,
    ) -> dict:
        """Insert a user. With an Idempotency-Key its id derives from the key: when an earlier
        attempt of the same request inserted it, that user is the answer."""
        user_id = user_id or (once.record_id("user") if once else None)
        doc = user_document(
            workspace_id,
            checked_email(email),
            first_name,
            last_name,
            created_at or self.clock.now(),
            user_id,
        )
        found = None
        if once is not None:
            found = await self.col.find_one({"_id": doc["_id"], "workspaceId": workspace_id})
        if found is None:
            async with self.leases.held(workspace_id, EMAILS_LEASE):
                if email_taken(doc["email"], await self._held(workspace_id)):
                    raise UserExists(doc["email"])
                pending = self.events.begin()
                try:
                    await self.col.insert_one(pending.new(doc))
                except DuplicateKeyError:
                    if once is None:
                        raise
                    found = await self.col.find_one(
                        {"_id": doc["_id"], "workspaceId": workspace_id}
                    )
                    if found is None:  # another workspace's id: cannot be (uuid5 of ours)
                        raise
                else:
                    await self.events.publish(workspace_id, pending, {"users": [str(doc["_id"])]})
        # An earlier attempt inserted it: its marker (or its event) is that attempt's.
        record = admin_user_record(found or doc)
        if once is not None:
            await store_response(self.idempotency, once, record)
        return record

    async def get(self, workspace_id: str, user_id: str) -> dict | None:
        doc = await self.col.find_one({"_id": user_id, "workspaceId": workspace_id}, RECORD_FIELDS)
        return doc and admin_user_record(doc)

    async def update(
        self, workspace_id: str, user_id: str, fields: dict
    ) -> tuple[dict, bool] | None:
        if "email" in fields:
            fields = {**fields, "email": checked_email(fields["email"])}
        lease = (
            self.leases.held(workspace_id, EMAILS_LEASE)
            if "email" in fields
            else contextlib.nullcontext()
        )
        active = {"_id": user_id, "workspaceId": workspace_id, "deletedAt": None}
        async with lease:
            doc = await self.col.find_one(active, RECORD_FIELDS)
            if doc is None:
                return None
            changes = changes_of(doc, fields)
            if not changes:
                return admin_user_record(doc), False
            if "email" in changes and email_taken(
                changes["email"], await self._held(workspace_id), except_id=user_id
            ):
                raise UserExists(changes["email"])
            changes["updatedAt"] = self.clock.now()
            pending = self.events.begin()
            result = await self.col.update_one(active, pending.update({"$set": changes}))
            if result.matched_count == 0:  # deleted meanwhile
                return None
            await self.events.publish(workspace_id, pending, {"users": [user_id]})
        return admin_user_record({**doc, **changes}), True

    async def list_active(self, workspace_id: str) -> list[dict]:
        cursor = self.col.find({"workspaceId": workspace_id, "deletedAt": None}, ACTIVE_FIELDS)
        cursor = cursor.sort([("createdAt", 1), ("_id", 1)])
        return [_record(doc) async for doc in cursor]

    async def is_active(self, workspace_id: str, user_id: str) -> bool:
        doc = await self.col.find_one(
            {"_id": user_id, "workspaceId": workspace_id, "deletedAt": None}, {"_id": 1}
        )
        return doc is not None

    async def delete(self, workspace_id: str, user_id: str) -> bool:
        """The tombstone first (bury), then the change, then the event: a writer that dies in
        between leaves the event to the sweeper, which records it once the user is deleted."""
        active = {"_id": user_id, "workspaceId": workspace_id, "deletedAt": None}
        if await self.col.find_one(active, {"_id": 1}) is None:
            return False
        gone = Removed("user", user_id, self.clock.now())
        pending = self.events.begin()
        await self.events.bury(workspace_id, pending, [gone])
        result = await self.col.update_one(
            active, {"$set": {"deletedAt": gone.at, "updatedAt": gone.at}}
        )
        if result.modified_count == 0:  # another delete came first: its event is the one
            await self.tombstones.update_one(
                {"_id": f"user/{user_id}", "workspaceId": workspace_id},
                {"$pullAll": {"_evt": pending.entries}},
            )
            return False
        await self.events.publish(workspace_id, pending, removed=[gone])
        return True

    async def workspace_of(self, user_id: str) -> str | None:
        """Operator scope (admin CLI only): which workspace a user id belongs to."""
        doc = await self.col.find_one({"_id": user_id}, {"workspaceId": 1})
        return doc and doc["workspaceId"]

    async def list(self, workspace_id: str, include_deleted: bool = False) -> builtins.list[dict]:
        """The workspace's users with their deletedAt, oldest first (admin CLI)."""
        query: dict = {"workspaceId": workspace_id}
        if not include_deleted:
            query["deletedAt"] = None
        cursor = self.col.find(query, RECORD_FIELDS).sort([("createdAt", 1), ("_id", 1)])
        return [admin_user_record(doc) async for doc in cursor]
