"""Operator and test hooks: the calls of the admin CLI, the background sweeps, the webhook
dispatcher, and tests. Handlers never see these Protocols (tests/test_layout.py checks that
handlers/ imports none of them)."""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from store.erasures import ErasureClaim
from store.events import StoredEvent
from store.keys import DEFAULT_SCOPES
from store.paging import Position
from store.retention import DueRecording
from store.webhooks import Attempt, Claim, FanoutClaim


class WorkspaceHooks(Protocol):
    """Operators' calls on workspaces (admin CLI, demo)."""

    async def create(
        self, name: str, workspace_id: str | None = None, created_at: dt.datetime | None = None
    ) -> dict: ...

    async def list(self) -> builtins.list[dict]:
        """Operator scope: every workspace, oldest first."""
        ...

    async def rename(self, workspace_id: str, name: str) -> dict | None:
        """Operator scope (admin CLI only): give a workspace a new name; its record, or None
        when there is no such workspace."""
        ...

    async def update_settings(self, workspace_id: str, changes: dict) -> dict | None:
        """Operator scope (admin CLI only): set the workspace's settings named in `changes`
        (store/retention.py's RETENTION_SETTING); a None value removes a setting, so that the
        configured default applies again. Its record (with `settings`), or None when there is
        no such workspace."""
        ...

    async def find(self, workspace_id: str) -> dict | None:
        """Operator scope (admin CLI only): a workspace's record, also while it is being
        deleted (then with its `deletingAt`), or None when there is no such workspace."""
        ...

    async def begin_delete(self, workspace_id: str, now: dt.datetime) -> dict | None:
        """Operator scope (admin CLI only), the first step of deleting a workspace
        (store/workspace_deletion.py): mark it `deletingAt` (kept when it is already), delete
        its API keys, disable its webhook endpoints; its record, or None when there is no such
        workspace. Idempotent."""
        ...

    async def recordings(
        self, workspace_id: str, after: str, limit: int
    ) -> builtins.list[tuple[str, str]]:
        """Operator scope, a workspace being deleted: at most `limit` provider recordings the
        store still refers to, as (key, recording reference), by key from after `after` (""
        first, then the last key of the page before)."""
        ...

    async def forget_recordings(self, workspace_id: str, keys: Sequence[str]) -> None:
        """Operator scope, a workspace being deleted: forget the recordings of these keys
        (from `recordings`), once they are gone at the provider."""
        ...

    async def purge(self, workspace_id: str, batch: int = 1000) -> int:
        """Operator scope, a workspace being deleted: delete at most `batch` of its records,
        table after table (store.workspace_deletion.purge_order); how many. 0: none is left
        but the workspace's own record."""
        ...

    async def remove(self, workspace_id: str) -> bool:
        """Operator scope, the last step of deleting a workspace (once `purge` found nothing):
        delete its record; whether there was one."""
        ...


class RecordingHooks(Protocol):
    """The recording retention sweep's calls (server/recording_retention.py;
    store/retention.py). Operator scope, each within one workspace."""

    async def claim_expired_recordings(
        self,
        workspace_id: str,
        ended_before: dt.datetime,
        now: dt.datetime,
        lease: dt.timedelta,
        limit: int,
    ) -> builtins.list[DueRecording]:
        """Claim, until `now + lease`, up to `limit` calls of the workspace that ended before
        `ended_before`, still have a recording, and are not claimed or waiting for a retry
        (oldest end first); another claim skips them meanwhile."""
        ...

    async def forget_recording(self, workspace_id: str, due: DueRecording) -> dict | None:
        """Remove the stored recording reference of a claimed call, once the provider confirmed
        the recording gone: `hasRecording` false, `updatedAt` moves, `call.updated` is recorded.
        The call's new record, or None when it no longer holds `due.ref` (nothing written)."""
        ...

    async def postpone_recording(
        self, workspace_id: str, due: DueRecording, until: dt.datetime
    ) -> None:
        """The provider failed: the call is due again at `until`, its failures counted (only
        while the call is still `due`'s claim)."""
        ...


class UserHooks(Protocol):
    """Operators' calls on users (admin CLI)."""

    async def workspace_of(self, user_id: str) -> str | None:
        """Operator scope (admin CLI only): which workspace a user id belongs to."""
        ...

    async def list(self, workspace_id: str, include_deleted: bool = False) -> builtins.list[dict]:
        """The workspace's users, oldest first, each with its `deletedAt` (null while active);
        the deleted ones only with `include_deleted` (admin CLI)."""
        ...


