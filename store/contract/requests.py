"""The store as the request path sees it (handlers/): each family's request-path Protocol,
and nothing of seeding, bulk loading, operators or tests (store/contract/store.py: `Store`)."""

from __future__ import annotations

from typing import Protocol

from store.contract.accounts import Keys, Users, Workspaces
from store.contract.activities import Activities
from store.contract.calls import Calls
from store.contract.dnc import DoNotCall
from store.contract.erasures import Erasures
from store.contract.events import Events
from store.contract.lists import Lists
from store.contract.prospects import Prospects
from store.contract.provider import ProviderCalls
from store.contract.service import DialerMetrics, Idempotency, RateCounters, Settings
from store.contract.webhooks import WebhookDeliveries, WebhookEndpoints


class RequestStore(Protocol):
    """The store as a request sees it: its collection families' request paths, and whether the
    database can serve (handlers/ type the store as this)."""

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
    def do_not_call(self) -> DoNotCall: ...

    @property
    def events(self) -> Events: ...

    @property
    def erasures(self) -> Erasures: ...

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

    async def ping(self, timeout: float = 2.0) -> bool:
        """Whether the database answers within `timeout` seconds (never raises)."""
        ...

    async def readiness(self, timeout: float = 2.0) -> str | None:
        """None when the database can serve requests, else why not, in words a client may read
        (GET /readyz): unreachable, or (SQLite) found damaged. Cheap at any database size:
        never a full integrity check. Never raises."""
        ...
