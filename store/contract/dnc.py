"""The request path of the do-not-call family: the workspace's suppression list (store.contract;
the rules are store/dnc.py's)."""

from __future__ import annotations

from typing import Protocol

from store.paging import Page, Window


class DoNotCall(Protocol):
    """Phone numbers and emails no one of the workspace may be dialled at."""

    async def add(self, workspace_id: str, entries: list[dict], reason: str | None) -> list[dict]:
        """Put entries ({"phoneNumber"} or {"email"}, normalised as contact matching does) on
        the list, with the prospects they make do-not-call and the events of both, in one unit
        of work that a contact upload never interleaves with. Per entry {"index", "entry",
        "outcome": "added"|"existing"}. store.dnc.UnreadablePhone, before anything is written,
        for a phone number that cannot be read."""
        ...

    async def remove(self, workspace_id: str, entry_id: str) -> bool:
        """Take an entry off the list, with the prospects it no longer suppresses and the
        events; whether the workspace had it."""
        ...

    async def page(
        self,
        workspace_id: str,
        window: Window,
        *,
        phone: str | None = None,
        email: str | None = None,
    ) -> Page:
        """One keyset window of entries, newest first; with `phone` or `email` only the entry
        of that number or address (normalised as stored)."""
        ...

    async def is_listed(self, workspace_id: str, phone: str | None, email: str | None) -> bool:
        """Whether the E.164 `phone` or the normalised `email` is on the list."""
        ...
