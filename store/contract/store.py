"""The whole store (`Store`, what store.database.open_store returns): every family with its
request path, its seeding and its hooks, and the store's life cycle. Operators' code, the
background sweeps, the webhook dispatcher, the demo and tests use it; handlers/ use
store.contract.requests.RequestStore only."""

from __future__ import annotations

from typing import Protocol

from store.clock import Clock
from store.contract.accounts import Keys, Users, Workspaces
from store.contract.activities import Activities
from store.contract.calls import Calls
from store.contract.erasures import Erasures
from store.contract.events import Events
from store.contract.hooks import (
    DeliveryHooks,
    EndpointHooks,
    ErasureWork,
    EventHooks,
    KeyHooks,
    RateCounterHooks,
    RecordingHooks,
    StoreHooks,
    UserHooks,
    WorkspaceHooks,
)
from store.contract.prospects import Prospects
from store.contract.requests import RequestStore
from store.contract.seeding import (
    ActivitySeeding,
    CallSeeding,
    ProspectSeeding,
    Seeding,
    UserSeeding,
)
from store.contract.service import RateCounters
from store.contract.webhooks import WebhookDeliveries, WebhookEndpoints


class AllWorkspaces(Workspaces, WorkspaceHooks, Protocol): ...


class AllUsers(Users, UserHooks, UserSeeding, Protocol): ...


class AllKeys(Keys, KeyHooks, Protocol): ...


class AllProspects(Prospects, ProspectSeeding, Protocol): ...


class AllCalls(Calls, CallSeeding, RecordingHooks, Protocol): ...


class AllActivities(Activities, ActivitySeeding, Protocol): ...


class AllEvents(Events, EventHooks, Protocol): ...


class AllErasures(Erasures, ErasureWork, Protocol): ...


class AllWebhookEndpoints(WebhookEndpoints, EndpointHooks, Protocol): ...


class AllWebhookDeliveries(WebhookDeliveries, DeliveryHooks, Protocol): ...


class AllRateCounters(RateCounters, RateCounterHooks, Protocol): ...


class Store(RequestStore, Seeding, StoreHooks, Protocol):
    """The store: its collection families, each whole, and its own life cycle."""

    # Where its instants come from (store.clock); the sweeps and the dispatcher built on it
    # default to the same one.
    clock: Clock

    @property
    def workspaces(self) -> AllWorkspaces: ...

    @property
    def users(self) -> AllUsers: ...

    @property
    def keys(self) -> AllKeys: ...

    @property
    def prospects(self) -> AllProspects: ...

    @property
    def calls(self) -> AllCalls: ...

    @property
    def activities(self) -> AllActivities: ...

    @property
    def events(self) -> AllEvents: ...

    @property
    def erasures(self) -> AllErasures: ...

    @property
    def webhook_endpoints(self) -> AllWebhookEndpoints: ...

    @property
    def webhook_deliveries(self) -> AllWebhookDeliveries: ...

    @property
    def ratelimits(self) -> AllRateCounters: ...