class KeyHooks(Protocol):
    """Operators' calls on API keys (admin CLI)."""

    async def create(
        self,
        workspace_id: str,
        name: str,
        scopes: frozenset[str] = DEFAULT_SCOPES,
        expires_at: dt.datetime | None = None,
    ) -> dict:
        """A new key record (store.keys.key_record) with one or more of store.keys.SCOPES."""
        ...

    async def revoke(self, key_id: str) -> dict | None:
        """Operator scope (admin CLI only): revoke a key by id; its record, or None."""
        ...

    async def list(self, workspace_id: str) -> builtins.list[dict]: ...


class EventHooks(Protocol):
    """The events' background work: the sweep of interrupted writers, retention, and the
    rewrite of a stored event's data."""

    async def recover(self, older_than: dt.datetime, batch: int = 50) -> int:
        """Operator scope: record the events of changes whose writer died before it recorded
        them (changes marked before `older_than`); how many events it recorded. Idempotent;
        any process may run it (server/event_sweep.py)."""
        ...

    async def delete_expired(
        self, before: dt.datetime, batch: int = 1000, max_batches: int = 10
    ) -> int:
        """Operator scope: delete the events of every workspace that occurred before
        `before`, oldest first, in at most `max_batches` batches of `batch`; how many."""
        ...

    async def rewrite(self, workspace_id: str, event_id: str, data: dict) -> bool:
        """Replace the `data` of a stored event (its id, type and instant stay) with `data`, a
        record as the API writes it; whether the workspace had the event. For the work that
        rewrites what events said (erasure); nothing in the API calls it yet."""
        ...


class EndpointHooks(Protocol):
    """The webhook dispatcher's fan-out (webhooks/dispatcher.py)."""

    async def disable(
        self, workspace_id: str, endpoint_id: str, reason: str, now: dt.datetime
    ) -> None:
        """Disable an enabled endpoint (its pending deliveries fail) with `reason`."""
        ...

    async def claim_fanout(
        self, now: dt.datetime, lease: dt.timedelta, limit: int
    ) -> builtins.list[FanoutClaim]:
        """Operator scope: take at most `limit` enabled endpoints whose fan-out is due, each for
        `lease`; another process skips them until released or expired."""
        ...

    async def advance(self, claim: FanoutClaim, position: Position) -> bool:
        """Move the endpoint's feed position, if the claim still holds; whether it did."""
        ...

    async def advance_recovery(self, claim: FanoutClaim, recover_from: Position | None) -> bool:
        """Move (None: end) the recovery of the claim's generation, unless another `recover`
        started since; whether it did."""
        ...

    async def release_fanout(self, claim: FanoutClaim, next_at: dt.datetime) -> None:
        """End the claim: the endpoint's fan-out is due again at `next_at`."""
        ...


class DeliveryHooks(Protocol):
    """The webhook dispatcher's deliveries and their retention (webhooks/dispatcher.py)."""

    async def add(
        self,
        workspace_id: str,
        endpoint_id: str,
        generation: int,
        events: Sequence[StoredEvent],
        now: dt.datetime,
    ) -> int:
        """Insert the pending deliveries of `events` (idempotent: a delivery that exists stays
        as it is); how many were new."""
        ...

    async def claim(
        self,
        now: dt.datetime,
        lease: dt.timedelta,
        limit: int,
        per_endpoint: int,
        finished: Sequence[tuple[Claim, Attempt]] = (),
        *,
        owner: str | None = None,
        ahead: int = 0,
    ) -> builtins.list[Claim]:
        """Operator scope: take at most `limit` due deliveries of enabled endpoints, each for
        `lease`, never more than `per_endpoint` in flight per endpoint across every process;
        `finished` is recorded first, as `finish` does (SQLite: in the same write unit). An
        `owner` (one per dispatcher) may get up to `ahead` more of an endpoint none of whose
        leases another owner holds, to send as its own attempts end (store.webhooks.allowance;
        MongoDB never gives more than `per_endpoint`)."""
        ...

    async def release(self, claims: Sequence[Claim], now: dt.datetime) -> None:
        """Give back claims never attempted (their leases still held): each delivery is due at
        `now` again, its attempt not counted."""
        ...

    async def finish(self, results: Sequence[tuple[Claim, Attempt]]) -> None:
        """Record each attempt, and, where its claim still holds, its delivery's new state; keep
        the endpoints' `failingSince` (set by a failure, cleared by a success). One write unit
        (SQLite) or a few bulk writes (MongoDB) for the lot."""
        ...

    async def delete_expired(
        self, before: dt.datetime, batch: int = 1000, max_batches: int = 10
    ) -> int:
        """Operator scope: delete attempts made, and finished deliveries last changed, before
        `before`, in bounded batches; how many."""
        ...


class RateCounterHooks(Protocol):
    """Reading a window without counting (tests and diagnostics)."""

    async def count(self, workspace_id: str, window_start: dt.datetime) -> int:
        """The window's count without counting a request (tests and diagnostics)."""
        ...


