"""Loops beside the requests stop when asked even when a database call swallows the
cancellation or turns it into an error of its own (as some driver versions do): the expiry
sweep, the webhook dispatcher and the recording retention sweep, each stopped while such a call
is under way."""

from __future__ import annotations

import asyncio

from server.expiry import ExpirySweeper
from server.webhook_dispatch import dispatcher
from store.errors import StoreUnavailable
from tests.helpers import wait_for


class Swallowing:
    """A store call that takes a while and, when cancelled, raises a store error instead."""

    def __init__(self, seconds: float = 0.2) -> None:
        self.seconds = seconds
        self.calls = 0
        self.swallowed = 0

    async def __call__(self, *args, **kwargs):
        self.calls += 1
        try:
            await asyncio.sleep(self.seconds)
        except asyncio.CancelledError:
            self.swallowed += 1
            raise StoreUnavailable("the driver lost the cancellation") from None
        return 0


async def stop_within(stop, seconds: float = 3.0) -> None:
    async with asyncio.timeout(seconds):
        await stop()


async def test_the_expiry_sweep_stops_when_its_database_call_swallows_the_cancel(store):
    swallowing = Swallowing()
    store.sweep_expired = swallowing
    sweeper = ExpirySweeper(store, interval=0.01).start()
    await wait_for(lambda: swallowing.calls > 0, what="the database call")
    await stop_within(sweeper.stop)
    assert swallowing.swallowed == 1


async def test_the_webhook_dispatcher_stops_when_its_database_call_swallows_the_cancel(
    store, config
):
    swallowing = Swallowing(seconds=60)
    store.webhook_endpoints.claim_fanout = swallowing
    running = dispatcher(store, config).start()
    await wait_for(lambda: swallowing.calls > 0, what="the database call")
    # The call outlasts stop's timeout (60 s against 0.05 s), so the loop is cancelled in it
    # (a step that ends within the timeout is let end: tests/webhooks/test_delivery.py).
    await stop_within(lambda: running.stop(0.05))
    assert swallowing.swallowed == 1


async def test_the_recording_retention_sweep_stops_when_its_database_call_swallows_the_cancel(
    store,
):
    from server.recording_retention import RecordingRetention
    from telephony.upstream import UpstreamClient

    swallowing = Swallowing()
    store.workspaces.list = swallowing
    upstream = UpstreamClient("http://127.0.0.1:9", "AC1", "token")
    sweeper = RecordingRetention(store, upstream, 30, interval=0.01).start()
    await wait_for(lambda: swallowing.calls > 0, what="the database call")
    await stop_within(sweeper.stop)
    assert swallowing.swallowed == 1
