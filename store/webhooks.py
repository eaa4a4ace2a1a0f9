"""Webhook endpoints and deliveries, backend-neutral: the endpoint's API record, which of its
secrets sign at a given instant, the deterministic id of a delivery, and what the dispatcher
(webhooks/dispatcher.py) claims from the store.

An endpoint keeps its place in the events feed (`position`: occurredAt and id of the last event
it has deliveries for; at creation, the creation instant), so that its fan-out reads the settled
feed after it, inserts one delivery per event and then moves the position: a fan-out that dies
in between inserts the same deliveries again, which their ids (one per endpoint, event and
generation) make a no-op. `recover` starts a new generation from a `since` up to the position.

A delivery is `pending` (due at `nextAttemptAt`; while an attempt is in flight it is held under
a lease, so an attempt whose process died is due again when its lease ends, with that attempt
counted: on MongoDB the lease is in the delivery, whose `nextAttemptAt` it sets to its end; on
SQLite it is a row of its own, store/sqlite/webhook_deliveries.py), `delivered`, or `failed`
(out of retries, or its endpoint disabled). Each attempt is a row of its own (the deliveries
listing, newest first).

At most `per_endpoint` attempts are in flight per endpoint across every process: a claim counts
the endpoint's live leases. A process may also claim `ahead` more of an endpoint's deliveries
than it sends at once (it starts them as its own attempts end, without a claim between), but
only while no other process holds a lease of that endpoint (`allowance`): whenever the leases
add up to more than `per_endpoint`, one process holds all of them and sends `per_endpoint` at a
time, and any other process sees them all as in flight.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid

from store.clock import name_id, new_id
from store.idempotency import IdempotentWrite
from store.paging import Position

ENABLED, DISABLED = "enabled", "disabled"
PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
RESOURCE = "webhook-deliveries"  # the deliveries listing's cursors
SORT = "-createdAt"  # the listing's order: newest first, ties by id descending
DELIVERY_IDS = uuid.UUID("6b1d7c8e-3f52-4a8e-9d0e-5a4c1b2e7f90")
# Reasons shown in an endpoint's `disabledReason` and in the attempt that disabled it.
GONE = "the receiver answered 410 Gone"
BY_REQUEST = "disabled through the API"


def delivery_id(endpoint_id: str, event_id: str, generation: int) -> str:
    """The one id of an event's delivery to an endpoint in a generation (idempotent inserts)."""
    return name_id(DELIVERY_IDS, f"{endpoint_id}/{event_id}/{generation}")


def current_secret(secrets: list[dict]) -> str:
    return next(entry["secret"] for entry in secrets if entry.get("expiresAt") is None)


def endpoint_document(
    workspace_id: str,
    url: str,
    event_types: list[str] | None,
    description: str | None,
    secret: str,
    now: dt.datetime,
    once: IdempotentWrite | None = None,
) -> dict:
    """The stored form of a new endpoint, as both backends keep it: enabled, its one secret,
    its feed position at its creation (it gets the events after it); its id derived from the
    request's Idempotency-Key (a retry finds the endpoint an earlier attempt inserted), else
    new. Each backend adds its own bookkeeping fields."""
    return {
        "_id": once.record_id("webhook-endpoint") if once else new_id(),
        "workspaceId": workspace_id,
        "url": url,
        "eventTypes": event_types,
        "description": description,
        "status": ENABLED,
        "createdAt": now,
        "updatedAt": now,
        "secrets": [{"secret": secret, "expiresAt": None}],
        "positionAt": now,
        "positionId": "",
        "generation": 0,
        "fanoutAt": now,
    }


def endpoint_record(doc: dict) -> dict:
    """An endpoint's API form: never its secrets, its feed position or its leases."""
    return {
        "id": doc["_id"],
        "url": doc["url"],
        "eventTypes": doc.get("eventTypes"),
        "description": doc.get("description"),
        "status": doc["status"],
        "disabledReason": doc.get("disabledReason"),
        "disabledAt": doc.get("disabledAt"),
        "createdAt": doc["createdAt"],
        "updatedAt": doc["updatedAt"],
    }


