"""Users' backend-neutral rules: what a valid email is, how emails are compared (trimmed,
case-insensitive, as contact matching compares them), which of a user's fields a change may
set and what it actually changes, and the conflict a taken email is (UserExists)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from store.identity import normalize_email

# A user's fields a change may set (PATCH /users/{id}); every one a non-blank string.
FIELDS = ("email", "firstName", "lastName")
# One "@" with something on each side, a dot in the domain, no whitespace (str.isspace, which
# is what \s means to Python): the rule of schemas/requests/user-create.json's pattern (spelled
# there with the characters of schemas.NON_BLANK), for the admin command line too.
EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


class UserExists(Exception):
    """Another non-deleted user of the workspace holds the email (409 user_exists)."""


class InvalidEmail(ValueError):
    """An email that is not an email address (400)."""


def checked_email(email: str) -> str:
    """The email as stored (trimmed); InvalidEmail when it is not an email address."""
    email = email.strip()
    if len(email) > 320 or not EMAIL.fullmatch(email):
        raise InvalidEmail("is not an email address")
    return email


def email_taken(email: str, held: Iterable[tuple[str, str]], except_id: str | None = None) -> bool:
    """Whether `email` is one of `held`'s (user id, email) pairs of the workspace's non-deleted
    users, other than `except_id`'s, compared as contact matching compares emails."""
    wanted = normalize_email(email)
    return any(normalize_email(other) == wanted for uid, other in held if uid != except_id)


def check_seeded(workspace_id: str, documents: list[dict]) -> None:
    """Seeded users (Users.insert_documents) are the workspace's and active: a seeded user
    records `user.created` only, so a deleted one would leave the feed without its delete."""
    if any(doc["workspaceId"] != workspace_id for doc in documents):
        raise ValueError("every document must belong to the given workspace")
    if any(doc["deletedAt"] is not None for doc in documents):
        raise ValueError("seeded users are active: delete one with Users.delete")


def changes_of(doc: dict, fields: dict) -> dict:
    """What setting `fields` changes in the stored user `doc` (trimmed values; empty when
    nothing would change)."""
    wanted = {name: fields[name].strip() for name in FIELDS if name in fields}
    return {name: value for name, value in wanted.items() if doc.get(name) != value}
