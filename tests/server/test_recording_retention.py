"""The recording retention sweep (server/recording_retention.py) on this tier's store, against
the simulated provider on loopback: what it deletes (at the provider, then the reference), for
which workspaces (the configured default, a workspace's own setting), what a provider failure
does (nothing, then a retry after a backoff), and two sweepers on one database (a claim is a
lease). Time is the injected FakeClock: the tests move it, never wait for it."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

import pytest

from server.config import load_config
from server.recording_retention import LEASE, RecordingRetention
from server.services import open_services
from store.retention import RETENTION_SETTING
from telephony.simulated_provider import make_ref, start_provider
from telephony.upstream import UpstreamClient
from tests.helpers import follow_events, test_environ, wait_for

ACCOUNT_ID = "AC" + "4d" * 16
AUTH_TOKEN = "retention-secret-51c0"
SETTLE = 0.5
DAY = dt.timedelta(days=1)


@pytest.fixture
def config(tmp_path):
    """This tier's store; on the embedded tier a file of the test's own, so that a second
    store (another process's) can open the same database."""
    environ = test_environ(shared=True, WSAPI_SYNC_SETTLE_SECONDS=str(SETTLE))
    if environ["MONGODB_URI"] == "memory":
        environ.update(MONGODB_URI="", WSAPI_SQLITE_PATH=str(tmp_path / "db.sqlite3"))
    return load_config(environ=environ)


@pytest.fixture
def provider(io_loop):
    async def start():
        return await start_provider(account_id=ACCOUNT_ID, auth_token=AUTH_TOKEN)

    server = io_loop.run_sync(start)
    yield server
    io_loop.run_sync(server.stop)


@pytest.fixture
def upstream(provider) -> UpstreamClient:
    return UpstreamClient(
        provider.base_url, ACCOUNT_ID, AUTH_TOKEN, connect_timeout=2, header_timeout=5
    )


@pytest.fixture
def app_services(upstream):
    return {"upstream": upstream}


def sweeper(store, upstream, default_days: float = 30, **options) -> RecordingRetention:
    return RecordingRetention(store, upstream, default_days, interval=3600, **options)


async def recorded_call(store, workspace, ended_days_ago: float, ref: str | None = None) -> dict:
    """A call of the workspace that ended `ended_days_ago` days before the store's clock says
    now, with a recording; its record and its `ref`."""
    ended = store.clock.now() - dt.timedelta(days=ended_days_ago)
    started = ended - dt.timedelta(minutes=4)
    ref = ref or make_ref(f"{workspace.id}/{uuid.uuid4()}")
    record = await store.calls.create(
        workspace.id,
        user_id=workspace.users[0]["id"],
        prospect_id=str(uuid.uuid4()),
        direction="outbound",
        disposition="connected",
        from_number="+15550100",
        to_number="+15550199",
        started_at=started,
        answered_at=started,
        ended_at=ended,
        recording_ref=ref,
        recording_duration_seconds=240,
    )
    return {**record, "ref": ref}


async def has_recording(api, call: dict) -> bool:
    """What the API says of the call's recording: its record's flag, and that the recording
    answers (both agree, or the test fails)."""
    record = (await api.get(f"/v1/calls/{call['id']}")).json()["call"]
    head = await api.fetch(f"/v1/calls/{call['id']}/recording", "HEAD")
    assert head.code in (200, 404)
    assert record["hasRecording"] is (head.code == 200), (record, head.code)
    return record["hasRecording"]


async def test_retention_off_deletes_nothing(api, store, ws_a, provider, upstream):
    old = await recorded_call(store, ws_a, 3650)
    done = await sweeper(store, upstream, default_days=0).sweep()
    assert (done.deleted, done.failed) == (0, 0)
    assert provider.stats.requests == []
    assert await has_recording(api, old)


async def test_old_recordings_go_at_the_provider_then_here(
    api, store, ws_a, provider, upstream, clock
):
    old = await recorded_call(store, ws_a, 31)
    young = await recorded_call(store, ws_a, 29)
    assert await has_recording(api, old) and await has_recording(api, young)
    before = (await api.get(f"/v1/calls/{old['id']}")).json()["call"]
    clock.advance(1)

    done = await sweeper(store, upstream).sweep()

    assert (done.deleted, done.failed) == (1, 0)
    assert provider.stats.deleted == [old["ref"]]
    assert provider.library.get(old["ref"]) is None  # 404 at the provider from now on
    assert not await has_recording(api, old)
    assert (await api.get(f"/v1/calls/{old['id']}/recording")).code == 404
    after = (await api.get(f"/v1/calls/{old['id']}")).json()["call"]
    assert after["updatedAt"] > before["updatedAt"]
    # Nothing else about the call changes: its durations, disposition and times stay.
    unchanged = {"hasRecording", "updatedAt"}
    assert {k: v for k, v in after.items() if k not in unchanged} == {
        k: v for k, v in before.items() if k not in unchanged
    }
    assert await has_recording(api, young)

    # The change is in the events feed as a `call.updated` with the record as it is now.
    clock.advance(SETTLE + 0.2)
    events, _ = await follow_events(api, "/v1/events?type=call.updated")
    assert [event["data"] for event in events] == [after]

    # The next day the younger recording's turn comes; a round finds nothing twice.
    clock.advance(1.5 * DAY.total_seconds())
    done = await sweeper(store, upstream).sweep()
    assert (done.deleted, done.failed) == (1, 0)
    assert not await has_recording(api, young)
    assert provider.stats.deleted == [old["ref"], young["ref"]]
    done = await sweeper(store, upstream).sweep()
    assert (done.deleted, done.failed) == (0, 0)
    assert provider.stats.deletes == 2


async def test_workspace_setting_overrides_the_default(api, api_b, store, ws_a, ws_b, upstream):
    ws_c = await store.workspaces.create("Charlie")
    calls = {
        name: [await recorded_call(store, workspace, days) for days in (5, 15, 45)]
        for name, workspace in (("a", ws_a), ("b", ws_b))
    }
    # A: shorter than the default; B: the default (30); C: keeps its recordings (0).
    assert (await store.workspaces.update_settings(ws_a.id, {RETENTION_SETTING: 10}))[
        "settings"
    ] == {RETENTION_SETTING: 10}
    assert await store.workspaces.update_settings(ws_c["id"], {RETENTION_SETTING: 0})
    kept_in_c = await recorded_call(store, _Workspace(ws_c["id"], ws_a.users), 3650)

    done = await sweeper(store, upstream, default_days=30).sweep()
    assert done.deleted == 3
    assert [await has_recording(api, call) for call in calls["a"]] == [True, False, False]
    assert [await has_recording(api_b, call) for call in calls["b"]] == [True, True, False]
    assert await store.calls.recording_ref(ws_c["id"], kept_in_c["id"]) == kept_in_c["ref"]

    # B longer than the default keeps what it has; A's setting removed: the default again.
    await store.workspaces.update_settings(ws_b.id, {RETENTION_SETTING: 100})
    younger_b = await recorded_call(store, ws_b, 60)
    await store.workspaces.update_settings(ws_a.id, {RETENTION_SETTING: None})
    younger_a = await recorded_call(store, ws_a, 20)
    done = await sweeper(store, upstream, default_days=30).sweep()
    assert done.deleted == 0
    assert await has_recording(api_b, younger_b) and await has_recording(api, younger_a)
    assert (await store.workspaces.get(ws_a.id))["settings"] == {}

    # With the default off, only a workspace's own retention deletes anything.
    await store.workspaces.update_settings(ws_a.id, {RETENTION_SETTING: 1})
    done = await sweeper(store, upstream, default_days=0).sweep()
    assert done.deleted == 2  # A's two recordings older than a day (5 and 20 days)
    assert not await has_recording(api, younger_a)
    assert await has_recording(api_b, younger_b)


class _Workspace:
    def __init__(self, workspace_id: str, users: list[dict]):
        self.id, self.users = workspace_id, users


async def test_provider_failure_keeps_the_call_and_retries_with_backoff(
    api, store, ws_a, provider, upstream, clock
):
    calls = [await recorded_call(store, ws_a, 40) for _ in range(3)]
    provider.faults.set_delete("503")
    done = await sweeper(store, upstream).sweep()
    assert (done.deleted, done.failed) == (0, 3)
    assert provider.stats.deletes == 3
    for call in calls:
        assert await has_recording(api, call)  # the reference stays until the provider confirms
        assert provider.library.get(call["ref"]) is not None

    # Not again before the backoff: a minute after the first failure, two after the second.
    assert (await sweeper(store, upstream).sweep()).failed == 0
    assert provider.stats.deletes == 3
    clock.advance(61)
    assert (await sweeper(store, upstream).sweep()).failed == 3
    clock.advance(61)
    assert (await sweeper(store, upstream).sweep()).failed == 0
    assert provider.stats.deletes == 6

    # The provider recovers: the next due round deletes them all.
    provider.faults.clear()
    clock.advance(60)
    done = await sweeper(store, upstream).sweep()
    assert (done.deleted, done.failed) == (3, 0)
    assert sorted(provider.stats.deleted) == sorted(call["ref"] for call in calls)
    for call in calls:
        assert not await has_recording(api, call)
    assert all(len(provider.stats.deletes_of(call["ref"])) == 3 for call in calls)


@pytest.mark.parametrize("fault", ["500", "stall", "reset"])
async def test_every_kind_of_failure_keeps_the_reference(api, store, ws_a, provider, clock, fault):
    call = await recorded_call(store, ws_a, 40)
    fast = UpstreamClient(provider.base_url, ACCOUNT_ID, AUTH_TOKEN, header_timeout=0.3)
    provider.faults.set_delete(fault, stall_seconds=30)
    done = await sweeper(store, fast).sweep()
    assert (done.deleted, done.failed) == (0, 1)
    provider.faults.clear()
    await provider.stats.wait_idle()
    assert await has_recording(api, call)
    assert provider.library.get(call["ref"]) is not None


async def test_a_recording_already_gone_at_the_provider_is_forgotten(
    api, store, ws_a, provider, upstream
):
    call = await recorded_call(store, ws_a, 40)
    provider.library.mark_missing(call["ref"])
    done = await sweeper(store, upstream).sweep()
    assert (done.deleted, done.failed) == (1, 0)
    assert [r.status for r in provider.stats.deletes_of(call["ref"])] == [404]
    assert not await has_recording(api, call)


async def test_bounded_batches(api, store, ws_a, provider, upstream):
    calls = [await recorded_call(store, ws_a, 40 + n) for n in range(7)]
    done = await sweeper(store, upstream, batch=2, max_batches=2).sweep()
    assert done.deleted == 4
    # Oldest end first.
    oldest = sorted(calls, key=lambda call: call["endedAt"])
    assert provider.stats.deleted == [call["ref"] for call in oldest[:4]]
    done = await sweeper(store, upstream, batch=2, max_batches=2).sweep()
    assert done.deleted == 3


async def test_two_sweepers_never_delete_one_recording_twice(
    config, clock, store, ws_a, provider, upstream
):
    """Two stores on one database (two processes): while one holds its claims (its deletes
    stalled at the provider), the other finds nothing to do; a claim whose holder died is taken
    over once its lease has lapsed."""
    calls = [await recorded_call(store, ws_a, 40) for _ in range(8)]
    other, other_auth = await open_services(config, clock)
    try:
        provider.faults.set_delete("stall", stall_seconds=30)
        slow = UpstreamClient(provider.base_url, ACCOUNT_ID, AUTH_TOKEN, header_timeout=60)
        first = asyncio.ensure_future(sweeper(store, slow).sweep())
        await wait_for(lambda: provider.stats.active == 5, what="the first sweeper's deletes")
        second = await sweeper(other, upstream).sweep()
        assert (second.deleted, second.failed) == (0, 0)
        assert provider.stats.deletes == 5
        provider.faults.clear()  # the stalled deletes go on; the rest follow
        done = await first
        assert (done.deleted, done.failed) == (8, 0)
        for call in calls:
            assert [r.status for r in provider.stats.deletes_of(call["ref"])] == [204]

        # A sweeper that dies mid-round leaves its claims; another takes them over after the
        # lease, never before.
        more = [await recorded_call(store, ws_a, 40) for _ in range(3)]
        provider.faults.set_delete("stall", stall_seconds=30)
        dying = asyncio.ensure_future(sweeper(store, slow).sweep())
        await wait_for(lambda: provider.stats.active == 3, what="the dying sweeper's deletes")
        dying.cancel()
        with pytest.raises(asyncio.CancelledError):
            await dying
        provider.faults.clear()
        await provider.stats.wait_idle()
        assert provider.stats.deleted == [call["ref"] for call in calls]  # none of `more`
        assert (await sweeper(other, upstream).sweep()).deleted == 0
        clock.advance(LEASE.total_seconds() + 1)
        assert (await sweeper(other, upstream).sweep()).deleted == 3
        assert sorted(provider.stats.deleted[len(calls) :]) == sorted(c["ref"] for c in more)
    finally:
        await other_auth.usage.stop()
        await other.close()
