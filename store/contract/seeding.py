"""Seeding and bulk loading: the writes that put history into a store without the request
path's rules (the demo, the benchmarks, tests). Handlers never see these Protocols
(tests/test_layout.py checks that handlers/ imports none of them)."""

from __future__ import annotations

import datetime as dt
from contextlib import AbstractAsyncContextManager
from typing import Protocol, Unpack

from store.calls import CallFields


class UserSeeding(Protocol):
    """Users written as given, without the email check (seeding, bulk loads, tests)."""

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt user documents (store.records.user_document: active users), with
        their `user.created` events."""
        ...


class ProspectSeeding(Protocol):
    """Prospects written as given, without matching (seeding, bulk loads, tests)."""

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


class CallSeeding(Protocol):
    """Calls written as given (seeding, bulk loads, tests)."""

    async def create(self, workspace_id: str, **fields: Unpack[CallFields]) -> dict:
        """Record one finished call as given (store.calls.call_document's arguments), with its
        timeline entry and its events; its record."""
        ...

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt call documents, each with its `call` activity, and their events."""
        ...


class ActivitySeeding(Protocol):
    """Activities written as given (seeding, bulk loads)."""

    async def insert_documents(self, workspace_id: str, documents: list[dict]) -> None:
        """Write prebuilt activity documents (store.activities.activity_document), with their
        `activity.created` events."""
        ...


class Seeding(Protocol):
    """The store's bulk load: a first load of history that nothing reads meanwhile."""

    def bulk_load(self, defer_indexes: bool = True) -> AbstractAsyncContextManager[None]:
        """`async with store.bulk_load():` around a first load of history that nothing reads
        meanwhile (the demo's seeding): the writes inside it record no events, and with
        `defer_indexes` a backend may defer index work to its end."""
        ...