def endpoint_changes(
    current: str, changes: dict, now: dt.datetime
) -> tuple[dict[str, object], bool]:
    """What an update of an endpoint in status `current` with `changes` (the API's names)
    stores, and whether it disables the endpoint (which the backend does, failing its pending
    deliveries). Re-enabling resumes from `now`: the events in between only through
    `recover`."""
    sets: dict[str, object] = {"updatedAt": now}
    for name in ("url", "description", "eventTypes"):
        if name in changes:
            sets[name] = changes[name]
    status = changes.get("status")
    if status == ENABLED and current == DISABLED:
        sets.update(
            status=ENABLED,
            disabledReason=None,
            disabledAt=None,
            failingSince=None,
            positionAt=now,
            positionId="",
        )
    return sets, status == DISABLED and current == ENABLED


def attempt_page(docs: list[dict], page_size: int) -> AttemptPage:
    """A page of attempts from at most `page_size` + 1 stored attempts, newest first."""
    shown = docs[:page_size]
    last = Position(shown[-1]["at"], shown[-1]["_id"]) if shown else None
    return AttemptPage([attempt_record(doc) for doc in shown], len(docs) > page_size, last)


def attempt_record(doc: dict) -> dict:
    return {
        "eventId": doc["eventId"],
        "eventType": doc["eventType"],
        "attempt": doc["attempt"],
        "at": doc["at"],
        "statusCode": doc.get("statusCode"),
        "durationMs": doc["durationMs"],
        "error": doc.get("error"),
        "nextAttemptAt": doc.get("nextAttemptAt"),
    }


def secrets_at(secrets: list[dict], now: dt.datetime) -> list[str]:
    """The secrets that sign at `now`: the current one, and a rotated-out one until it expires
    (newest first)."""
    return [
        entry["secret"]
        for entry in secrets
        if entry.get("expiresAt") is None or entry["expiresAt"] > now
    ]


def rotated(secrets: list[dict], new: str, now: dt.datetime, overlap: dt.timedelta) -> list[dict]:
    """The secrets after a rotation: the new one, and the one it replaces until `now + overlap`
    (an older one still in its overlap is dropped)."""
    current = [entry for entry in secrets if entry.get("expiresAt") is None][:1]
    if current and current[0]["secret"] == new:  # a retry of this rotation: done already
        return secrets
    return [{"secret": new, "expiresAt": None}] + [
        {"secret": entry["secret"], "expiresAt": now + overlap} for entry in current
    ]


def lease_token(owner: str | None, claim_id: str) -> str:
    """The token of a claim's leases: its owner's (a process's dispatcher) and the claim's."""
    return f"{owner}.{claim_id}" if owner else claim_id


def allowance(per_endpoint: int, ahead: int, own: int, others: int) -> tuple[int, int]:
    """How many more deliveries of one endpoint a claim takes (first, then once every due
    endpoint had its first): its owner holds `own` live leases of the endpoint, the other
    processes `others`."""
    first = max(0, per_endpoint - others - own)
    if others or not ahead:
        return first, 0
    return first, max(0, per_endpoint + ahead - own - first)


@dataclasses.dataclass(frozen=True)
class FanoutClaim:
    """An endpoint whose fan-out this process holds until `until` (`token` proves it)."""

    workspace_id: str
    endpoint_id: str
    event_types: list[str] | None
    position: Position
    recover_from: Position | None
    generation: int
    token: str
    until: dt.datetime


@dataclasses.dataclass(frozen=True)
class Claim:
    """A delivery attempt this process holds until `until`: what to send, where, signed how."""

    delivery_id: str
    workspace_id: str
    endpoint_id: str
    event_id: str
    event_type: str
    event: str  # the event's API form, as GET /v1/events serves it (the body, byte for byte)
    attempt: int  # the number of this attempt (1 for the first)
    url: str
    secrets: list[str]
    failing_since: dt.datetime | None  # the endpoint's first failure since its last success
    token: str
    until: dt.datetime
    slot: str | None = None  # the endpoint's in-flight slot (MongoDB), freed when it ends


@dataclasses.dataclass(frozen=True)
class Attempt:
    """What one attempt did, as the deliveries listing shows it, and what follows from it."""

    at: dt.datetime
    status_code: int | None
    duration_ms: int
    error: str | None
    next_attempt_at: dt.datetime | None  # None: the delivery is done (delivered or failed)
    delivered: bool


@dataclasses.dataclass
class AttemptPage:
    """A page of an endpoint's attempts, newest first; `last` is where the next one starts."""

    attempts: list[dict]
    has_more: bool
    last: Position | None
