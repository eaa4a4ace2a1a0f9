"""Every index of the service, each prefixed by workspaceId, created idempotently at start-up.

docs/deployment.md's index table documents which query each one serves. The exceptions to the
prefix rule are the indexes read across workspaces: the expiry indexes (`EXPIRY`: Idempotency-
Key records, rate-limit windows, leases, provider call states), single-field on the expiry time,
read by the expiry sweep (store/mongo/expiry.py), and the markers' `events_pending`, read by the
event sweep (whose retention deletes use `_id`: event ids sort as their instants), and the
webhook dispatcher's (`fanout_due`, `endpoint_due`, `finished`: the fan-outs and attempts that
are due, and finished deliveries past retention, in every workspace), and the tombstone sweep's
(`deleted` on prospects and lists, `purge_pending` on prospects). Where the server has TTL
indexes the expiry indexes are TTL indexes (`ttl`), so MongoDB removes expired records by itself
too; a server that refuses TTL indexes (FerretDB 1.24: `expireAfterSeconds` is not implemented)
gets a plain index (`expiry`) on the same field and the sweep alone. Idempotency records and
leases are found by `_id` (workspace and name).
"""

from __future__ import annotations

import logging

from pymongo import ASCENDING as ASC
from pymongo import DESCENDING as DESC
from pymongo import IndexModel
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import OperationFailure

log = logging.getLogger("workspace_api")

