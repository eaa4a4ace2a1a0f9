"""The request path of the accounts families: workspaces, users, API keys (store.contract)."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from store.idempotency import IdempotentWrite
from store.keys import ActiveKey


class Workspaces(Protocol):
    """The tenants; created by operators (admin CLI, demo)."""

    async def get(self, workspace_id: str) -> dict | None: ...


class Users(Protocol):
    """The people who dial; a deleted user keeps its record with deletedAt set."""

    async def list_active(self, workspace_id: str) -> list[dict]: ...

    async def is_active(self, workspace_id: str, user_id: str) -> bool: ...

    async def get(self, workspace_id: str, user_id: str) -> dict | None:
        """A user's record with its `deletedAt` (store.records.admin_user_record), deleted or
        not; None when the workspace has no such user."""
        ...

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
        """Insert a user (the email as store.users.checked_email leaves it) and record
        `user.created`; its record with `deletedAt`. Raises store.users.UserExists when a
        non-deleted user of the workspace holds the email (compared case-insensitively).
        Idempotent on `once` (an Idempotency-Key)."""
        ...

    async def update(
        self, workspace_id: str, user_id: str, fields: dict
    ) -> tuple[dict, bool] | None:
        """Set some of store.users.FIELDS of a non-deleted user: its record and whether
        anything changed (then updatedAt moves and `user.updated` is recorded); None when the
        workspace has no such non-deleted user. Raises store.users.UserExists when another
        non-deleted user holds the new email."""
        ...

    async def delete(self, workspace_id: str, user_id: str) -> bool:
        """Mark the user deleted (deletedAt, and updatedAt with it) and record `user.deleted`
        with `{"id", "deletedAt"}`; False when there was no non-deleted user to delete."""
        ...


class Keys(Protocol):
    """API key records: id and metadata (name, scopes, expiry, last use); the plain key (a
    signed JWT) is never stored. Records written before keys had scopes and expiry are
    `read,write` and never expire (store/keys.py)."""

    async def find_active(self, workspace_id: str, key_id: str) -> ActiveKey | None:
        """The hot-path lookup behind authentication (cached by server.auth): the key's scopes
        and expiry, or None when there is no such unrevoked key in the workspace. An expired
        key is returned (authentication tells it apart from an unknown one)."""
        ...

    async def get(self, workspace_id: str, key_id: str) -> dict | None:
        """A key's record, revoked or not, or None."""
        ...

    async def touch(self, workspace_id: str, key_id: str, at: dt.datetime) -> None:
        """Record that the key was used at `at`: lastUsedAt moves forward only (server.keyuse
        calls it at most once per key per minute per process)."""
        ...
