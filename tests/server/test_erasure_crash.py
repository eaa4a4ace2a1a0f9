"""An erasure across a crash: `workspace-api serve` (a real process) is killed with SIGKILL while
its erasure worker holds a request, its prospect erased and its recordings' deletes hanging at
the provider. The request is left `running`; the same command started again on the same
database takes the request over at once (its holder is gone from this host), deletes the
recordings and completes it, with one `erasure.completed` event.

The database is this tier's: a SQLite file in tmp_path (embedded), or the wire tier's server.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time

from server.config import load_config
from server.services import open_services
from store.prospects import seeded_document
from telephony.simulated_provider import make_ref, start_provider
from tests.helpers import TEST_SECRET, Client, follow_events, make_workspace, test_environ
from tests.server.test_events_crash import Serve

ACCOUNT_ID = "AC" + "c4" * 16
AUTH_TOKEN = "crash-provider-token-7f"
REFS = [make_ref(f"recorded call {n}") for n in range(3)]


async def test_an_erasure_killed_while_running_completes_after_a_restart(tmp_path):
    provider = await start_provider(account_id=ACCOUNT_ID, auth_token=AUTH_TOKEN)
    base = test_environ()
    env = {
        "MONGODB_URI": base["MONGODB_URI"] if base["MONGODB_URI"] != "memory" else "",
        "WSAPI_SQLITE_PATH": str(tmp_path / "store.sqlite3"),
        "WSAPI_DATABASE": base["WSAPI_DATABASE"],
        "WSAPI_SECRET": TEST_SECRET,
        "WSAPI_SYNC_SETTLE_SECONDS": "0.5",
        "WSAPI_RATE_LIMIT_PER_MINUTE": "10000000",
        "WSAPI_PROVIDER_URL": provider.base_url,
        "WSAPI_PROVIDER_ACCOUNT_ID": ACCOUNT_ID,
        "WSAPI_PROVIDER_AUTH_TOKEN": AUTH_TOKEN,
        "WSAPI_PROVIDER_HEADER_TIMEOUT": "120",  # the hanging delete outlives the process
        "WSAPI_LOG_LEVEL": "info",
    }
    store, auth = await open_services(load_config(environ=env))
    log = tmp_path / "serve.log"
    servers: list[Serve] = []
    try:
        ws = await make_workspace(store, auth, "Crash")
        _, admin_key = await auth.create(ws.id, "admin", frozenset({"read", "admin"}))
        contact = store.prospects.parse_contact(
            {
                "firstName": "Ottilie",
                "email": "ottilie@crash.example",
                "phoneNumber": "+14155550123",
            }
        )
        doc = seeded_document(ws.id, contact, ws.users[0]["id"])
        await store.prospects.insert_documents(ws.id, [doc])
        started = dt.datetime(2026, 11, 2, 9, 30, tzinfo=dt.UTC)
        calls = [
            (
                await store.calls.create(
                    ws.id,
                    user_id=ws.users[0]["id"],
                    prospect_id=doc["_id"],
                    direction="outbound",
                    disposition="connected",
                    from_number="+12125550142",
                    to_number="+14155550123",
                    started_at=started + dt.timedelta(minutes=n),
                    answered_at=started + dt.timedelta(minutes=n),
                    ended_at=started + dt.timedelta(minutes=n + 1),
                    recording_ref=ref,
                    recording_duration_seconds=60,
                )
            )["id"]
            for n, ref in enumerate(REFS)
        ]
        provider.faults.set_delete("stall", stall_seconds=600)

        server = Serve(log, env)
        servers.append(server)
        await asyncio.to_thread(server.wait_ready)
        admin = Client(server.origin, admin_key)
        made = await admin.post("/v1/erasures", {"phoneNumber": "(415) 555-0123"})
        assert made.code == 202, made
        location = made.headers["Location"]

        # Kill it once the prospect is erased and the first delete hangs at the provider.
        deadline = time.monotonic() + 60
        while not provider.stats.deletes:
            assert time.monotonic() < deadline, "the worker never reached the provider"
            await asyncio.sleep(0.05)
        erasure = (await admin.get(location)).json()["erasure"]
        assert erasure["status"] == "running" and erasure["counts"]["prospects"] == 1
        await asyncio.to_thread(server.kill)
        assert (await store.erasures.get(ws.id, erasure["id"]))["status"] == "running"
        assert all(provider.library.get(ref) is not None for ref in REFS)

        provider.faults.clear()
        server = Serve(log, env)
        servers.append(server)
        await asyncio.to_thread(server.wait_ready)
        admin = Client(server.origin, admin_key)
        # Well inside the lease (60 s): the request is taken over because its holder is gone.
        deadline = time.monotonic() + 30
        while (erasure := (await admin.get(location)).json()["erasure"])["status"] != "completed":
            assert erasure["status"] == "running", erasure
            assert time.monotonic() < deadline, "the erasure did not complete after the restart"
            await asyncio.sleep(0.1)
        assert erasure["counts"]["recordings"] == len(REFS)
        assert erasure["counts"]["prospects"] == 1 and erasure["counts"]["calls"] == len(REFS)
        assert sorted(provider.stats.deleted) == sorted(REFS)
        api = Client(server.origin, ws.key)
        assert (await api.get(f"/v1/prospects/{doc['_id']}")).code == 404
        for call_id in calls:
            call = (await api.get(f"/v1/calls/{call_id}")).json()["call"]
            assert call["hasRecording"] is False and call["toNumber"] is None

        deadline = time.monotonic() + 30
        while True:
            events, _ = await follow_events(api, "/v1/events?type=erasure.completed")
            if events or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        assert [e["data"]["id"] for e in events] == [erasure["id"]]
    finally:
        for each in servers:
            each.kill()
        await provider.stop()
        if not store.embedded:
            await store.drop()
        await store.close()
