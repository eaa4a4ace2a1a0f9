"""The store's clock: naive UTC to the millisecond (BSON's precision), the same instant as the
standard library's clock."""

import datetime as dt

from store.clock import utcnow


def test_utcnow_is_naive_utc_to_the_millisecond():
    for _ in range(1000):
        before = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        now = utcnow()
        after = dt.datetime.now(dt.UTC).replace(tzinfo=None)
        assert now.tzinfo is None
        assert now.microsecond % 1000 == 0
        assert before - dt.timedelta(milliseconds=1) < now <= after


async def test_one_clock_is_handed_to_the_store_the_services_and_the_sweeps(
    store, auth, app, config, clock
):
    from server.event_sweep import EventSweeper
    from server.expiry import ExpirySweeper
    from server.webhook_dispatch import dispatcher

    at = dt.datetime(2031, 3, 9, 12, 0, 0, 250000)
    clock.set(at)
    workspace = await store.workspaces.create("Clocked")
    assert workspace["createdAt"] == at  # the store's instants
    record, _ = await auth.create(workspace["id"], "brief", expires_in=dt.timedelta(hours=1))
    assert record["createdAt"] == at and record["expiresAt"] == at + dt.timedelta(hours=1)
    assert app.settings["clock"] is clock and app.settings["rate_limiter"].clock is clock
    assert EventSweeper.from_config(store, config).clock is clock
    assert ExpirySweeper(store, 60).clock is clock
    assert dispatcher(store, config).clock is clock
    clock.advance(90)
    assert clock.now() == at + dt.timedelta(seconds=90)  # frozen: it moves only when moved