PENDING = {"$exists": True}
DELETED_ONLY = {"deletedAt": PENDING}  # tombstones (store/tombstones.py)
INDEXES: dict[str, list[IndexModel]] = {
    "users": [
        IndexModel(
            [("workspaceId", ASC), ("deletedAt", ASC), ("createdAt", ASC), ("_id", ASC)],
            name="ws_active_created",
        ),
    ],
    "api_keys": [
        IndexModel([("workspaceId", ASC), ("createdAt", ASC)], name="ws_created"),
    ],
    "lists": [
        IndexModel([("workspaceId", ASC), ("createdAt", DESC), ("_id", DESC)], name="ws_newest"),
        IndexModel([("workspaceId", ASC), ("updatedAt", ASC), ("_id", ASC)], name="ws_updated_id"),
        # Deleted lists whose members are still to lose them (store/mongo/memberships.py).
        IndexModel([("purgeAt", ASC)], name="purge_at"),
        # Operator scope: the tombstone sweep's (store/mongo/tombstones.py), across workspaces.
        IndexModel([("deletedAt", ASC)], name="deleted", partialFilterExpression=DELETED_ONLY),
    ],
    # Removals of prospects from lists still being carried out (store/mongo/memberships.py),
    # found by the instant their writer's lease lapses.
    "list_removals": [IndexModel([("until", ASC)], name="until")],
    "prospects": [
        IndexModel([("workspaceId", ASC), ("dedupeKey", ASC)], name="ws_dedupe", unique=True),
        IndexModel([("workspaceId", ASC), ("emailNorm", ASC)], name="ws_email"),
        IndexModel([("workspaceId", ASC), ("phoneE164", ASC)], name="ws_phone"),
        IndexModel([("workspaceId", ASC), ("createdAt", DESC), ("_id", DESC)], name="ws_newest"),
        IndexModel(
            [("workspaceId", ASC), ("listIds", ASC), ("createdAt", DESC), ("_id", DESC)],
            name="ws_list_newest",
        ),
        IndexModel(
            [("workspaceId", ASC), ("listIds", ASC), ("updatedAt", ASC), ("_id", ASC)],
            name="ws_list_updated_id",
        ),
        IndexModel([("workspaceId", ASC), ("updatedAt", ASC), ("_id", ASC)], name="ws_updated_id"),
        IndexModel(
            [("workspaceId", ASC), ("doNotCall", ASC), ("createdAt", DESC), ("_id", DESC)],
            name="ws_dnc_newest",
        ),
        # Operator scope: the tombstone sweep's, and its look for deletes that stopped half-way.
        IndexModel([("deletedAt", ASC)], name="deleted", partialFilterExpression=DELETED_ONLY),
        IndexModel(
            [("purge", ASC)], name="purge_pending", partialFilterExpression={"purge": PENDING}
        ),
    ],
    # The suppression list (store/dnc.py): one entry per key ("p:<E.164>", "e:<email>").
    "do_not_call": [
        IndexModel([("workspaceId", ASC), ("key", ASC)], name="ws_key", unique=True),
        IndexModel([("workspaceId", ASC), ("createdAt", DESC), ("_id", DESC)], name="ws_newest"),
    ],
    "calls": [
        IndexModel([("workspaceId", ASC), ("createdAt", DESC), ("_id", DESC)], name="ws_newest"),
        IndexModel(
            [("workspaceId", ASC), ("userId", ASC), ("createdAt", DESC), ("_id", DESC)],
            name="ws_user_newest",
        ),
        IndexModel(
            [("workspaceId", ASC), ("prospectId", ASC), ("createdAt", DESC), ("_id", DESC)],
            name="ws_prospect_newest",
        ),
        IndexModel(
            [("workspaceId", ASC), ("listId", ASC), ("createdAt", DESC), ("_id", DESC)],
            name="ws_list_newest",
        ),
        IndexModel(
            [("workspaceId", ASC), ("disposition", ASC), ("createdAt", DESC), ("_id", DESC)],
            name="ws_disposition_newest",
        ),
        IndexModel(
            [("workspaceId", ASC), ("direction", ASC), ("createdAt", DESC), ("_id", DESC)],
            name="ws_direction_newest",
        ),
        IndexModel([("workspaceId", ASC), ("updatedAt", ASC), ("_id", ASC)], name="ws_updated_id"),
        # The recording retention sweep's (store/mongo/retention.py): recorded calls by end.
        IndexModel(
            [("workspaceId", ASC), ("hasRecording", ASC), ("endedAt", ASC)],
            name="ws_recording_due",
        ),
    ],
    "activities": [
        IndexModel(
            [("workspaceId", ASC), ("prospectId", ASC), ("occurredAt", DESC), ("_id", DESC)],
            name="ws_prospect_timeline",
        ),
        IndexModel([("workspaceId", ASC), ("storedAt", ASC), ("_id", ASC)], name="ws_stored_id"),
    ],
    "rate_limits": [
        IndexModel([("workspaceId", ASC), ("windowStart", ASC)], name="ws_window", unique=True),
    ],
    "events": [
        IndexModel([("workspaceId", ASC), ("occurredAt", ASC), ("_id", ASC)], name="ws_feed"),
        IndexModel(
            [("workspaceId", ASC), ("type", ASC), ("occurredAt", ASC), ("_id", ASC)],
            name="ws_type",
        ),
        # An erasure's: the events of the records it erases.
        IndexModel([("workspaceId", ASC), ("resourceId", ASC)], name="ws_resource"),
    ],
    # Operator scope: the newest feed horizon, the event sweep's floor (store/mongo/events.py).
    "feed_horizons": [IndexModel([("at", DESC)], name="newest")],
    "webhook_endpoints": [
        IndexModel([("workspaceId", ASC), ("createdAt", ASC), ("_id", ASC)], name="ws_created"),
        # Operator scope: the fan-outs that are due, across workspaces.
        IndexModel([("status", ASC), ("fanoutAt", ASC)], name="fanout_due"),
    ],
    "webhook_deliveries": [
        # Operator scope: the endpoints with due attempts, across workspaces (one key each),
        # then each endpoint's due attempts, earliest first.
        IndexModel(
            [("state", ASC), ("endpointId", ASC), ("nextAttemptAt", ASC)], name="endpoint_due"
        ),
        IndexModel([("state", ASC), ("updatedAt", ASC)], name="finished"),
        IndexModel(
            [("workspaceId", ASC), ("endpointId", ASC), ("state", ASC), ("leaseUntil", ASC)],
            name="ws_endpoint_state",
        ),
    ],
    "erasures": [
        IndexModel([("workspaceId", ASC), ("requestedAt", DESC), ("_id", DESC)], name="ws_newest"),
        # Operator scope: the open requests that are due, across workspaces.
        IndexModel([("status", ASC), ("nextAttemptAt", ASC)], name="open_due"),
    ],
    "provider_calls": [
        # The callbacks kept aside, newest first.
        IndexModel(
            [("workspaceId", ASC), ("receivedAt", DESC), ("callSid", DESC)], name="ws_pending"
        ),
    ],
    "webhook_attempts": [
        IndexModel(
            [("workspaceId", ASC), ("endpointId", ASC), ("at", DESC), ("_id", DESC)],
            name="ws_endpoint_newest",
        ),
    ],
}

