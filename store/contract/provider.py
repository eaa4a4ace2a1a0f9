"""The request path of the provider-callback family (store.contract): what is remembered of a
call the telephony provider reports, between its callbacks."""

from __future__ import annotations

import datetime as dt
from typing import Protocol


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
