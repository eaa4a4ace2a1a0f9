"""API keys' backend-neutral rules: the scopes a key may hold, what a record written before keys
had scopes and expiry means (`read,write`, never expiring), the key's API form, and what
authentication learns about a key (ActiveKey).

A key's record holds its id and metadata; the plain key (a signed JWT) is never stored.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

# `read`: every GET/HEAD; `write`: the integrator's writes (lists, contact uploads, webhook
# endpoints); `ingest`: the dialer's writes (calls, activities); `admin`: the workspace's
# users (POST/PATCH/DELETE /users). The order is the one shown.
SCOPES = ("read", "write", "ingest", "admin")
# What every key could do before keys had scopes, and what a key gets when none is asked for.
DEFAULT_SCOPES = frozenset({"read", "write"})


@dataclasses.dataclass(frozen=True, slots=True)
class ActiveKey:
    """An unrevoked key as authentication knows it (handlers see it as `self.key`)."""

    id: str
    workspace_id: str
    scopes: frozenset[str]
    expires_at: dt.datetime | None  # naive UTC; None: never expires

    def expired(self, now: dt.datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at


class KeyExpired(Exception):
    """Authentication (server.auth) of a genuine, unrevoked key past its expiresAt."""


def ordered(scopes: frozenset[str] | set[str]) -> list[str]:
    """Scopes in their shown order: read, write, ingest, admin."""
    return [scope for scope in SCOPES if scope in scopes]


def scopes_of(doc: dict) -> frozenset[str]:
    """A record's scopes; a record written before keys had scopes (MongoDB: no field, SQLite:
    NULL) has DEFAULT_SCOPES."""
    stored = doc.get("scopes")
    return DEFAULT_SCOPES if stored is None else frozenset(stored)


def active_key(doc: dict) -> ActiveKey:
    return ActiveKey(doc["_id"], doc["workspaceId"], scopes_of(doc), doc.get("expiresAt"))


def key_record(doc: dict) -> dict:
    """A key's metadata as the admin commands show it."""
    return {
        "id": doc["_id"],
        "workspaceId": doc["workspaceId"],
        "name": doc["name"],
        "scopes": ordered(scopes_of(doc)),
        "createdAt": doc["createdAt"],
        "expiresAt": doc.get("expiresAt"),
        "revokedAt": doc.get("revokedAt"),
        "lastUsedAt": doc.get("lastUsedAt"),
    }


def key_document(
    workspace_id: str,
    key_id: str,
    name: str,
    scopes: frozenset[str],
    created_at: dt.datetime,
    expires_at: dt.datetime | None,
) -> dict:
    """A new key's stored document (lastUsedAt is absent until the key is first used)."""
    unknown = scopes - set(SCOPES)
    if unknown or not scopes:
        raise ValueError(f"a key needs one or more of {', '.join(SCOPES)}: {sorted(unknown)}")
    return {
        "_id": key_id,
        "workspaceId": workspace_id,
        "name": name,
        "scopes": ordered(scopes),
        "createdAt": created_at,
        "expiresAt": expires_at,
        "revokedAt": None,
    }
