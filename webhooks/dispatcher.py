"""The webhook dispatcher: the asyncio loop every API process runs (started with the app, like
the event sweep), which pushes the change events to the workspaces' webhook endpoints.

Every `poll` seconds a task of its own claims the endpoints whose fan-out is due (a lease per
endpoint) and, for each, reads the events feed after the endpoint's position (it has no settle
period), inserts one delivery per event (idempotently) and then moves the position; a `recover`
is worked off the same way, in its own generation, up to that position. Beside it (so that a
backlog being fanned out, a recover or a burst of events, never holds up the deliveries already
waiting), whenever attempt slots are free (and whenever an attempt ends) it claims due
deliveries, at most `max_in_flight` held at once in this process and `per_endpoint` in flight
per endpoint across every process (the store counts the leases), and sends them with up to
`per_endpoint` senders per endpoint, each a task that sends the endpoint's claimed deliveries
one after another: a slow receiver holds its own slots, never the loop, another endpoint or a
request. Of an endpoint no other process is sending to, it claims up to AHEAD_ROUNDS times
`per_endpoint` more than it sends at once, and a sender sends the next as soon as its attempt
ends, so that the claim's write overlaps the attempts instead of standing between them
(store.webhooks.allowance); it claims again when an endpoint it sends to has fewer than
CLAIM_BELOW_ROUNDS times `per_endpoint` waiting (or a poll period has passed), so each claim
takes about a round per endpoint and lands before its senders run dry; claims it does not start
(its endpoint disabled meanwhile, its lease too short for an attempt, the process stopping) are
given back at once. An attempt's outcome decides what follows: a 2xx is delivered; anything
else is tried again on the retry schedule (webhooks/schedule.py) and, past its last step,
fails; a 410 disables the endpoint, and so does a run of failures longer than `disable_after`.

The store's leases make each attempt the work of one process; a process that dies mid-attempt
leaves it due again when its lease ends, so every event is sent at least once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime as dt
import functools
import logging
import random
import time
from collections.abc import Callable, Sequence

from store.clock import Clock, new_id
from store.contract import Store
from store.errors import StoreError
from store.events import StoredEvent, instant_of
from store.paging import Position
from store.webhooks import GONE, Attempt, Claim, FanoutClaim
from webhooks import signing
from webhooks.schedule import RETRY_AFTER_STATUSES, next_delay
from webhooks.transport import Outcome, Transport, outcome_kind

log = logging.getLogger("workspace_api")

MAX_IN_FLIGHT = 64  # claims held at once in one process, every endpoint together
# Of an endpoint it is alone with, a process claims up to this many rounds of `per_endpoint`
# beyond the attempts it sends at once, and claims again once fewer than CLAIM_BELOW_ROUNDS
# rounds are left waiting: a claim's write (a few ms while the loop and the writer share the
# GIL) then ends while its senders still have a round to send, so they never wait for it
# (docs/performance.md, P10a); each claim takes about a round per endpoint in one write.
AHEAD_ROUNDS = 3
CLAIM_BELOW_ROUNDS = 2
FANOUT_BATCH = 20  # endpoints a process claims for fan-out at once
PAGES_PER_FANOUT = 10  # pages of events an endpoint's fan-out reads before taking turns
PAGE_SIZE = 100
RETENTION_MARGIN = dt.timedelta(hours=1)


class Dispatcher:
    def __init__(
        self,
        store: Store,
        transport: Transport,
        *,
        schedule: Sequence[float],
        settle: dt.timedelta,
        poll: float = 0.5,
        lease: dt.timedelta = dt.timedelta(seconds=60),
        per_endpoint: int = 4,
        disable_after: dt.timedelta = dt.timedelta(hours=120),
        retention: dt.timedelta = dt.timedelta(days=30),
        retention_interval: float = 60.0,
        max_in_flight: int = MAX_IN_FLIGHT,
        ahead: int | None = None,
        rand: random.Random | None = None,
        observe: Callable[[str, float | None], None] | None = None,
        clock: Clock | None = None,
    ) -> None:
        # Its instants (settle horizons, leases, retry schedules, signatures) come from `clock`,
        # the store's by default; the pace of its loop is the event loop's.
        self.clock = clock or store.clock
        # Told each attempt's outcome (transport.outcome_kind) and, when delivered, the seconds
        # since its event was recorded (the metrics of server.metrics).
        self.observe = observe
        self.store = store
        self.transport = transport
        self.schedule = tuple(schedule)
        self.settle = settle
        self.poll = poll
        self.lease = lease
        self.per_endpoint = per_endpoint
        self.disable_after = disable_after
        self.retention = retention
        self.retention_interval = retention_interval
        self.max_in_flight = max_in_flight
        self.rand = rand or random.Random()
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the one it runs on, once started
        self.owner = new_id()  # the first part of this dispatcher's lease tokens
        self.ahead = AHEAD_ROUNDS * per_endpoint if ahead is None else ahead
        # An attempt starts only with this much of its lease left (it ends within the timeout).
        self.lease_needed = dt.timedelta(seconds=transport.timeout)
        self._senders: set[asyncio.Task] = set()  # one per attempt in flight
        self._running: collections.Counter[str] = collections.Counter()  # per endpoint
        self._queued: dict[str, collections.deque[Claim]] = {}  # claimed, waiting to start
        self._release: list[Claim] = []  # claimed, never to be started: to give back
        self._stopping = False
        self._done: list[tuple[Claim, Attempt]] = []  # outcomes to record, in one batch
        self._disable: list[tuple[Claim, str, dt.datetime]] = []
        self._wake = asyncio.Event()
        self._claimed = False  # whether the last dispatch() claimed
        self._added = False  # whether a fan-out added deliveries since the last claim
        self._halt = asyncio.Event()  # set by stop()

    def start(self) -> Dispatcher:
        self._task = asyncio.ensure_future(self._run())
        self._loop = self._task.get_loop()
        return self

    async def stop(self, timeout: float = 10.0) -> None:
        """Stop claiming; let the attempts in flight end within `timeout` (then cancel them:
        their leases run out and another process, or the next start, sends them again).

        The loop is not cancelled in the middle of a step: a fan-out or a claim cut short would
        leave what it had claimed (an endpoint's fan-out, its delivery slots) to the end of its
        lease, and the next start would wait that long. It ends after the step under way, and
        is cancelled only when that outlasts `timeout` (a fan-out cut short then gives its
        claims back, `fan_out`)."""
        self._stopping = True
        self._halt.set()
        if self._task is not None:
            self._wake.set()
            done, _ = await asyncio.wait({self._task}, timeout=timeout)
            if not done:
                self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for queue in self._queued.values():
            self._release.extend(queue)
        self._queued.clear()
        if self._senders:
            _, pending = await asyncio.wait(set(self._senders), timeout=timeout)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
        with contextlib.suppress(StoreError):
            await self.record()
        await self.transport.close()

    async def _run(self) -> None:
        # The fan-out runs beside the claims and attempts: a backlog being turned into
        # deliveries (a recover, a burst of events) never holds up the claims of the
        # deliveries already waiting; their writes take turns in the store.
        await asyncio.gather(self._claim_loop(), self._fan_out_loop())

    async def _claim_loop(self) -> None:
        swept_at = claimed_at = -float("inf")
        # Until stop(): its flag as well as its cancellation, which a database driver that
        # swallows a CancelledError (or turns it into an error of its own) could lose.
        while not self._stopping:
            if self.store.indexes_ready:
                try:
                    # New deliveries, or a poll period since the last claim: claim whatever
                    # the endpoints have waiting (else only for an endpoint that runs low).
                    added, self._added = self._added, False
                    await self.dispatch(added or time.monotonic() - claimed_at >= self.poll)
                    if self._claimed:
                        claimed_at = time.monotonic()
                    if self._stopping:
                        break
                    if time.monotonic() - swept_at >= self.retention_interval:
                        swept_at = time.monotonic()
                        await self.store.webhook_deliveries.delete_expired(
                            self.clock.now() - self.retention - RETENTION_MARGIN
                        )
                except StoreError as exc:
                    log.warning("webhook dispatch failed (%s); next in %g s", exc, self.poll)
                except Exception:
                    log.exception("webhook dispatch failed; next in %g s", self.poll)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll):
                    await self._wake.wait()
            self._wake.clear()

    async def _fan_out_loop(self) -> None:
        """A fan-out every `poll` seconds (at once after one that took longer)."""
        while not self._stopping:
            started = time.monotonic()
            if self.store.indexes_ready:
                try:
                    await self.fan_out()
                except StoreError as exc:
                    log.warning("webhook fan-out failed (%s); next in %g s", exc, self.poll)
                except Exception:
                    log.exception("webhook fan-out failed; next in %g s", self.poll)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(0.0, self.poll - (time.monotonic() - started))):
                    await self._halt.wait()

    # -- fan-out: events to deliveries ---------------------------------------------------------
    async def fan_out(self) -> int:
        """Turn the new events of every due endpoint into deliveries; how many."""
        claims = await self.store.webhook_endpoints.claim_fanout(
            self.clock.now(), self.lease, FANOUT_BATCH
        )
        added, left = 0, list(claims)
        try:
            while left:
                added += await self._fan_out(left[0])
                left.pop(0)
        except asyncio.CancelledError:
            # Cut short (stop outlasted its timeout): the claims not given back yet are, due
            # now, so that the next start or another process goes on at once, not after the
            # lease. The position each holds is where its inserts got to (_fan_out).
            with contextlib.suppress(StoreError):
                for claim in left:
                    await self.store.webhook_endpoints.release_fanout(claim, self.clock.now())
            raise
        if added:
            self._added = True  # the claim loop claims at once, not only for a hungry endpoint
            self._wake.set()
        return added

    async def _fan_out(self, claim: FanoutClaim) -> int:
        store, added, more = self.store, 0, False
        position = claim.position
        # The instant it looks from: the settle horizon (on SQLite how far a caught-up position
        # moves while nothing happens), and the next look a poll after it (a clock that moves
        # meanwhile cannot push the next look past the moment it moved to).
        looked = self.clock.now()
        settled = looked - self.settle
        for _ in range(PAGES_PER_FANOUT):
            page = await store.events.page(
                claim.workspace_id, position, settled, PAGE_SIZE, claim.event_types
            )
            more = page.has_more
            if not page.events:
                break  # nothing new: the position stays (a page after it costs the same)
            added += await store.webhook_deliveries.add(
                claim.workspace_id, claim.endpoint_id, 0, page.events, self.clock.now()
            )
            # After the inserts: a fan-out that dies in between inserts the same ids again.
            position = page.resume(position)
            if not await store.webhook_endpoints.advance(claim, position):
                return added  # the claim was lost (it outlived its lease): another holds it
            if not more:
                break
        if claim.recover_from is not None and not more:
            recovered, more = await self._recover(claim, position)
            added += recovered
        next_at = looked + (dt.timedelta(0) if more else dt.timedelta(seconds=self.poll))
        await store.webhook_endpoints.release_fanout(claim, next_at)
        return added

    async def _recover(self, claim: FanoutClaim, position: Position) -> tuple[int, bool]:
        """Deliveries of the claim's generation for the events from its recovery's start up to
        `position` (what came after is the ordinary fan-out's); (how many, whether more)."""
        store, added = self.store, 0
        start = claim.recover_from
        assert start is not None
        end = (position.value, position.id)
        for _ in range(PAGES_PER_FANOUT):
            page = await store.events.page(
                claim.workspace_id, start, position.value, PAGE_SIZE, claim.event_types
            )
            events: list[StoredEvent] = [e for e in page.events if e.key <= end]
            added += await store.webhook_deliveries.add(
                claim.workspace_id, claim.endpoint_id, claim.generation, events, self.clock.now()
            )
            if len(events) < len(page.events) or not page.has_more:
                await store.webhook_endpoints.advance_recovery(claim, None)
                return added, False
            start = events[-1].position
            if not await store.webhook_endpoints.advance_recovery(claim, start):
                return added, False  # another `recover` started: the next fan-out does it
        return added, True

    # -- attempts -----------------------------------------------------------------------------
    async def dispatch(self, due: bool = True) -> int:
        """Record the outcomes of the attempts that ended since the last time and claim due
        deliveries for the free slots (one write unit on SQLite; an outcome that disables its
        endpoint is recorded, and the endpoint disabled, before the claim), then start what
        each endpoint's in-flight limit allows; how many were claimed. Unless `due` (new
        deliveries, or a poll period since the last claim), it claims only when an endpoint it
        sends to has fewer than CLAIM_BELOW_ROUNDS rounds of claims waiting (`hungry`): its
        senders would run dry before a later claim ended."""
        self._claimed = False
        free = self.max_in_flight - self.held
        if free <= 0 or self._disable or self._release:
            await self.record()  # an endpoint to disable is disabled before the next claim
            if free <= 0:
                return 0
        if not due and not self.hungry:
            return 0
        self._claimed = True
        done, self._done = self._done, []
        claims = await self.store.webhook_deliveries.claim(
            self.clock.now(),
            self.lease,
            free,
            self.per_endpoint,
            done,
            owner=self.owner,
            ahead=self.ahead,
        )
        for claim in claims:
            self._queued.setdefault(claim.endpoint_id, collections.deque()).append(claim)
        for endpoint_id in {claim.endpoint_id for claim in claims}:
            self._start(endpoint_id)
        return len(claims)

    @property
    def hungry(self) -> bool:
        """Whether a claim is worth its write now: nothing is waiting, or some endpoint being
        sent to has fewer claims waiting than CLAIM_BELOW_ROUNDS rounds of its attempts."""
        if not self._queued:
            return True
        low = CLAIM_BELOW_ROUNDS * self.per_endpoint
        return any(len(self._queued.get(e, ())) < low for e in self._running)

    @property
    def held(self) -> int:
        """Claims this process holds: attempts in flight (a sender each) and claims waiting."""
        return len(self._senders) + sum(len(queue) for queue in self._queued.values())

    def _start(self, endpoint_id: str) -> None:
        """Start senders for the endpoint's waiting claims while its in-flight limit allows."""
        waiting = len(self._queued.get(endpoint_id, ()))
        assert self._loop is not None  # claims are made by the started loop
        while waiting > 0 and self._running[endpoint_id] < self.per_endpoint:
            waiting -= 1
            self._running[endpoint_id] += 1
            task = self._loop.create_task(self._send(endpoint_id))
            self._senders.add(task)
            task.add_done_callback(functools.partial(self._ended, endpoint_id))

    async def _send(self, endpoint_id: str) -> None:
        """One of the endpoint's slots: its waiting claims one attempt after another, the next
        one sent as soon as the previous one ends (no task or callback in between), until
        none waits."""
        while not self._stopping and (queue := self._queued.get(endpoint_id)):
            claim = queue.popleft()
            if not queue:
                del self._queued[endpoint_id]
            if claim.until - self.clock.now() < self.lease_needed:  # it could outlive its lease
                self._release.append(claim)
            else:
                await self._attempt(claim)
            # The loop is woken when this attempt gives it work now: a claim to give back or
            # an endpoint to disable, or this endpoint running low (a claim, which also records
            # the outcomes; others wait for it, or for the poll period). Waking it after every
            # attempt cost a turn of the loop per delivery for the few that claim.
            if (
                self._release
                or self._disable
                or len(self._queued.get(endpoint_id, ())) < CLAIM_BELOW_ROUNDS * self.per_endpoint
            ):
                self._wake.set()

    def _ended(self, endpoint_id: str, task: asyncio.Task) -> None:
        self._senders.discard(task)
        self._running[endpoint_id] -= 1
        if self._running[endpoint_id] <= 0:
            del self._running[endpoint_id]
        if not self._stopping:  # claims that came while it was leaving
            self._start(endpoint_id)

    async def record(self) -> None:
        """Record the outcomes of the attempts that ended since the last time, in one batch
        (if that fails, their leases run out and the deliveries are tried again), give back the
        claims that will not be started, then disable the endpoints the outcomes condemned."""
        done, self._done = self._done, []
        if done:
            await self.store.webhook_deliveries.finish(done)
        release, self._release = self._release, []
        if release:
            await self.store.webhook_deliveries.release(release, self.clock.now())
        disable, self._disable = self._disable, []
        await self._disable_endpoints(disable)

    async def _disable_endpoints(self, disable: list[tuple[Claim, str, dt.datetime]]) -> None:
        for claim, reason, at in disable:
            await self.store.webhook_endpoints.disable(
                claim.workspace_id, claim.endpoint_id, reason, at
            )
            log.info("webhook endpoint %s disabled: %s", claim.endpoint_id, reason)

    async def _attempt(self, claim: Claim) -> None:
        body = claim.event.encode()
        at = self.clock.now()
        headers = signing.headers(claim.secrets, claim.event_id, int(self.clock.time()), body)
        outcome = await self.transport.post(claim.url, body, headers)
        self._outcome(claim, at, outcome)

    def _outcome(self, claim: Claim, at: dt.datetime, outcome: Outcome) -> None:
        code = outcome.status_code
        delivered = outcome.error is None and code is not None and 200 <= code < 300
        ended = self.clock.now()
        disable = None
        if code == 410:
            disable = GONE
        elif (
            not delivered
            and claim.failing_since is not None
            and ended - claim.failing_since >= self.disable_after
        ):
            hours = self.disable_after / dt.timedelta(hours=1)
            disable = f"every attempt failed for {hours:g} hours"
        next_at = None
        if not delivered and disable is None:
            retry_after = outcome.retry_after if code in RETRY_AFTER_STATUSES else None
            delay = next_delay(self.schedule, claim.attempt, retry_after, self.rand)
            if delay is not None:
                next_at = ended + dt.timedelta(seconds=delay)
        attempt = Attempt(
            at=at,
            status_code=code,
            duration_ms=outcome.duration_ms,
            error=None if delivered else _reason(outcome, disable),
            next_attempt_at=next_at,
            delivered=delivered,
        )
        self._done.append((claim, attempt))
        if self.observe is not None:
            lag = (ended - instant_of(claim.event_id)).total_seconds() if delivered else None
            self.observe(outcome_kind(outcome), lag)
        if disable is not None:
            self._disable.append((claim, disable, ended))
            self._release.extend(self._queued.pop(claim.endpoint_id, ()))


def _reason(outcome: Outcome, disabled: str | None) -> str:
    """The attempt's short `error` (the transport's fixed phrase: never the receiver's response
    body, nor an address), and whether the attempt disabled the endpoint."""
    reason = outcome.error or f"http {outcome.status_code}"
    return f"{reason}; the endpoint is disabled: {disabled}" if disabled else reason