# The markers of changes whose events are being written (store/mongo/events.py), in every
# collection whose documents carry them: partial indexes, holding only the few documents with a
# marker. `ws_events_pending` serves the feed's look at a workspace's markers, `events_pending`
# the sweeper's across workspaces. A server that refuses partial indexes (FerretDB 1.24) gets
# the same fields without the filter.
INDEXES["tombstones"] = []  # markers of removed records (store/mongo/events.py)
for _collection in (
    "calls",
    "prospects",
    "lists",
    "activities",
    "users",
    "do_not_call",
    "tombstones",
):
    INDEXES[_collection] += [
        IndexModel(
            [("workspaceId", ASC), ("_evt.t", ASC)],
            name="ws_events_pending",
            partialFilterExpression={"_evt.t": PENDING},
        ),
        IndexModel(
            [("_evt.t", ASC)], name="events_pending", partialFilterExpression={"_evt.t": PENDING}
        ),
    ]
# The server's answers to a partial index that mean "no partial indexes here": NotImplemented,
# CommandNotSupported, InvalidIndexSpecificationOption.
PARTIAL_REFUSED = frozenset({238, 115, 197})

# The collections whose records expire, and the field that holds each record's expiry time.
EXPIRY = {
    "idempotency": "expiresAt",
    "rate_limits": "expireAt",
    "leases": "expiresAt",
    "provider_calls": "expiresAt",
}
# The server's answers to a TTL index that mean "no TTL indexes here" (not a conflict with an
# existing index, which an operator has to look at): NotImplemented, CommandNotSupported,
# InvalidIndexSpecificationOption.
TTL_REFUSED = frozenset({238, 115, 197})
_told_ttl_refused = False  # the log says so once per process


def without_filter(model: IndexModel) -> IndexModel:
    """The same index without its partialFilterExpression."""
    document = dict(model.document)
    keys, name = document.pop("key"), document.pop("name")
    document.pop("partialFilterExpression")
    return IndexModel(list(keys.items()), name=name, **document)


def ttl_index(field: str) -> IndexModel:
    return IndexModel([(field, ASC)], name="ttl", expireAfterSeconds=0)


def expiry_index(field: str) -> IndexModel:
    return IndexModel([(field, ASC)], name="expiry")


async def ensure_indexes(db: AsyncDatabase) -> bool:
    """Create every index (idempotent); whether the server keeps TTL indexes."""
    global _told_ttl_refused
    for collection, models in INDEXES.items():
        # One index per command: FerretDB 1.24 drops the connection (a server panic) when one
        # createIndexes names several indexes of which more than one exists already.
        for model in models:
            try:
                await db[collection].create_indexes([model])
            except OperationFailure as exc:
                if (
                    exc.code not in PARTIAL_REFUSED
                    or "partialFilterExpression" not in model.document
                ):
                    raise
                await db[collection].create_indexes([without_filter(model)])
    ttl = True
    for collection, field in EXPIRY.items():
        try:
            await db[collection].create_indexes([ttl_index(field)])
        except OperationFailure as exc:
            if exc.code not in TTL_REFUSED:
                raise
            ttl = False
            await db[collection].create_indexes([expiry_index(field)])
    if not ttl and not _told_ttl_refused:
        _told_ttl_refused = True
        log.info(
            "the MongoDB server does not keep TTL indexes: expired Idempotency-Key records, "
            "rate-limit windows and leases are removed by the periodic expiry sweep only"
        )
    return ttl
