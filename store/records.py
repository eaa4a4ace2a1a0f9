"""The API forms of the small resources (workspaces, users, lists), shared by both backends;
API keys (store/keys.py), calls, prospects and activities keep theirs beside their other rules."""

from __future__ import annotations


def workspace_record(doc: dict) -> dict:
    return {"id": doc["_id"], "name": doc["name"], "createdAt": doc["createdAt"]}


def user_record(doc: dict) -> dict:
    return {
        "id": doc["_id"],
        "email": doc["email"],
        "firstName": doc["firstName"],
        "lastName": doc["lastName"],
        "createdAt": doc["createdAt"],
    }


def admin_user_record(doc: dict) -> dict:
    """A user as the admin commands show it: the API's record and when it was deleted."""
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
