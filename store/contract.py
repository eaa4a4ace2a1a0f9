"""The store contract: what every backend offers, declared once.

`Store` is the object `store.database.open_store` returns; each of its collection families
(`store.calls`, `store.prospects`, ...) is one Protocol below. Handlers and server code depend
on these Protocols only, never on a backend class. Both backends (store/sqlite: SQLiteStore,
store/mongo: MongoStore) are checked against them by mypy through `open_store`'s return type
(store/database.py), and tests/store/test_contract.py checks that neither backend has a public
method the contract does not declare.

Every write records its change events (the `events` family; docs/architecture.md, "How a
write path records its events"), except inside `bulk_load()`.

To add a method: declare it here, implement it on both backends, run mypy. A method over a
workspace's data takes the workspace id first (operators' calls, marked so, excepted), and
every method raises store.errors, never a driver's error. Records are the API's dicts
(store/records.py and the resources' modules); instants are naive UTC datetimes with
millisecond precision (store/clock.py).
"""

from __future__ import annotations

import builtins
import datetime as dt
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from store.events import EventPage, StoredEvent
from store.exports import Batch
from store.idempotency import KeyState, Once
from store.ingest import Logged, NewActivity, NewCall, Recorded
from store.keys import DEFAULT_SCOPES, ActiveKey
from store.paging import Page, Position, Window
from store.prospects import Contact, Upload
from store.webhooks import Attempt, AttemptPage, Claim, FanoutClaim


class Workspaces(Protocol):
    """The tenants; created by operators (admin CLI, demo)."""

    async def create(
        self, name: str, workspace_id: str | None = None, created_at: dt.datetime | None = None
    ) -> dict: ...

    async def get(self, workspace_id: str) -> dict | None: ...

    async def list(self) -> builtins.list[dict]:
        """Operator scope: every workspace, oldest first."""
        ...

    async def rename(self, workspace_id: str, name: str) -> dict | None:
        """Operator scope (admin CLI only): give a workspace a new name; its record, or None
        when there is no such workspace."""
        ...


class Users(Protocol):
    """The people who dial; a deleted user keeps its record with deletedAt set."""

    async def create(
        self,
        workspace_id: str,
        email: str,
        first_name: str,
        last_name: str,
        created_at: dt.datetime | None = None,
        user_id: str | None = None,
    ) -> dict: ...

    async def list_active(self, workspace_id: str) -> list[dict]: ...

    async def is_active(self, workspace_id: str, user_id: str) -> bool: ...

    async def delete(self, workspace_id: str, user_id: str) -> bool:
        """Mark the user deleted; False when there was no active user to delete."""
        ...

    async def workspace_of(self, user_id: str) -> str | None:
        """Operator scope (admin CLI only): which workspace a user id belongs to."""
        ...

    async def list(self, workspace_id: str, include_deleted: bool = False) -> builtins.list[dict]:
        """The workspace's users, oldest first, each with its `deletedAt` (null while active);
        the deleted ones only with `include_deleted` (admin CLI)."""
        ...


class Keys(Protocol):
    """API key records: id and metadata (name, scopes, expiry, last use); the plain key (a
    signed JWT) is never stored. Records written before keys had scopes and expiry are
    `read,write` and never expire (store/keys.py)."""

    async def create(
        self,
        workspace_id: str,
        name: str,
        scopes: frozenset[str] = DEFAULT_SCOPES,
        expires_at: dt.datetime | None = None,
    ) -> dict:
        """A new key record (store.keys.key_record) with one or more of store.keys.SCOPES."""
        ...

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

    async def revoke(self, key_id: str) -> dict | None:
        """Operator scope (admin CLI only): revoke a key by id; its record, or None."""
        ...

    async def list(self, workspace_id: str) -> builtins.list[dict]: ...