class StoreHooks(Protocol):
    """The store's life cycle and the operators' and tests' view of its data."""

    async def ensure_indexes(self, build_timeout: float = 600) -> None:
        """Create every table or collection and index, idempotently; sets indexes_ready."""
        ...

    def heavy_writes(self) -> AbstractAsyncContextManager[Callable[[], Awaitable[None]]]:
        """`async with store.heavy_writes() as pace:` around a long run of large write batches
        into a store in use (the import): the writes are ordinary ones (events included); a
        backend may give its writer more memory meanwhile. `await pace()` between slices of the
        caller's own CPU work returns once the backend's writer does not need the interpreter
        (at once where it never does)."""
        ...

    async def sweep_expired(
        self, now: dt.datetime, batch: int = 1000, max_batches: int = 10
    ) -> int:
        """Delete records past their expiry time (Idempotency-Key records, provider call
        states, and where the backend keeps them in the database, rate-limit windows and
        leases) in at most `max_batches` batches of `batch` per collection; how many were deleted
        (server.expiry's periodic sweep: expiry never rests on TTL indexes alone)."""
        ...

    async def sweep_tombstones(
        self, horizon: dt.datetime, batch: int = 1000, max_batches: int = 10
    ) -> int:
        """Delete the tombstones of prospects and lists deleted before `horizon`
        (store/tombstones.py) in at most `max_batches` batches of `batch` per table, after
        finishing deletes that stopped half-way where a backend has them (MongoDB); how many
        tombstones were deleted (server.expiry's periodic sweep)."""
        ...

    async def scrub(self, timeout: float = 30.0) -> bool | None:
        """The end of an erasure (or of a workspace's deletion): make what was deleted
        unrecoverable from the database's own files, where the backend can. SQLite: the file
        already zeroes what is deleted (secure_delete); this truncates the write-ahead log to
        nothing (a TRUNCATE checkpoint), trying again while readers hold snapshots in it for at
        most `timeout` seconds, and says whether it did (False: call it again later). MongoDB:
        None, nothing to do for bytes: the deletes removed or rewrote the documents, and what
        the server's storage engine keeps beyond that is the server's (docs/deployment.md)."""
        ...

    async def collections(self) -> list[str]:
        """The names of the store's tables or collections (operators and tests)."""
        ...

    async def documents(self, collection: str) -> list[dict]:
        """Every stored document of a collection (operators and tests; never a request)."""
        ...

    async def drop(self) -> None:
        """Delete every table or collection with its data and indexes (tests); the store is
        empty afterwards, and ensure_indexes() must run again before it is used."""
        ...

    async def close(self) -> None:
        """Release connections, threads and files (a throwaway SQLite file is removed)."""
        ...


class ErasureWork(Protocol):
    """The worker's side (server/erasure_work.py): claims by lease, progress, the end."""

    async def claim(self, now: dt.datetime, token: str) -> ErasureClaim | None:
        """Take the lease of one open request of any workspace that is due (pending, or
        running with its lease lapsed and its next attempt due) and mark it running."""
        ...

    async def erase_prospect(self, claim: ErasureClaim, prospect_id: str) -> list[str] | None:
        """Erase one prospect of the request, as one unit with the request's progress: the
        events that carry the person rewritten to their erased form (and the webhook
        deliveries made of them), its calls rewritten, the prospect deleted as
        DELETE /prospects/{id} deletes it (each call's `call.updated`). The recording
        references it left to delete at the provider ([] when it was done before); None when
        the lease was lost."""
        ...

    async def progress(
        self, claim: ErasureClaim, confirmed: list[str], counts: dict[str, int]
    ) -> bool:
        """Recording references confirmed gone at the provider (taken off the request's
        list), and `counts` added; False when the lease was lost."""
        ...

    async def retry_later(self, claim: ErasureClaim, at: dt.datetime) -> bool:
        """Give the lease back with one more failed attempt, due again at `at`."""
        ...

    async def finish(
        self, claim: ErasureClaim, status: str, now: dt.datetime, reason: str | None = None
    ) -> dict | None:
        """End the request (`completed` or `failed` with a reason; `completed` records
        `erasure.completed`); the stored document as it ends (None when the lease was lost)."""
        ...

    async def reopen_undone(self, now: dt.datetime) -> int:
        """After a restore (`workspace-api erasures reapply`, an operator's call across
        workspaces): every completed request whose work the data no longer shows (a prospect
        of it live again, or a call of it without `erasedAt`) is made `pending` again, its
        progress and counts reset, so the worker erases it again. How many."""
        ...

    async def open_count(self) -> int:
        """How many requests of every workspace are `pending` or `running`."""
        ...
