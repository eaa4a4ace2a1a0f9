"""The request path of the webhook families: endpoints and their attempts (store.contract)."""

from __future__ import annotations

import builtins
import datetime as dt
from typing import Protocol

from store.idempotency import IdempotentWrite
from store.paging import Position
from store.webhooks import AttemptPage


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
        once: IdempotentWrite | None = None,
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
        once: IdempotentWrite | None = None,
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
        once: IdempotentWrite | None = None,
    ) -> bool:
        """Deliver again every event since `since` up to the feed position (a new generation of
        deliveries); False when there is no such endpoint."""
        ...


class WebhookDeliveries(Protocol):
    """One delivery per (endpoint, event, generation), claimed attempt by attempt under a lease,
    and every attempt's row (store/webhooks.py)."""

    async def page(
        self, workspace_id: str, endpoint_id: str, after: Position | None, page_size: int
    ) -> AttemptPage:
        """The endpoint's attempts newest first (ties by id), after `after`."""
        ...

    async def backlog(self) -> int:
        """Operator scope: how many deliveries are pending (neither delivered nor failed), every
        workspace together (the `wsapi_webhook_backlog` metric, read when the metrics listener
        is scraped; an index count)."""
        ...
