"""The stored and API forms of the small resources (workspaces, users, lists), built once for
both backends; API keys (store/keys.py), webhook endpoints (store/webhooks.py), calls,
prospects and activities keep theirs beside their other rules."""

from __future__ import annotations

import datetime as dt

from store.clock import new_id, utcnow
from store.idempotency import IdempotentWrite


def workspace_document(
    name: str, workspace_id: str | None = None, created_at: dt.datetime | None = None
) -> dict:
    """The stored form of a new workspace."""
    return {"_id": workspace_id or new_id(), "name": name, "createdAt": created_at or utcnow()}


def user_document(
    workspace_id: str,
    email: str,
    first_name: str,
    last_name: str,
    created_at: dt.datetime | None = None,
    user_id: str | None = None,
) -> dict:
    """The stored form of a new user (not deleted)."""
    now = created_at or utcnow()
    return {
        "_id": user_id or new_id(),
        "workspaceId": workspace_id,
        "email": email,
        "firstName": first_name,
        "lastName": last_name,
        "createdAt": now,
        "updatedAt": now,
        "deletedAt": None,
    }


def list_document(
    workspace_id: str,
    name: str,
    owner_user_id: str,
    source: str = "CSV",
    created_at: dt.datetime | None = None,
    list_id: str | None = None,
    once: IdempotentWrite | None = None,
) -> dict:
    """The stored form of a new, empty list: its id given, else derived from the request's
    Idempotency-Key (a retry finds the list an earlier attempt inserted), else new."""
    now = created_at or utcnow()
    return {
        "_id": list_id or (once.record_id("list") if once else new_id()),
        "workspaceId": workspace_id,
        "name": name,
        "source": source,
        "ownerUserId": owner_user_id,
        "createdAt": now,
        "updatedAt": now,
        "prospectsCount": 0,
    }


def workspace_record(doc: dict) -> dict:
    """A workspace as the admin commands show it; `settings` holds what overrides the
    configuration for this workspace alone (store/retention.py), {} for nothing."""
    record = {
        "id": doc["_id"],
        "name": doc["name"],
        "createdAt": doc["createdAt"],
        "settings": doc.get("settings") or {},
    }
    if doc.get("deletingAt") is not None:  # being deleted (store/workspace_deletion.py)
        record["deletingAt"] = doc["deletingAt"]
    return record


def user_record(doc: dict) -> dict:
    return {
        "id": doc["_id"],
        "email": doc["email"],
        "firstName": doc["firstName"],
        "lastName": doc["lastName"],
        "createdAt": doc["createdAt"],
        # A user stored before users had updatedAt was last changed when it was created.
        "updatedAt": doc.get("updatedAt") or doc["createdAt"],
    }


USER_FIELDS = dict.fromkeys(
    ("_id", "email", "firstName", "lastName", "createdAt", "updatedAt", "deletedAt"), 1
)  # a user's stored fields that admin_user_record shows (a projection)


def admin_user_record(doc: dict) -> dict:
    """A user as GET /users/{id}, its writes, its events and the admin commands show it: the
    record of GET /users and when it was deleted (null while it is not)."""
    return {**user_record(doc), "deletedAt": doc.get("deletedAt")}


LIST_FIELDS = dict.fromkeys(
    ("_id", "name", "source", "ownerUserId", "createdAt", "updatedAt", "prospectsCount"), 1
)  # a list's stored fields that its record shows (a projection)


def list_record(doc: dict) -> dict:
    return {
        "id": doc["_id"],
        "name": doc["name"],
        "source": doc["source"],
        "ownerUserId": doc["ownerUserId"],
        "createdAt": doc["createdAt"],
        "updatedAt": doc["updatedAt"],
        "prospectsCount": doc["prospectsCount"],
    }
