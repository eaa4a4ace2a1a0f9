"""Webhooks from real `workspace-api serve` processes on one database (this tier's: a SQLite
file in tmp_path, or the wire tier's server):

- killed with SIGKILL in the middle of deliveries and started again: every event is delivered
  at least once (the attempts the dead process held are sent again once their leases end);
- two processes serving and delivering at once: each attempt is made by one of them only (the
  receiver sees every event exactly twice, failing the first attempt; the deliveries listing
  shows each (event, attempt) once).

The receiver runs in the test process, on loopback; its answers carry a marker that must
never reach a log line of the servers."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import signal

from server.config import load_config
from server.services import open_services
from tests.helpers import TEST_SECRET, Client, follow_events, make_workspace, test_environ
from tests.server.test_events_crash import Serve
from tests.webhooks.receiver import MARKER, Answer, Receiver, until, wait_for

LEASE = 3.0  # an attempt of a killed process is sent again after this


def environment(tmp_path) -> dict:
    base = test_environ()
    return {
        "MONGODB_URI": base["MONGODB_URI"] if base["MONGODB_URI"] != "memory" else "",
        "WSAPI_SQLITE_PATH": str(tmp_path / "store.sqlite3"),
        "WSAPI_DATABASE": base["WSAPI_DATABASE"],
        "WSAPI_SECRET": TEST_SECRET,
        "WSAPI_SYNC_SETTLE_SECONDS": "0.5",
        "WSAPI_RATE_LIMIT_PER_MINUTE": "10000000",
        "WSAPI_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        "WSAPI_WEBHOOK_RETRY_SCHEDULE": "1,1,1,2,2,2",
        "WSAPI_WEBHOOK_POLL_SECONDS": "0.1",
        "WSAPI_WEBHOOK_TIMEOUT_SECONDS": "2",
        "WSAPI_WEBHOOK_LEASE_SECONDS": str(LEASE),
        "WSAPI_LOG_LEVEL": "debug",
    }


@contextlib.asynccontextmanager
async def setting(tmp_path):
    """(env, workspace, receiver) on this tier's database; everything stopped afterwards."""
    env = environment(tmp_path)
    store, auth = await open_services(load_config(environ=env))
    receiver = Receiver().start()
    try:
        yield env, await make_workspace(store, auth, "Hooks"), receiver
    finally:
        await receiver.stop()
        if not store.embedded:
            await store.drop()
        await store.close()


async def started(log, env: dict) -> Serve:
    server = Serve(log, env)
    await asyncio.to_thread(server.wait_ready)
    return server


async def expected_events(api: Client, since: str, count: int) -> set[str]:
    """The ids of the events since `since` once the feed holds `count` (each is served once
    the settle period has passed)."""

    async def served() -> set[str] | None:
        events, _ = await follow_events(api, f"/v1/events?since={since}")
        ids = {event["id"] for event in events}
        return ids if len(ids) >= count else None

    wanted = await until(served, what=f"{count} events in the feed")
    assert isinstance(wanted, set) and len(wanted) == count, wanted
    return wanted


def stopped(server: Serve) -> None:
    """SIGTERM, as a deployment stops it: the attempts in flight end, then the process exits."""
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(30) == 0, server.log.read_text()[-3000:]


async def test_every_event_is_delivered_across_a_sigkill_mid_delivery(tmp_path):
    log = tmp_path / "serve.log"
    servers: list[Serve] = []
    async with setting(tmp_path) as (env, ws, receiver):
        # Slow answers: when the process is killed, attempts are in flight.
        receiver.plan = lambda request, number: Answer(200, delay=0.4)
        try:
            servers.append(await started(log, env))
            api = Client(servers[-1].origin, ws.key)
            created = await api.post("/v1/webhook-endpoints", {"url": receiver.url()})
            assert created.code == 201, created
            endpoint = created.json()["webhookEndpoint"]
            owner = ws.users[0]["id"]
            for number in range(12):
                response = await api.post("/v1/lists", {"name": f"L{number}", "ownerUserId": owner})
                assert response.code == 201, response
            await wait_for(lambda: len(receiver.requests) >= 3, what="deliveries in flight")
            await asyncio.to_thread(servers[-1].kill)  # in the middle of the deliveries
            delivered_before = set(receiver.ids())
            servers.append(await started(log, env))
            api = Client(servers[-1].origin, ws.key)
            for number in range(12, 16):
                response = await api.post("/v1/lists", {"name": f"L{number}", "ownerUserId": owner})
                assert response.code == 201, response
            wanted = await expected_events(api, endpoint["createdAt"], 16)
            await wait_for(
                lambda: wanted <= set(receiver.ids()),
                timeout=60,
                what="every event delivered after the restart",
            )
            assert delivered_before < set(receiver.ids())
        finally:
            for server in servers:
                server.kill()
    assert MARKER not in log.read_text()


async def test_two_processes_make_each_attempt_once(tmp_path):
    log = tmp_path / "serve.log"
    servers: list[Serve] = []
    async with setting(tmp_path) as (env, ws, receiver):
        # Every event's first attempt fails, its second succeeds: two receipts per event.
        receiver.plan = lambda request, number: Answer(503 if number == 1 else 200, delay=0.05)
        try:
            servers = [await started(log, env), await started(log, env)]
            apis = [Client(server.origin, ws.key) for server in servers]
            created = await apis[0].post("/v1/webhook-endpoints", {"url": receiver.url()})
            endpoint = created.json()["webhookEndpoint"]
            owner = ws.users[0]["id"]
            for number in range(20):
                api = apis[number % 2]
                response = await api.post("/v1/lists", {"name": f"L{number}", "ownerUserId": owner})
                assert response.code == 201, response
            wanted = await expected_events(apis[0], endpoint["createdAt"], 20)

            def twice() -> bool:
                counts = collections.Counter(receiver.ids())
                return set(counts) == wanted and all(counts[i] >= 2 for i in wanted)

            await wait_for(twice, timeout=60, what="two attempts of every event")

            async def listed() -> list[dict] | None:
                path = f"/v1/webhook-endpoints/{endpoint['id']}/deliveries?pageSize=100"
                body = (await apis[1].get(path)).json()
                return body["deliveries"] if len(body["deliveries"]) >= 40 else None

            attempts = await until(listed, what="every attempt listed")
            pairs = [(a["eventId"], a["attempt"]) for a in attempts]  # type: ignore[union-attr]
            assert len(pairs) == len(set(pairs)) == 40
            assert {pair for pair in pairs} == {(i, n) for i in wanted for n in (1, 2)}
            # Both stopped, their attempts in flight ended: nothing can arrive after this.
            await asyncio.gather(*(asyncio.to_thread(stopped, server) for server in servers))
            counts = collections.Counter(receiver.ids())
            assert all(counts[i] == 2 for i in wanted), counts
        finally:
            for server in servers:
                server.kill()
    assert MARKER not in log.read_text()
