"""The erasures' background work (POST /v1/erasures; store/erasures.py has the rules): a task
of every serving process that takes the lease of an open request, erases its prospects one unit
at a time (the store's `erase_prospect`), deletes their recordings at the provider, and ends the
request `completed` (recording `erasure.completed`) once every recording is confirmed gone. A
provider failure keeps the request `running` and gives its lease back, due again after a
backoff (store.erasures.BACKOFF). `failed` is for a request that cannot be done: a recording
reference the provider cannot take.

Any process sharing the database can do the work; a process killed mid-way leaves the request
`running` under a lease that lapses (store.erasures.LEASE), and whoever looks next carries on
from the prospects not yet done. A POST kicks the process that answered it; otherwise each
process looks every `interval` seconds. On SQLite each finished request ends with a scrub of
the write-ahead log (the store's `scrub`), so that no erased value survives in the files.
"""

from __future__ import annotations

import asyncio
import logging

from server.background import KickedWork, cancelling
from store.contract import Store
from store.erasures import COMPLETED, FAILED, ErasureClaim, backoff, lease_token
from telephony.errors import UpstreamError, UpstreamNotFound
from telephony.upstream import UpstreamClient

log = logging.getLogger("workspace_api")
RECORDING_BATCH = 20  # recordings deleted between two saves of the progress
UNUSABLE = "a recording reference the provider cannot take: delete it at the provider by hand"


class ErasureWork(KickedWork):
    what = "erasure work"

    def __init__(
        self, store: Store, upstream: UpstreamClient | None, interval: float = 5.0
    ) -> None:
        """Without `upstream` (no provider configured) recordings cannot be deleted: a request
        with recordings stays `running`, retried with backoff."""
        super().__init__(store, interval)
        self.upstream = upstream

    async def drain(self) -> int:
        """Work on due requests until none is left; how many it took."""
        taken = 0
        token = lease_token()
        while not cancelling():
            claim = await self.store.erasures.claim(self.store.clock.now(), token)
            if claim is None:
                return taken
            taken += 1
            await self.carry_out(claim)
        return taken

    async def carry_out(self, claim: ErasureClaim) -> None:
        """Erase the claimed request's prospects, delete its recordings, end it or put it off."""
        erasures = self.store.erasures
        recordings = list(claim.recordings)
        for prospect_id in claim.prospect_ids:
            left = await erasures.erase_prospect(claim, prospect_id)
            if left is None:
                return  # the lease lapsed: another worker has it
            recordings += [ref for ref in left if ref not in recordings]
        unusable, failures = False, 0
        for start in range(0, len(recordings), RECORDING_BATCH):
            batch = recordings[start : start + RECORDING_BATCH]
            # A batch's deletes go out at once: each waits on the provider, not on the others.
            outcomes = await asyncio.gather(*(self._delete(ref) for ref in batch))
            confirmed = [ref for ref, outcome in zip(batch, outcomes, strict=True) if outcome]
            unusable = unusable or any(outcome is None for outcome in outcomes)
            failures += sum(1 for outcome in outcomes if outcome is False)
            # Saved per batch (which renews the lease): a crash repeats a batch at most.
            if not await erasures.progress(claim, confirmed, {"recordings": len(confirmed)}):
                return
        now = self.store.clock.now()
        if failures:
            log.warning(
                "erasure %s: the provider did not delete %d recording(s); next try in %s",
                claim.id,
                failures,
                backoff(claim.attempts + 1),
            )
            await erasures.retry_later(claim, now + backoff(claim.attempts + 1))
            return
        if unusable:
            await erasures.finish(claim, FAILED, now, UNUSABLE)
            return
        if await erasures.finish(claim, COMPLETED, now) is not None:
            await self.store.scrub()

    async def _delete(self, ref: str) -> bool | None:
        """Delete one recording at the provider: True once it is gone, False when the provider
        failed (try again later), None for a reference it cannot take."""
        if self.upstream is None:
            return False  # no telephony provider is configured
        try:
            await self.upstream.delete_recording(ref)
        except UpstreamNotFound:
            return None
        except UpstreamError:
            return False
        return True
