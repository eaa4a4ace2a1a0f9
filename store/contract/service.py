"""The request path of the service families: dialer metrics, Idempotency-Key records,
rate-limit counters, the store's own settings (store.contract)."""

from __future__ import annotations

import datetime as dt
from typing import Protocol
from zoneinfo import ZoneInfo

from store.idempotency import KeyState


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
    response of a write is stored by the write itself (store/idempotency.py: `IdempotentWrite`)."""

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


class Settings(Protocol):
    """Values the store keeps for the service itself."""

    async def signing_secret(self) -> str | None:
        """The secret that signs API keys when none is configured: SQLite creates one on first
        use and keeps it in the file; MongoDB keeps none (None), as WSAPI_SECRET is required
        there (server.auth.resolve_secret)."""
        ...
