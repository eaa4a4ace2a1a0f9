"""How the provider's callbacks become calls, composed once on top of the store contract: the
same `calls.record` and `calls.change` that `POST /v1/calls` and `PATCH /v1/calls/{id}` use
(so totals, metrics, timeline, sync order, events and webhooks are theirs), and the call's
state between callbacks (`provider_calls`).

Every step is idempotent, so a callback sent twice, or again after the process died between
two of its steps, ends in the same place: a final status records the call by its CallSid
(`providerCallSid`), a call already recorded is `existing`, and a recording is attached by a
change that changes nothing the second time. A recording and its call's final status may
arrive at once: each callback writes its own part first and then looks for the other's, so at
least one of them attaches the recording.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING

from store.clock import SYSTEM_CLOCK, Clock
from store.ingest import EXISTING, Recorded, Refused, sid_call_id
from store.provider_calls import (
    FINAL,
    PROGRESS,
    REFUSED_FIELD_REASONS,
    canonical_call_sid,
    new_call,
    provider_instant,
    seconds,
)
from store.provider_calls import final_status as kept_final

if TYPE_CHECKING:
    from store.contract import Store

Form = Mapping[str, str]


class Unresolvable(Exception):
    """A call kept aside that a userId cannot record: its numbers cannot be read."""


class CallbackFlow:
    """Applies the provider's callbacks of one service to the store."""

    def __init__(self, store: Store, pending_days: float, clock: Clock = SYSTEM_CLOCK) -> None:
        self.store = store
        self.clock = clock
        self.keep_for = dt.timedelta(days=pending_days)

    async def status(self, workspace_id: str, form: Form, query: Form) -> None:
        """A status callback: progress remembered, a final status recorded or kept aside."""
        now = self.clock.now()
        sid = canonical_call_sid(form["CallSid"])
        status = form["CallStatus"]
        calls = self.store.provider_calls
        if status in PROGRESS:
            at = provider_instant(form.get("Timestamp"), now)
            await calls.progress(
                workspace_id,
                sid,
                initiated_at=at if status == "initiated" else None,
                answered_at=at if status == "in-progress" else None,
                expires_at=now + self.keep_for,
            )
            return
        if status not in FINAL:
            return  # a status the service does not use (queued): nothing to remember
        final = kept_final(form, query, now)
        state = await calls.get(workspace_id, sid)
        if state is not None and state["callId"] is not None:
            await self._attach(workspace_id, sid, state["callId"])  # a repeated final status
            return
        user_id = final["userId"]
        if user_id is None:
            await self._keep(workspace_id, sid, final, "missing_user", now)
            return
        call = new_call(final, state, sid, user_id, self.store.prospects.normalize_phone)
        if call is None:
            await self._keep(workspace_id, sid, final, "unreadable_number", now)
            return
        try:
            recorded = await self.store.calls.record(workspace_id, [call])
        except Refused as exc:
            if exc.refusal.code == "call_exists" and exc.refusal.call_id:
                # Recorded already (by the dialer itself, or from other progress instants).
                await self._settled(workspace_id, sid, exc.refusal.call_id, now)
                return
            reason = REFUSED_FIELD_REASONS[exc.refusal.field]
            await self._keep(workspace_id, sid, final, reason, now)
            return
        assert recorded[0].call is not None
        await self._settled(workspace_id, sid, recorded[0].call["id"], now)

    async def recording(self, workspace_id: str, form: Form) -> None:
        """A recording callback: a completed recording attached to its call, or held until
        the call is recorded; `absent` and `failed` change nothing."""
        if form.get("RecordingStatus") != "completed":
            return
        now = self.clock.now()
        sid = canonical_call_sid(form["CallSid"])
        recording_sid = canonical_call_sid(form["RecordingSid"])
        await self.store.provider_calls.hold_recording(
            workspace_id,
            sid,
            recording_sid,
            seconds(form.get("RecordingDuration")),
            now + self.keep_for,
        )
        call_id = sid_call_id(workspace_id, sid)
        if await self.store.calls.get(workspace_id, call_id) is not None:
            await self._attach(workspace_id, sid, call_id)

    async def resolve(self, workspace_id: str, call_sid: str, user_id: str) -> Recorded | None:
        """Record a call kept aside, for `user_id`; None when no such call is kept (or known).
        Raises Refused (the userId, or the callback's prospectId or listId, cannot be used) or
        Unresolvable."""
        now = self.clock.now()
        sid = canonical_call_sid(call_sid)
        state = await self.store.provider_calls.get(workspace_id, sid)
        if state is None:
            return None
        if state["callId"] is not None:
            found = await self.store.calls.get(workspace_id, state["callId"])
            return Recorded(found, EXISTING) if found is not None else None
        if state["final"] is None:
            return None
        call = new_call(state["final"], state, sid, user_id, self.store.prospects.normalize_phone)
        if call is None:
            raise Unresolvable("the call's numbers cannot be read")
        try:
            recorded = await self.store.calls.record(workspace_id, [call])
        except Refused as exc:
            if exc.refusal.code != "call_exists" or not exc.refusal.call_id:
                raise
            await self._settled(workspace_id, sid, exc.refusal.call_id, now)
            found = await self.store.calls.get(workspace_id, exc.refusal.call_id)
            return Recorded(found, EXISTING)
        one = recorded[0]
        assert one.call is not None
        await self.store.provider_calls.settle(
            workspace_id, sid, one.call["id"], now + self.keep_for
        )
        changed = await self._attach(workspace_id, sid, one.call["id"])
        if changed is not None:
            one.call = changed
        return one

    async def _keep(
        self, workspace_id: str, sid: str, final: dict, reason: str, now: dt.datetime
    ) -> None:
        await self.store.provider_calls.keep_pending(
            workspace_id, sid, final, reason, now, now + self.keep_for
        )

    async def _settled(self, workspace_id: str, sid: str, call_id: str, now: dt.datetime) -> None:
        await self.store.provider_calls.settle(workspace_id, sid, call_id, now + self.keep_for)
        await self._attach(workspace_id, sid, call_id)

    async def _attach(self, workspace_id: str, sid: str, call_id: str) -> dict | None:
        """The held recording, if any, attached to the call (as PATCH /v1/calls/{id} does);
        the call as it is then, or None when no recording is held."""
        state = await self.store.provider_calls.get(workspace_id, sid)
        if state is None or state["recordingSid"] is None:
            return None
        changes = {
            "recordingRef": state["recordingSid"],
            "recordingDurationSeconds": state["recordingDurationSeconds"],
        }
        return await self.store.calls.change(workspace_id, call_id, changes)
