"""The request path of the prospects family (store.contract)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncGenerator
from typing import Protocol

from store.exports import Batch
from store.idempotency import IdempotentWrite
from store.paging import Page, Window
from store.prospects import Contact, Upload


class Prospects(Protocol):
    """Prospects: contact matching on upload (store/prospects.py), reads by page and lookup."""

    def parse_contact(self, raw: dict) -> Contact: ...

    def normalize_phone(self, value: str) -> str | None:
        """A phone number as stored and matched (E.164), or None when it cannot be read."""
        ...

    async def add_to_list(
        self,
        workspace_id: str,
        listing: dict,
        raw_contacts: list[dict],
        once: IdempotentWrite | None = None,
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
        once: IdempotentWrite | None = None,
    ) -> list[dict]:
        """Match or create a prospect for each contact with the upload's rules, adding none to
        a list (the prospects import); each contact's outcome (store.prospects.outcomes)."""
        ...

    async def count_in_list(self, workspace_id: str, list_id: str) -> int: ...

    async def page(
        self,
        workspace_id: str,
        window: Window,
        *,
        list_id: str | None = None,
        email: str | None = None,
        phone: str | None = None,
        updated_since: dt.datetime | None = None,
        do_not_call: bool | None = None,
        encoded: bool = False,
        include_deleted: bool = False,
    ) -> Page:
        """One window of prospects; with `include_deleted`, deleted prospects too, as
        tombstones (store/tombstones.py)."""
        ...

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
        do_not_call: bool | None = None,
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

    async def update(
        self, workspace_id: str, prospect_id: str, fields: dict
    ) -> tuple[dict, bool] | None:
        """PATCH /prospects/{id} (store/prospect_changes.py): the live prospect as it is after
        the change of `fields` (contact fields and ownerUserId; None clears) and whether it
        changed anything (then updatedAt moved and `prospect.updated` is recorded); None when
        there is no live prospect with this id. Raises UnreadablePhone, NoContactLeft and
        ProspectExists (store.prospect_changes); the owner is the caller's to check."""
        ...

    async def delete(self, workspace_id: str, prospect_id: str) -> bool | None:
        """DELETE /prospects/{id}: leave the tombstone store/tombstones.py describes, take the
        prospect out of its lists (`list.updated`), delete its timeline, record
        `prospect.deleted`. True when it deleted it, False when it was deleted already (its
        tombstone is kept), None when there never was such a prospect."""
        ...
