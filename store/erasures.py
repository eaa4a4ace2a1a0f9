"""Erasure requests (POST /v1/erasures), backend-neutral: the statuses, the stored form of a
request and its API record, the keyed hashes that are all a request keeps of the identifiers it
was given, and the lease its worker holds (server/erasure_work.py does the work).

A request keeps `hashes` (HMAC-SHA256 of each normalised identifier under a key derived from the
service's secret: `identifier_hashes`), never the values, and `prospectIds`: the prospects the
identifiers matched when it was made, which the worker erases. Its `recordings` are the
provider references still to delete; `callIds` the calls it rewrote (erasure.completed).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import json
import secrets

from store.clock import new_id
from store.events import Removed
from store.idempotency import IdempotentWrite, holder_alive, this_process

PENDING, RUNNING, COMPLETED, FAILED = "pending", "running", "completed", "failed"
STATUSES = (PENDING, RUNNING, COMPLETED, FAILED)
OPEN = (PENDING, RUNNING)  # statuses the worker still has work in
COUNTS = ("prospects", "activities", "calls", "recordings", "events")
RESOURCE = "erasures"  # the cursors' resource name
# A worker's claim lapses this long after its last step (each step renews it); one whose
# process is gone from this host is taken over at once (`takeable`).
LEASE = dt.timedelta(seconds=60)
CANDIDATES = 20  # open requests a claim looks at
# The waits between attempts at deleting a recording at the provider, then the last one again.
BACKOFF = (1.0, 2.0, 5.0, 15.0, 60.0, 300.0)


def identifier_hashes(
    key: bytes, *, email: str | None, phone: str | None, prospect_id: str | None
) -> dict[str, str]:
    """The keyed hashes of the given normalised identifiers: {"email", "phoneNumber",
    "prospectId"} (those given), each HMAC-SHA256 hex under `key`."""
    given = {"email": email, "phoneNumber": phone, "prospectId": prospect_id}
    return {
        name: hmac.new(key, value.encode(), hashlib.sha256).hexdigest()
        for name, value in given.items()
        if value is not None
    }


def erasure_document(
    workspace_id: str,
    hashes: dict[str, str],
    prospect_ids: list[str],
    now: dt.datetime,
    once: IdempotentWrite | None = None,
) -> dict:
    """The stored form of a new request, as both backends keep it (each adds its own
    bookkeeping); its id derived from the request's Idempotency-Key, else new."""
    return {
        "_id": once.record_id("erasure") if once else new_id(),
        "workspaceId": workspace_id,
        "status": PENDING,
        "requestedAt": now,
        "completedAt": None,
        "reason": None,
        "counts": dict.fromkeys(COUNTS, 0),
        "hashes": hashes,
        "prospectIds": prospect_ids,
        "done": [],
        "callIds": [],
        "recordings": [],
        "attempts": 0,
        "nextAttemptAt": now,
        "leaseToken": None,
        "leaseUntil": None,
    }


def record(doc: dict) -> dict:
    """A request's API record: never the identifiers (nor their hashes)."""
    return {
        "id": doc["_id"],
        "status": doc["status"],
        "requestedAt": doc["requestedAt"],
        "completedAt": doc.get("completedAt"),
        "reason": doc.get("reason"),
        "counts": {name: int(doc["counts"].get(name, 0)) for name in COUNTS},
    }


def backoff(attempts: int) -> dt.timedelta:
    """The wait after `attempts` failed rounds of recording deletions."""
    return dt.timedelta(seconds=BACKOFF[min(attempts, len(BACKOFF)) - 1] if attempts else 0)


@dataclasses.dataclass
class ErasureClaim:
    """An open request a worker holds the lease of (`token`) until `until`."""

    workspace_id: str
    id: str
    token: str
    until: dt.datetime
    prospect_ids: list[str]  # those still to erase
    recordings: list[str]
    attempts: int


def takeable(doc: dict, now: dt.datetime) -> bool:
    """Whether a worker may take an open request's lease: none held, the holder's lapsed, or
    its holder a process of this host that is gone (a SIGKILL: taken over at once)."""
    token, until = doc.get("leaseToken"), doc.get("leaseUntil")
    return token is None or until is None or until <= now or not holder_alive(token)


def lease_token() -> str:
    """A worker's lease token: this process (store.idempotency.this_process) and a nonce."""
    return f"{this_process()}|{secrets.token_hex(6)}"


def claim_of(doc: dict, token: str, until: dt.datetime) -> ErasureClaim:
    done = set(doc["done"])
    return ErasureClaim(
        doc["workspaceId"],
        doc["_id"],
        token,
        until,
        [p for p in doc["prospectIds"] if p not in done],
        list(doc["recordings"]),
        doc["attempts"],
    )


def erased(record_id: str) -> dict:
    """The data an event about a prospect or an activity of an erased person carries."""
    return {"id": record_id, "erased": True}


def completed_event(doc: dict, at: dt.datetime) -> Removed:
    """The `erasure.completed` event of a finished request: ids only, no personal data."""
    data = {"id": doc["_id"], "prospectIds": doc["prospectIds"], "callIds": doc["callIds"]}
    return Removed("erasure", doc["_id"], at, "completed", data)


# What a stored Idempotency-Key answer that carried an erased person becomes: replayed as it is
# (with the retry's requestId), never the old body, never a second write.
ERASED_ANSWER = json.dumps(
    {
        "type": "/reference/problems#erased",
        "title": "Erased",
        "status": 410,
        "code": "erased",
        "detail": "the answer to this request carried a person who has since been erased; "
        "it is not replayed, and the request is not done again",
    },
    separators=(",", ":"),
)
PROBLEM_TYPE = "application/problem+json"


# The events whose data carries the person, by the kind of record they are about.
PERSON_EVENTS = ("prospect.created", "prospect.updated")
ACTIVITY_EVENTS = ("activity.created",)
CALL_EVENTS = ("call.created", "call.updated")
