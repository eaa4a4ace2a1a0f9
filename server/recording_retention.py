"""The recording retention sweep: a background task of every serving process that deletes the
recordings of calls that ended longer ago than their workspace's retention
(`recording_retention_days`, or the workspace's own `recordingRetentionDays` setting:
store/retention.py), first at the provider, then here.

Each round, for every workspace whose retention is above 0, it claims the due calls through
the store in bounded batches (a claim is a lease: of several processes sharing a database, one
deletes a given recording, and a process that dies lets its claims lapse for another to take
over), asks the provider to delete each recording (`UpstreamClient.delete_recording`: 204 or
404 is gone), and only then removes the stored reference (`hasRecording` false, `updatedAt`
moves, a `call.updated` event). A provider failure leaves the call as it was, due again after a
backoff that doubles from a minute up to six hours.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import random

from server.background import Background, cancelling
from server.config import Config
from store.clock import Clock
from store.contract import Store
from store.errors import StoreError
from store.retention import DueRecording, retention_days, retry_delay
from telephony.errors import UpstreamError, UpstreamNotFound
from telephony.upstream import UpstreamClient

log = logging.getLogger("workspace_api")

BATCH = 50  # calls claimed at once per workspace
MAX_BATCHES = 20  # per workspace and round: the rest waits for the next round
CONCURRENCY = 5  # provider deletes in flight at once
# A claim outlasts a batch's deletes even when every one of them times out (connect and
# header timeouts, BATCH / CONCURRENCY deep), so that no other process takes it meanwhile.
LEASE = dt.timedelta(minutes=10)


@dataclasses.dataclass
class Round:
    """What one round did: recordings deleted (provider and reference), provider failures."""

    deleted: int = 0
    failed: int = 0


class RecordingRetention(Background):
    def __init__(
        self,
        store: Store,
        upstream: UpstreamClient,
        default_days: float,
        interval: float,
        *,
        batch: int = BATCH,
        max_batches: int = MAX_BATCHES,
        lease: dt.timedelta = LEASE,
        clock: Clock | None = None,
    ) -> None:
        self.store = store
        self.upstream = upstream
        self.default_days = default_days
        self.interval = interval
        self.batch = batch
        self.max_batches = max_batches
        self.lease = lease
        self.clock = clock or store.clock
        self._limit = asyncio.Semaphore(CONCURRENCY)

    @classmethod
    def from_config(
        cls, store: Store, upstream: UpstreamClient | None, config: Config
    ) -> RecordingRetention | None:
        """The sweep of a serving process; None without a provider to delete at (a warning
        when recording retention is configured all the same)."""
        if upstream is None:
            if config.recording_retention_days > 0:
                log.warning(
                    "recording_retention_days is %g but no provider_url is set: recordings "
                    "are not deleted",
                    config.recording_retention_days,
                )
            return None
        return cls(store, upstream, config.recording_retention_days, config.expiry_sweep_seconds)

    async def sweep(self) -> Round:
        """One round now, over every workspace with a retention above 0."""
        done = Round()
        now = self.clock.now()
        for workspace in await self.store.workspaces.list():
            days = retention_days(workspace, self.default_days)
            if days > 0:
                await self._workspace(workspace["id"], now - dt.timedelta(days=days), now, done)
        return done

    async def _workspace(
        self, workspace_id: str, ended_before: dt.datetime, now: dt.datetime, done: Round
    ) -> None:
        for _ in range(self.max_batches):
            claims = await self.store.calls.claim_expired_recordings(
                workspace_id, ended_before, now, self.lease, self.batch
            )
            results = await asyncio.gather(*(self._delete(workspace_id, due) for due in claims))
            deleted = sum(results)
            done.deleted += deleted
            done.failed += len(results) - deleted
            if deleted < len(results):
                log.warning(
                    "recording retention: the provider failed %d of %d deletes in workspace %s; "
                    "they are retried later",
                    len(results) - deleted,
                    len(results),
                    workspace_id,
                )
            if len(claims) < self.batch:
                return

    async def _delete(self, workspace_id: str, due: DueRecording) -> bool:
        """Delete one recording at the provider, then its reference; whether both happened."""
        async with self._limit:
            try:
                await self.upstream.delete_recording(due.ref)
            except (UpstreamError, UpstreamNotFound):
                # UpstreamNotFound: a reference the client refuses to send (never stored by the
                # API, which keeps provider SIDs only); never taken for a confirmed delete.
                until = self.clock.now() + retry_delay(due.attempts + 1)
                await self.store.calls.postpone_recording(workspace_id, due, until)
                return False
        await self.store.calls.forget_recording(workspace_id, due)
        return True

    async def _run(self) -> None:
        while not cancelling():
            # Jittered, so that the processes sharing a database do not all sweep at once.
            await asyncio.sleep(self.interval * random.uniform(0.8, 1.2))
            if not self.store.indexes_ready:
                continue
            try:
                done = await self.sweep()
            except StoreError as exc:
                log.warning("recording retention failed (%s); next in %g s", exc, self.interval)
                continue
            except Exception:
                log.exception("recording retention failed; next in %g s", self.interval)
                continue
            if done.deleted:
                log.info("recording retention deleted %d recordings", done.deleted)