class Lists(Protocol):
    """Dialer lists, with their prospectsCount."""

    async def create(
        self,
        workspace_id: str,
        name: str,
        owner_user_id: str,
        source: str = "CSV",
        created_at: dt.datetime | None = None,
        list_id: str | None = None,
        once: Once | None = None,
    ) -> dict:
        """Insert a list; its record. With an Idempotency-Key (`once`) the write is idempotent
        on it (store/idempotency.py) and stores its response."""
        ...

    async def get(self, workspace_id: str, list_id: str) -> dict | None:
        """The list, or None. On MongoDB a list an interrupted upload left marked gets its
        prospectsCount counted again first."""
        ...

    async def page(
        self,
        workspace_id: str,
        window: Window,
        *,
        updated_since: dt.datetime | None = None,
        encoded: bool = False,
    ) -> Page:
        """One window of lists (updatedAt >= `updated_since` when given). With `encoded` a
        backend may return the records as one JSON array (store.paging.RawJSON); without it
        they are dicts."""
        ...

    def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = ...,
        updated_since: dt.datetime | None = None,
    ) -> AsyncGenerator[Batch, None]:
        """Every list last changed at or before `settled_before` (the export's horizon), in
        the sync order (updatedAt, then id), in batches of at most `batch_size` records
        (store/exports.py); memory stays bounded whatever the number. Close it
        (contextlib.aclosing) when stopping early."""
        ...

    async def set_count(self, workspace_id: str, list_id: str, members: int) -> dict | None:
        """Record the list's counted number of prospects (the larger count wins) and move its
        updatedAt; the list's record, or None."""
        ...


class Prospects(Protocol):
    """Prospects: contact matching on upload (store/prospects.py), reads by page and lookup."""

    def parse_contact(self, raw: dict) -> Contact: ...

    def normalize_phone(self, value: str) -> str | None:
        """A phone number as stored and matched (E.164), or None when it cannot be read."""
        ...

    async def add_to_list(
        self, workspace_id: str, listing: dict, raw_contacts: list[dict], once: Once | None = None
    ) -> Upload:
        """Match or create a prospect for each contact and add it to `listing` (a list record),
        and set the list's prospectsCount; idempotent. The list's number of prospects and each
        contact's outcome. With an Idempotency-Key (`once`) the write is idempotent on it
        (store/idempotency.py) and stores its response."""
        ...

    async def match(
        self,
        workspace_id: str,
        raw_contacts: list[dict],
        owner_user_id: str | None = None,
        once: Once | None = None,
    ) -> list[dict]:
        """Match or create a prospect for each contact with the upload's rules, adding none to
        a list (the prospects import); each contact's outcome (store.prospects.outcomes)."""
        ...

    async def count_in_list(self, workspace_id: str, list_id: str) -> int: ...

    async def create(
        self,
        workspace_id: str,
        contact: dict,
        owner_user_id: str | None = None,
        list_ids: list[str] | None = None,
        created_at: dt.datetime | None = None,
        prospect_id: str | None = None,
    ) -> dict:
        """Insert one prospect as is, without matching (seeding and tests); its record."""
        ...

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt prospect documents (store.prospects.prospect_document), with their
        `prospect.created` events."""
        ...

    async def page(
        self,
        workspace_id: str,
        window: Window,
        *,
        list_id: str | None = None,
        email: str | None = None,
        phone: str | None = None,
        updated_since: dt.datetime | None = None,
        encoded: bool = False,
    ) -> Page: ...

    def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = ...,
        list_id: str | None = None,
        email: str | None = None,
        phone: str | None = None,
        updated_since: dt.datetime | None = None,
    ) -> AsyncGenerator[Batch, None]:
        """Every prospect `page`'s filters select that was last changed at or before
        `settled_before`, in the sync order, in batches (see Lists.export)."""
        ...

    async def lookup(
        self,
        workspace_id: str,
        *,
        prospect_id: str | None = None,
        email: str | None = None,
        phone: str | None = None,
        limit: int = 2,
    ) -> list[dict]:
        """The prospects (at most `limit`, oldest first) selected by id, email or phone."""
        ...


class Calls(Protocol):
    """Finished calls (store/calls.py), the dialer's writes of them (store/ingest.py) and the
    recording reference of a call."""

    async def get(self, workspace_id: str, call_id: str) -> dict | None:
        """The call's record, or None."""
        ...

    async def record(
        self,
        workspace_id: str,
        calls: list[NewCall],
        once: Once | None = None,
        partial: bool = False,
    ) -> list[Recorded]:
        """Record finished calls (validated, normalised input) with everything they imply:
        references checked, contacts matched or created (the upload's rules), calls of a
        provider SID recorded once (`existing` for the same content; `call_exists` for other
        content), timeline entries, the call total and the dialer metrics. All or nothing (one
        transaction on SQLite; an idempotent sequence on MongoDB): the first refusal raises
        store.ingest.Refused and nothing is written. With `partial` (the import) refused calls
        are left out, each with its refusal, and the others recorded. With an Idempotency-Key
        (`once`) the write is idempotent on it and stores its response."""
        ...

    async def change(self, workspace_id: str, call_id: str, changes: dict) -> dict | None:
        """Change a call's store.ingest.CHANGEABLE fields: updatedAt moves (never backwards),
        the timeline entry and the dialer metrics follow; a change that changes nothing writes
        nothing. The call's record, or None when the workspace has no such call."""
        ...

    async def create(self, workspace_id: str, **fields: Any) -> dict:
        """Record one finished call (store.calls.call_document's arguments); its record."""
        ...

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt call documents, each with its `call` activity, and their events."""
        ...

    async def page(
        self,
        workspace_id: str,
        window: Window,
        *,
        encoded: bool = False,
        user_id: str | None = None,
        prospect_id: str | None = None,
        list_id: str | None = None,
        direction: str | None = None,
        disposition: str | None = None,
        created_from: dt.datetime | None = None,
        created_to: dt.datetime | None = None,
        updated_since: dt.datetime | None = None,
    ) -> Page:
        """One window of calls: equality filters, createdAt in [from, to), updatedAt >= since."""
        ...

    def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = ...,
        user_id: str | None = None,
        prospect_id: str | None = None,
        list_id: str | None = None,
        direction: str | None = None,
        disposition: str | None = None,
        created_from: dt.datetime | None = None,
        created_to: dt.datetime | None = None,
        updated_since: dt.datetime | None = None,
    ) -> AsyncGenerator[Batch, None]:
        """Every call `page`'s filters select that was last changed at or before
        `settled_before`, in the sync order, in batches (see Lists.export)."""
        ...

    async def recording_ref(self, workspace_id: str, call_id: str) -> str | None:
        """The provider's reference of the call's recording, or None (no such call in this
        workspace, or no recording). Never part of a record."""
        ...


class Activities(Protocol):
    """Prospect activities: bulk inserts, logging, and the timeline, newest first."""

    async def log(
        self,
        workspace_id: str,
        activities: list[NewActivity],
        ids: list[str] | None = None,
        once: Once | None = None,
        partial: bool = False,
    ) -> list[Logged]:
        """Log activities (validated input) on their prospects' timelines, with the ids
        `ids` (else ids derived from `once`, else new ones); an id written before is
        `existing`. References are checked (store.ingest.activity_refusal); all or nothing
        unless `partial`, as Calls.record."""
        ...

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt activity documents (store.activities.activity_document), with their
        `activity.created` events."""
        ...

    def timeline(
        self, workspace_id: str, prospect_id: str, batch_size: int = 500
    ) -> AsyncGenerator[list[dict], None]:
        """A prospect's activities as records, newest first, in batches of `batch_size`; memory
        stays bounded whatever the timeline's length. Close it (contextlib.aclosing) when
        stopping early."""
        ...

    def export(
        self,
        workspace_id: str,
        settled_before: dt.datetime,
        *,
        batch_size: int = ...,
        stored_since: dt.datetime | None = None,
    ) -> AsyncGenerator[Batch, None]:
        """Every activity of the workspace stored at or before `settled_before` (and at or
        after `stored_since`), in the order they were stored (storedAt, then id), as
        store.activities.export_record shows them, in batches (see Lists.export)."""
        ...


