"""The request path of the erasure family (store.contract; the rules are store/erasures.py's):
create, get, page. The worker's claims are hooks (store/contract/hooks.py `ErasureWork`)."""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from store.idempotency import IdempotentWrite
from store.paging import Page, Window


class Erasures(Protocol):
    """Requests to erase a person from a workspace (POST /v1/erasures)."""

    async def create(
        self,
        workspace_id: str,
        hashes: dict[str, str],
        prospect_ids: list[str],
        now: dt.datetime,
        once: IdempotentWrite | None = None,
    ) -> dict:
        """A new `pending` request for these prospects, keeping only the identifiers' hashes;
        its API record (the Idempotency-Key's response stored with it)."""
        ...

    async def get(self, workspace_id: str, erasure_id: str) -> dict | None:
        """One request's API record, or None."""
        ...

    async def page(self, workspace_id: str, window: Window) -> Page:
        """One keyset window of requests, newest first (requestedAt, then id)."""
        ...
