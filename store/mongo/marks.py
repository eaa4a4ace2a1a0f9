"""The markers of MongoDB's change events (store/mongo/events.py): which collections carry them,
a write's marker (`Pending`), and the event documents made from marked records and from removed
ones, by the writers and by the event sweep."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterator

from pymongo.asynchronous.collection import AsyncCollection

from store.activities import FIELDS as ACTIVITY_FIELDS
from store.activities import event_record as activity_record
from store.calls import CALL_FIELDS
from store.calls import record as call_record
from store.dnc import FIELDS as DNC_FIELDS
from store.dnc import record as dnc_record
from store.events import Removed, encode, event_type
from store.prospects import RECORD_FIELDS as PROSPECT_FIELDS
from store.prospects import record as prospect_record
from store.records import LIST_FIELDS, USER_FIELDS, admin_user_record, list_record

MARK = "_evt"
# The tokens of the markers an event was recorded for (`Pending.token`), kept in the event: the
# sweep records no event a writer (or an earlier sweep) recorded before it stopped short of
# pulling its markers.
TOKENS = "tok"
# The collections whose documents carry markers: collection -> (resource, fields, record).
MARKED: dict[str, tuple[str, dict, Callable[[dict], dict]]] = {
    "calls": ("call", CALL_FIELDS, call_record),
    "prospects": ("prospect", PROSPECT_FIELDS, prospect_record),
    "lists": ("list", LIST_FIELDS, list_record),
    "activities": ("activity", {**ACTIVITY_FIELDS, "prospectId": 1}, activity_record),
    "users": ("user", USER_FIELDS, admin_user_record),
    "do_not_call": ("do_not_call", DNC_FIELDS, dnc_record),
}
RECORDS = {resource: record for resource, _, record in MARKED.values()}
COLLECTIONS = {resource: name for name, (resource, _, _) in MARKED.items()}
# Where a write that removes records keeps their markers (the records go, and theirs with
# them): one tombstone per removed record, {_id: "<resource>/<id>", workspaceId, resource,
# recordId, deletedAt, _evt}, written before the delete (`EventWriter.bury`).
TOMBSTONES = "tombstones"
# Ids per `$in` of a read or an update: a few round trips for a bulk batch of thousands, and
# no query that a server scanning for each id (FerretDB) takes seconds over.
CHUNK = 100


def chunks(ids: list[str]) -> list[list[str]]:
    return [ids[start : start + CHUNK] for start in range(0, len(ids), CHUNK)]


@dataclasses.dataclass(frozen=True)
class Pending:
    """One write's marker (the module's docstring). With `enabled` false (a bulk load, the
    benchmark's comparison) it marks nothing and publishes nothing."""

    token: str
    at: dt.datetime
    enabled: bool = True

    def entry(self, created: bool) -> dict:
        return {"t": self.at, "k": self.token, "c": created}

    @property
    def entries(self) -> list[dict]:
        return [self.entry(True), self.entry(False)]

    def new(self, doc: dict) -> dict:
        """A document this write inserts (or upserts), marked."""
        return {**doc, MARK: [self.entry(True)]} if self.enabled else doc

    def update(self, update: dict) -> dict:
        """An update of an existing document, marked in the same single-document write."""
        if not self.enabled:
            return update
        return {**update, "$push": {**update.get("$push", {}), MARK: self.entry(False)}}


def event_doc(
    workspace_id: str,
    resource: str,
    created: bool,
    doc: dict,
    stamp: tuple[str, dt.datetime],
    tokens: list[str],
) -> dict:
    event_id, at = stamp
    return {
        "_id": event_id,
        "workspaceId": workspace_id,
        "type": event_type(resource, created),
        "resourceId": doc["_id"],
        "occurredAt": at,
        "data": encode(RECORDS[resource](doc)),
        TOKENS: tokens,
    }


def tombstone_id(gone: Removed) -> str:
    return f"{gone.resource}/{gone.id}"


def removed_event(
    workspace_id: str, gone: Removed, stamp: tuple[str, dt.datetime], tokens: list[str]
) -> dict:
    event_id, at = stamp
    return {
        "_id": event_id,
        "workspaceId": workspace_id,
        "type": gone.type,
        "resourceId": gone.id,
        "occurredAt": at,
        "data": encode(gone.data),
        TOKENS: tokens,
    }


def older_marks(doc: dict, older_than: dt.datetime) -> list[dict]:
    """A marked document's markers older than `older_than` (the sweep's)."""
    return [entry for entry in doc.get(MARK) or [] if entry["t"] < older_than]


def tokens_of(entries: list[dict]) -> list[str]:
    """The writes' tokens of markers, each once."""
    return list(dict.fromkeys(entry["k"] for entry in entries))


def recovered_events(
    workspace_id: str,
    resource: str,
    created: bool,
    doc: dict,
    stamps: Iterator[tuple[str, dt.datetime]],
    tokens: list[str],
) -> list[dict]:
    """The events the sweep records for a record whose writer stopped, from the record as it
    is now: its event, unless it has been deleted since (its `deletedAt` set). Then its
    deletion's `<resource>.deleted` (recorded by the deletion, or by the sweep from its
    tombstone) already carries what it is now: an event of the cut-short change recorded now,
    after it, would show the record alive again; so there is none, and where the cut-short
    write created the record, its `*.created` is followed by the deletion's event again."""
    deleted_at = doc.get("deletedAt")
    if deleted_at is None:
        return [event_doc(workspace_id, resource, created, doc, next(stamps), tokens)]
    if not created:
        return []
    gone = Removed(resource, doc["_id"], deleted_at)
    return [
        event_doc(workspace_id, resource, True, doc, next(stamps), tokens),
        removed_event(workspace_id, gone, next(stamps), tokens),
    ]


async def recorded_events(
    events: AsyncCollection, records: list[tuple[str, str, list[str]]]
) -> dict[tuple[str, str], dict[str, set[str]]]:
    """The events already recorded of `records` ((workspaceId, record id, the tokens of its
    markers)) for those markers: (workspaceId, id) -> token -> event types. One read per
    workspace, on its events of those records (the `ws_resource` index)."""
    wanted: dict[str, tuple[dict[str, None], dict[str, None]]] = {}
    for workspace_id, record_id, tokens in records:
        ids, all_tokens = wanted.setdefault(workspace_id, ({}, {}))
        ids[record_id] = None
        all_tokens.update(dict.fromkeys(tokens))
    found: dict[tuple[str, str], dict[str, set[str]]] = {}
    for workspace_id, (ids, marks) in wanted.items():
        query = {
            "workspaceId": workspace_id,
            "resourceId": {"$in": list(ids)},
            TOKENS: {"$in": list(marks)},
        }
        cursor = events.find(query, {"resourceId": 1, "type": 1, TOKENS: 1})
        async for event in cursor:
            kinds = found.setdefault((workspace_id, event["resourceId"]), {})
            for token in event[TOKENS]:
                kinds.setdefault(token, set()).add(event["type"])
    return found