class Events(Protocol):
    """The change events of every write (store/events.py), as a feed: oldest first in
    (occurredAt, id) order. Write paths record their events themselves, each backend its own
    way (docs/architecture.md, "How a write path records its events")."""

    async def page(
        self,
        workspace_id: str,
        after: Position,
        settled_before: dt.datetime,
        page_size: int,
        types: Sequence[str] | None = None,
    ) -> EventPage:
        """The events after `after` (a position in the feed; id "" stands before every event
        of its instant) of `types` (every type when None), at most `page_size`, of those that
        occurred at or before `settled_before` and before any event still being recorded;
        `settled` says up to which instant the page is final. The same cost at any depth."""
        ...

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


class WebhookEndpoints(Protocol):
    """The integrators' webhook receivers (store/webhooks.py): their API records, secrets, feed
    positions, and the fan-out that the dispatcher claims (webhooks/dispatcher.py)."""

    async def create(
        self,
        workspace_id: str,
        url: str,
        event_types: builtins.list[str] | None,
        description: str | None,
        secret: str,
        now: dt.datetime,
        once: Once | None = None,
    ) -> dict:
        """A new enabled endpoint whose feed position is `now`; its record with its `secret`
        (with an Idempotency-Key, the one an earlier attempt stored, if it did)."""
        ...

    async def list(self, workspace_id: str) -> builtins.list[dict]:
        """The workspace's endpoints, oldest first."""
        ...

    async def get(self, workspace_id: str, endpoint_id: str) -> dict | None: ...

    async def update(
        self, workspace_id: str, endpoint_id: str, changes: dict, now: dt.datetime
    ) -> dict | None:
        """Change `url`, `eventTypes`, `description` or `status` (the API's names); its record,
        or None. Disabling fails its pending deliveries; re-enabling moves its feed position to
        `now` (the events in between only through `recover`)."""
        ...

    async def delete(self, workspace_id: str, endpoint_id: str) -> bool:
        """Remove the endpoint with its deliveries and attempts; False when there was none."""
        ...

    async def rotate_secret(
        self,
        workspace_id: str,
        endpoint_id: str,
        secret: str,
        now: dt.datetime,
        overlap: dt.timedelta,
        once: Once | None = None,
    ) -> dict | None:
        """Make `secret` the current one (unless it is already); the previous one signs too
        until `now + overlap`. Its record with its `secret`, or None."""
        ...

    async def recover(
        self,
        workspace_id: str,
        endpoint_id: str,
        since: dt.datetime,
        now: dt.datetime,
        once: Once | None = None,
    ) -> bool:
        """Deliver again every event since `since` up to the feed position (a new generation of
        deliveries); False when there is no such endpoint."""
        ...

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


