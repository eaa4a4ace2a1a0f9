"""What is remembered of the provider's calls between their callbacks, on MongoDB (the rules:
store/provider_calls.py): one document per (workspace, CallSid), `_id` naming both, every change
one atomic upsert."""

from __future__ import annotations

import datetime as dt

from pymongo import DESCENDING
from pymongo.asynchronous.database import AsyncDatabase

from store.mongo.errors import translate_errors
from store.provider_calls import pending_record

FIELDS = (
    "callSid",
    "initiatedAt",
    "answeredAt",
    "recordingSid",
    "recordingDurationSeconds",
    "final",
    "pendingReason",
    "receivedAt",
    "callId",
    "expiresAt",
)


def _id(workspace_id: str, call_sid: str) -> str:
    return f"{workspace_id}:{call_sid}"


def _state(doc: dict | None) -> dict | None:
    if doc is None:
        return None
    return {name: doc.get(name) for name in FIELDS}


@translate_errors
class ProviderCalls:
    def __init__(self, db: AsyncDatabase) -> None:
        self.col = db["provider_calls"]

    async def _upsert(
        self, workspace_id: str, call_sid: str, expires_at: dt.datetime, update: dict
    ) -> None:
        update.setdefault("$set", {})["expiresAt"] = expires_at
        update["$setOnInsert"] = {"workspaceId": workspace_id, "callSid": call_sid}
        await self.col.update_one(
            {"_id": _id(workspace_id, call_sid), "workspaceId": workspace_id}, update, upsert=True
        )

    async def get(self, workspace_id: str, call_sid: str) -> dict | None:
        doc = await self.col.find_one(
            {"_id": _id(workspace_id, call_sid), "workspaceId": workspace_id}
        )
        return _state(doc)

    async def progress(
        self,
        workspace_id: str,
        call_sid: str,
        *,
        initiated_at: dt.datetime | None,
        answered_at: dt.datetime | None,
        expires_at: dt.datetime,
    ) -> None:
        await self._upsert(workspace_id, call_sid, expires_at, {})
        # The first instant noted wins (a retried callback changes nothing).
        for name, value in (("initiatedAt", initiated_at), ("answeredAt", answered_at)):
            if value is not None:
                await self.col.update_one(
                    {
                        "_id": _id(workspace_id, call_sid),
                        "workspaceId": workspace_id,
                        name: None,
                    },
                    {"$set": {name: value}},
                )

    async def hold_recording(
        self,
        workspace_id: str,
        call_sid: str,
        recording_sid: str,
        duration_seconds: int,
        expires_at: dt.datetime,
    ) -> None:
        await self._upsert(
            workspace_id,
            call_sid,
            expires_at,
            {
                "$set": {
                    "recordingSid": recording_sid,
                    "recordingDurationSeconds": duration_seconds,
                }
            },
        )

    async def keep_pending(
        self,
        workspace_id: str,
        call_sid: str,
        final: dict,
        reason: str,
        received_at: dt.datetime,
        expires_at: dt.datetime,
    ) -> None:
        await self._upsert(workspace_id, call_sid, expires_at, {})
        key = {"_id": _id(workspace_id, call_sid), "workspaceId": workspace_id, "callId": None}
        await self.col.update_one(key, {"$set": {"final": final, "pendingReason": reason}})
        first = {**key, "receivedAt": None}
        await self.col.update_one(first, {"$set": {"receivedAt": received_at}})

    async def settle(
        self, workspace_id: str, call_sid: str, call_id: str, expires_at: dt.datetime
    ) -> None:
        await self._upsert(
            workspace_id,
            call_sid,
            expires_at,
            {
                "$set": {"callId": call_id},
                "$unset": {"final": "", "pendingReason": "", "receivedAt": ""},
            },
        )

    async def pending(self, workspace_id: str, now: dt.datetime, limit: int = 1000) -> list[dict]:
        cursor = (
            self.col.find(
                {
                    "workspaceId": workspace_id,
                    "receivedAt": {"$ne": None},
                    "expiresAt": {"$gt": now},
                }
            )
            .sort([("receivedAt", DESCENDING), ("callSid", DESCENDING)])
            .limit(limit)
        )
        return [pending_record(state) async for doc in cursor if (state := _state(doc))]
