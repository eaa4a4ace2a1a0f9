"""Tombstones of deleted prospects and lists, backend-neutral: what a delete leaves in the
record's place until the retention sweep removes it, and the form sync walks return it in.

A deleted prospect or list keeps its row (document) with `deletedAt` set and `updatedAt` moved
to the same instant. A prospect's tombstone holds no personal data: every contact field,
derived identifier and the owner are cleared, `listIds` is empty and its memberships are gone,
and its `dedupeKey` becomes one that no contact can produce (`dedupe_key`), so a later upload of
the same person creates a new prospect. A list's tombstone keeps its fields (the name is not
personal data). Every ordinary read (pages, counts, GET by id, exports, matching, the
references of recorded calls and activities) skips rows with `deletedAt`; only the sync walks
with `includeDeleted=true` show them, as `record` makes them. The workspace's `prospects` and
`lists` counters (SQLite) count live records only: a delete takes one off.
"""

from __future__ import annotations

from collections.abc import Callable

from store.identity import CONTACT_FIELDS

# What a prospect's delete clears (SQLite: set NULL; MongoDB: $unset).
PROSPECT_CLEARED = (*CONTACT_FIELDS, "emailNorm", "phoneE164", "linkedinNorm", "ownerUserId")
DEDUPE_PREFIX = "deleted:"  # no contact's dedupe key starts so (store.prospects.dedupe_key)


def dedupe_key(record_id: str) -> str:
    """The dedupe key of a deleted prospect: unique, and never one an upload matches."""
    return DEDUPE_PREFIX + record_id


def record(doc: dict) -> dict:
    """The API form of a tombstone in a sync walk: `{"id", "deletedAt", "updatedAt"}`."""
    return {"id": doc["_id"], "deletedAt": doc["deletedAt"], "updatedAt": doc["updatedAt"]}


def either_record(live: Callable[[dict], dict]) -> Callable[[dict], dict]:
    """A stored record's API form (`live`), or its tombstone's once it is deleted."""
    return lambda doc: record(doc) if doc.get("deletedAt") else live(doc)