class WebhookDeliveries(Protocol):
    """One delivery per (endpoint, event, generation), claimed attempt by attempt under a lease,
    and every attempt's row (store/webhooks.py)."""

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

    async def page(
        self, workspace_id: str, endpoint_id: str, after: Position | None, page_size: int
    ) -> AttemptPage:
        """The endpoint's attempts newest first (ties by id), after `after`."""
        ...

    async def backlog(self) -> int:
        """Operator scope: how many deliveries are pending (neither delivered nor failed), every
        workspace together (the `wsapi_webhook_backlog` metric; an index count)."""
        ...

    async def delete_expired(
        self, before: dt.datetime, batch: int = 1000, max_batches: int = 10
    ) -> int:
        """Operator scope: delete attempts made, and finished deliveries last changed, before
        `before`, in bounded batches; how many."""
        ...


class DialerMetrics(Protocol):
    """Dialer KPIs over whole local days (definitions in store/metrics.py)."""

    async def report(
        self,
        workspace_id: str,
        first: dt.date,
        last: dt.date,
        zone: ZoneInfo,
        user_id: str | None = None,
    ) -> dict: ...


class Idempotency(Protocol):
    """Idempotency-Key records: claimed while a request runs, then holding its response. The
    response of a write is stored by the write itself (store/idempotency.py: `Once`)."""

    async def begin(
        self,
        workspace_id: str,
        key: str,
        fingerprint: str,
        now: dt.datetime,
        lock: dt.timedelta,
        ttl: dt.timedelta,
    ) -> KeyState:
        """Claim the key (`claimed`, with the seed of the ids derived from it), or the state
        of the record that holds it (`response` None while in progress). A record past its
        expiry is claimed anew; one in progress for the same request (fingerprint) is taken
        over, keeping its seed, when its lock has lapsed or its process is gone."""
        ...

    async def complete(
        self,
        workspace_id: str,
        key: str,
        status: int,
        body: str,
        content_type: str,
        location: str | None,
    ) -> None:
        """Store the response of a request that wrote nothing (a client error)."""
        ...

    async def release(self, workspace_id: str, key: str) -> None:
        """Free this process's claim of the key (the request failed with a 5xx: its retry may
        run again); the claim stays, with its seed, for that retry to take over."""
        ...


class RateCounters(Protocol):
    """Rate-limit window counters, shared by every process that uses the same database
    (server.ratelimit; its in-memory LocalCounters follow this Protocol too)."""

    async def hit(
        self, workspace_id: str, window_start: dt.datetime, expire_at: dt.datetime
    ) -> int:
        """Count one request in the workspace's window; the window's count so far."""
        ...

    async def count(self, workspace_id: str, window_start: dt.datetime) -> int:
        """The window's count without counting a request (tests and diagnostics)."""
        ...


class Settings(Protocol):
    """Values the store keeps for the service itself."""

    async def signing_secret(self) -> str | None:
        """The secret that signs API keys when none is configured: SQLite creates one on first
        use and keeps it in the file; MongoDB keeps none (None), as WSAPI_SECRET is required
        there (server.auth.resolve_secret)."""
        ...


