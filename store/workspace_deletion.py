"""Deleting a whole workspace (a customer who leaves: `workspace-api workspaces delete`): what
both backends do the same way. The steps, each idempotent, so that running the command again
after a crash carries on where it stopped:

1. `begin_delete`: the workspace is marked `deletingAt` (the request path no longer finds it:
   provider callbacks are refused), its API keys are deleted (they answer 401 once each
   serving process's key cache lapses) and its webhook endpoints disabled (their pending
   deliveries fail: nothing more is sent).
2. `recordings` / `forget_recordings`: the provider's recordings the store still refers to
   (calls' `recordingRef`, and the recordings of provider calls kept aside), deleted at the
   provider by the caller, then forgotten here, a page at a time.
3. `purge`: every record of the workspace, a bounded batch per call, table after table in
   PURGE_ORDER (webhooks first, events last: on MongoDB a record's marker can still record an
   event until the record is gone), then any table or collection not named there; 0 once
   nothing is left.
4. `remove`: the workspace's own record, last, so that until then the command can be run again
   by its id and name.

The scrub (`store.scrub()`) ends it on SQLite.
"""

from __future__ import annotations

# Why the workspace's webhook endpoints were disabled (their `disabledReason`).
DISABLED_REASON = "workspace_deleted"

# Tables and collections that hold no workspace's records: the service's own settings, the
# migrations done, and the workspaces themselves (removed last, by `remove`).
NOT_OF_A_WORKSPACE = frozenset({"workspaces", "settings", "migrations"})

# The order of `purge`: outbound webhooks first, then what refers to prospects and lists, the
# records themselves, the bookkeeping, and the events last. A table or collection not named
# here (one added later) is purged after these and before the events: every table with a
# `workspaceId` column, every collection but NOT_OF_A_WORKSPACE.
PURGE_ORDER = (
    "webhook_attempts",
    "webhook_deliveries",
    "webhook_endpoints",
    "api_keys",
    "idempotency",
    "provider_calls",
    "do_not_call",
    "list_removals",
    "list_purges",
    "memberships",
    "activities",
    "calls",
    "call_quarters",
    "prospects",
    "lists",
    "tombstones",
    "users",
    "counters",
    "rate_limits",
    "leases",
)
LAST = "events"

# A stored recording's key in `recordings`: the call's id, or the provider call's SID, after
# this prefix (calls sort before provider calls, so one key orders the whole walk).
CALL = "call:"
PROVIDER_CALL = "provider:"


def purge_order(names: list[str]) -> list[str]:
    """The tables or collections `names` (those holding workspaces' records) in purge order."""
    known = [name for name in PURGE_ORDER if name in names]
    later = sorted(set(names) - set(PURGE_ORDER) - {LAST} - NOT_OF_A_WORKSPACE)
    return known + later + ([LAST] if LAST in names else [])


def split_key(after: str) -> tuple[str, str]:
    """Where a walk of stored recordings resumes after `after` (a key it returned, or ""): the
    call id after which to look at calls ("" for all; None-like "\\uffff" once past them) and the
    provider call SID after which to look at provider calls."""
    if after.startswith(PROVIDER_CALL):
        return "\uffff", after.removeprefix(PROVIDER_CALL)
    return after.removeprefix(CALL), ""
