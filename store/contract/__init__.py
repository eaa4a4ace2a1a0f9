"""The store contract: what every backend offers, declared once, split by who may call it.

- The request path, one module per family (accounts, lists, prospects, calls, activities,
  events, webhooks, provider, service), composed as `RequestStore`
  (store/contract/requests.py): what handlers/ see.
- Seeding and bulk loading (store/contract/seeding.py) and operator and test hooks
  (store/contract/hooks.py): Protocols handlers/ never import (tests/test_layout.py).
- `Store` (store/contract/store.py), the object `store.database.open_store` returns: every
  family whole, and the store's life cycle.

Each of the store's collection families (`store.calls`, `store.prospects`, ...) is one Protocol
per audience. Handlers and server code depend on these Protocols only, never on a backend
class. Both backends (store/sqlite: SQLiteStore, store/mongo: MongoStore) are checked against
them by mypy through `open_store`'s return type (store/database.py), and
tests/store/test_contract.py checks that neither backend has a public method the contract does
not declare.

Every write records its change events (the `events` family; docs/architecture.md, "How a
write path records its events"), except inside `bulk_load()`.

To add a method: declare it in the module of its family and audience, implement it on both
backends, run mypy. A method over a workspace's data takes the workspace id first (operators'
calls, marked so, excepted), and every method raises store.errors, never a driver's error.
Records are the API's dicts (store/records.py and the resources' modules); instants are naive
UTC datetimes with millisecond precision (store/clock.py).
"""

from __future__ import annotations

from store.contract.accounts import Keys, Users, Workspaces
from store.contract.activities import Activities
from store.contract.calls import Calls
from store.contract.dnc import DoNotCall
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
from store.contract.lists import Lists
from store.contract.prospects import Prospects
from store.contract.provider import ProviderCalls
from store.contract.requests import RequestStore
from store.contract.seeding import (
    ActivitySeeding,
    CallSeeding,
    ProspectSeeding,
    Seeding,
    UserSeeding,
)
from store.contract.service import DialerMetrics, Idempotency, RateCounters, Settings
from store.contract.store import (
    AllActivities,
    AllCalls,
    AllErasures,
    AllEvents,
    AllKeys,
    AllProspects,
    AllRateCounters,
    AllUsers,
    AllWebhookDeliveries,
    AllWebhookEndpoints,
    AllWorkspaces,
    Store,
)
from store.contract.webhooks import WebhookDeliveries, WebhookEndpoints

__all__ = [
    "Activities",
    "ActivitySeeding",
    "AllActivities",
    "AllCalls",
    "AllErasures",
    "AllEvents",
    "AllKeys",
    "AllProspects",
    "AllRateCounters",
    "AllUsers",
    "AllWebhookDeliveries",
    "AllWebhookEndpoints",
    "AllWorkspaces",
    "CallSeeding",
    "Calls",
    "DeliveryHooks",
    "DialerMetrics",
    "DoNotCall",
    "EndpointHooks",
    "ErasureWork",
    "Erasures",
    "EventHooks",
    "Events",
    "Idempotency",
    "KeyHooks",
    "Keys",
    "Lists",
    "ProspectSeeding",
    "Prospects",
    "ProviderCalls",
    "RateCounterHooks",
    "RateCounters",
    "RecordingHooks",
    "RequestStore",
    "Seeding",
    "Settings",
    "Store",
    "StoreHooks",
    "UserHooks",
    "UserSeeding",
    "Users",
    "WebhookDeliveries",
    "WebhookEndpoints",
    "WorkspaceHooks",
    "Workspaces",
]