class ProviderCalls(Protocol):
    """What is remembered of a call the telephony provider reports, per (workspace, CallSid),
    between its callbacks (store/provider_calls.py). Every write moves the record's expiry to
    `expires_at`; the expiry sweep removes it after that."""

    async def get(self, workspace_id: str, call_sid: str) -> dict | None:
        """The call's state: callSid, initiatedAt, answeredAt, recordingSid,
        recordingDurationSeconds, final, pendingReason, receivedAt, callId, expiresAt (None
        where unknown); None for a SID never seen."""
        ...

    async def progress(
        self,
        workspace_id: str,
        call_sid: str,
        *,
        initiated_at: dt.datetime | None,
        answered_at: dt.datetime | None,
        expires_at: dt.datetime,
    ) -> None:
        """Remember when the call started (`initiated`) or was answered (`in-progress`); the
        first instant noted of each wins."""
        ...

    async def hold_recording(
        self,
        workspace_id: str,
        call_sid: str,
        recording_sid: str,
        duration_seconds: int,
        expires_at: dt.datetime,
    ) -> None:
        """Remember the call's finished recording (to attach when the call is recorded)."""
        ...

    async def keep_pending(
        self,
        workspace_id: str,
        call_sid: str,
        final: dict,
        reason: str,
        received_at: dt.datetime,
        expires_at: dt.datetime,
    ) -> None:
        """Keep a final status aside (store.provider_calls.final_status, and why); nothing
        once the call is recorded. `received_at` is the first time it was kept."""
        ...

    async def settle(
        self, workspace_id: str, call_sid: str, call_id: str, expires_at: dt.datetime
    ) -> None:
        """Note that the call is recorded as `call_id`: it is no longer pending."""
        ...

    async def pending(self, workspace_id: str, now: dt.datetime, limit: int = 1000) -> list[dict]:
        """The callbacks kept aside that have not expired at `now`, newest first, as records
        (store.provider_calls.pending_record)."""
        ...


class Store(Protocol):
    """The store: its collection families and its own life cycle."""

    @property
    def backend(self) -> str:
        """ "sqlite" or "mongodb"."""
        ...

    @property
    def embedded(self) -> bool:
        """Whether the database lives in this host's files (SQLite) rather than a server."""
        ...

    @property
    def process_private(self) -> bool:
        """Whether no other process can use this store's data (MONGODB_URI=memory): the rate
        limiter then counts in memory."""
        ...

    @property
    def indexes_ready(self) -> bool:
        """True once ensure_indexes() has succeeded; the API answers 503 until then."""
        ...

    @property
    def workspaces(self) -> Workspaces: ...
    @property
    def users(self) -> Users: ...
    @property
    def keys(self) -> Keys: ...
    @property
    def lists(self) -> Lists: ...
    @property
    def prospects(self) -> Prospects: ...
    @property
    def calls(self) -> Calls: ...
    @property
    def activities(self) -> Activities: ...
    @property
    def events(self) -> Events: ...
    @property
    def webhook_endpoints(self) -> WebhookEndpoints: ...
    @property
    def webhook_deliveries(self) -> WebhookDeliveries: ...
    @property
    def metrics(self) -> DialerMetrics: ...
    @property
    def idempotency(self) -> Idempotency: ...
    @property
    def provider_calls(self) -> ProviderCalls: ...
    @property
    def ratelimits(self) -> RateCounters: ...
    @property
    def settings(self) -> Settings: ...

    async def ensure_indexes(self, build_timeout: float = 600) -> None:
        """Create every table or collection and index, idempotently; sets indexes_ready."""
        ...

    def bulk_load(self, defer_indexes: bool = True) -> AbstractAsyncContextManager[None]:
        """`async with store.bulk_load():` around a first load of history that nothing reads
        meanwhile (the demo's seeding): the writes inside it record no events, and with
        `defer_indexes` a backend may defer index work to its end."""
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
        states, and where the
        backend keeps them in the database, rate-limit windows and leases) in at most
        `max_batches` batches of `batch` per collection; how many were deleted
        (server.expiry's periodic sweep: expiry never rests on TTL indexes alone)."""
        ...

    async def ping(self, timeout: float = 2.0) -> bool:
        """Whether the database answers within `timeout` seconds (never raises)."""
        ...

    async def readiness(self, timeout: float = 2.0) -> str | None:
        """None when the database can serve requests, else why not, in words a client may read
        (GET /readyz): unreachable, or (SQLite) found damaged. Cheap at any database size:
        never a full integrity check. Never raises."""
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
