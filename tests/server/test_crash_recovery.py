"""Crashes lose nothing and duplicate nothing: writers create lists with Idempotency-Keys while
`workspace-api serve` is killed with SIGKILL at random moments and restarted on the same
store (the SQLite file, or on the wire tier the same FerretDB, which keeps running); every
request that got no definitive answer is retried with its key. At the end every name exists
exactly once and every acknowledged list is there. Real processes, real sockets."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time

from tornado.httpclient import HTTPClientError

from server.config import load_config
from server.services import open_services
from store.ingest import sid_call_id
from telephony.simulated_calls import CallPlacer, Outcome
from telephony.simulated_provider import start_provider
from tests.helpers import Client, make_workspace, test_environ
from tests.server.test_serve import SECRET, Server, free_port, get
from tests.webhooks.receiver import wait_for

WRITERS = 16
KILLS = 3


def store_environ(tmp_path) -> dict:
    """This tier's store, shared by the test and every `serve` it starts."""
    environ = test_environ(WSAPI_SECRET=SECRET)
    if environ["MONGODB_URI"] == "memory":  # the embedded tier: a file of the test's own
        environ.update(MONGODB_URI="", WSAPI_SQLITE_PATH=str(tmp_path / "crash.sqlite3"))
    return environ


def start(tmp_path, run: int, environ: dict, port: int | None = None) -> Server:
    directory = tmp_path / f"run-{run}"
    directory.mkdir()
    server = Server(directory, port=port, WSAPI_RATE_LIMIT_PER_MINUTE="1000000", **environ)
    deadline = time.monotonic() + 60
    while True:  # ready: the store is open and its indexes exist
        assert server.process.poll() is None, server.log.read_text()
        try:
            if get(f"{server.origin}/readyz", timeout=2)[0] == 200:
                return server
        except OSError:
            pass
        assert time.monotonic() < deadline, server.log.read_text()
        time.sleep(0.05)


async def test_sigkill_at_random_moments_loses_and_duplicates_nothing(tmp_path):
    environ = store_environ(tmp_path)
    store, auth = await open_services(load_config(environ=environ))
    try:
        workspace = await make_workspace(store, auth, "Crashes")
    finally:
        await store.close()
    owner = workspace.users[0]["id"]
    acknowledged: dict[str, str] = {}  # name -> the id its 201 named
    unanswered: set[str] = set()  # names whose request got no definitive answer
    sent: set[str] = set()
    rng = random.Random()
    servers: list[Server] = []

    async def create(client: Client, name: str) -> int:
        try:
            response = await client.post(
                "/v1/lists",
                {"name": name, "ownerUserId": owner},
                headers={"Idempotency-Key": f"key-{name}"},
                check=False,
            )
        except (OSError, HTTPClientError):  # refused or cut: the process died under it
            unanswered.add(name)
            return 599
        if response.code == 201:
            listing = response.json()["list"]
            assert listing["name"] == name
            assert acknowledged.setdefault(name, listing["id"]) == listing["id"]
            unanswered.discard(name)
        else:  # the process died under it (599), or the database was busy (503)
            assert response.code in (409, 503, 599), response
            unanswered.add(name)
        return response.code

    async def writer(client: Client, number: int, stop: asyncio.Event) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            name = f"w{number}-{i}"
            sent.add(name)
            if await create(client, name) == 599:
                return  # the server is gone

    try:
        for run in range(KILLS + 1):
            server = start(tmp_path, run, environ)
            servers.append(server)
            client = Client(server.origin, workspace.key, connections=WRITERS + 4)
            stop = asyncio.Event()
            writers = [
                asyncio.ensure_future(writer(client, n + 100 * run, stop)) for n in range(WRITERS)
            ]
            if run < KILLS:
                await asyncio.sleep(rng.uniform(0.5, 2.0))
                server.stop()  # SIGKILL to its process group, in the middle of the writes
            else:
                await asyncio.sleep(0.5)
                stop.set()
            await asyncio.wait_for(asyncio.gather(*writers), 60)

        # The last server: retry every request that was not answered, with its key, as a
        # client that honours Retry-After on 409 would (a claim of a dead process is taken
        # over at once, so none should be needed).
        assert unanswered, "no kill caught a request in flight: the test proved nothing"
        retried = len(unanswered)
        deadline = time.monotonic() + 90
        while unanswered:
            assert time.monotonic() < deadline, sorted(unanswered)[:10]
            codes = await asyncio.gather(*(create(client, name) for name in sorted(unanswered)))
            if 409 in codes:
                await asyncio.sleep(1)

        lists, page = [], 1
        while True:
            body = (await client.get(f"/v1/lists?pageSize=100&page={page}")).json()
            lists += body["lists"]
            if not body["hasMore"]:
                break
            page += 1
    finally:
        for server in servers:
            server.stop()

    names = [x["name"] for x in lists]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    assert duplicates == [], f"{len(duplicates)} duplicate lists after {KILLS} kills"
    by_name = {x["name"]: x["id"] for x in lists}
    lost = sorted(name for name, list_id in acknowledged.items() if by_name.get(name) != list_id)
    assert lost == [], f"{len(lost)} acknowledged lists lost"
    assert set(by_name) == sent  # every request wrote its list once, retried or not
    assert retried > 0


async def test_a_provider_call_killed_between_its_callbacks_records_itself_after_restart(tmp_path):
    """The simulated provider places a call; `serve` is killed with SIGKILL after the call's
    progress callbacks were answered, its final status fails while serve is down and is sent
    again once serve is back: the call is recorded once, with the instants remembered before
    the kill, and its recording attached."""
    account, token = "AC" + "9c" * 16, "feedfacefeedfacefeedfacefeedface"
    port = free_port()
    environ = {
        **store_environ(tmp_path),
        "WSAPI_PROVIDER_ACCOUNT_ID": account,
        "WSAPI_PROVIDER_AUTH_TOKEN": token,
        "WSAPI_PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
    }
    store, auth = await open_services(load_config(environ=environ))
    try:
        workspace = await make_workspace(store, auth, "Provider crash")
    finally:
        await store.close()
    placer = CallPlacer(
        account,
        token,
        pace=0.05,  # answered after 0.25 s, the final status at 5.25 s
        outcome=lambda sid: Outcome("completed", 5, 100, "human"),
        retry_delays=(0.3,) * 100,
    )
    provider = await start_provider(account_id=account, auth_token=token, calls=placer)
    servers = [start(tmp_path, 0, environ, port)]
    try:
        base = f"http://127.0.0.1:{port}/v1/provider/callbacks/{workspace.id}"
        call = placer.place(
            {
                "To": ["+14155550111"],
                "From": ["+12125550142"],
                "StatusCallback": [f"{base}/status?userId={workspace.users[0]['id']}"],
                "StatusCallbackEvent": ["initiated answered completed"],
                "Record": ["true"],
                "RecordingStatusCallback": [f"{base}/recording"],
            }
        )
        await wait_for(
            lambda: len(call.callbacks) == 2 and call.callbacks[1].delivered,
            60,
            "progress answered",
        )
        servers[0].stop()  # SIGKILL between the answer and the final status
        await wait_for(
            lambda: len(call.callbacks) == 3 and 0 in call.callbacks[2].attempts,
            60,
            "final refused",
        )
        servers.append(start(tmp_path, 1, environ, port))  # the same store and port
        await placer.idle(timeout=120)
        client = Client(servers[1].origin, workspace.key)
        recorded = await client.get(f"/v1/calls/{sid_call_id(workspace.id, call.sid)}")
        total = (await client.get("/v1/calls")).json()["total"]
    finally:
        await provider.stop()
        for server in servers:
            server.stop()
    statuses = [c.params.get("CallStatus") for c in call.callbacks]
    assert statuses == ["initiated", "in-progress", "completed", None]  # None: the recording
    assert all(c.delivered for c in call.callbacks)
    assert call.callbacks[2].attempts[0] == 0  # refused while serve was down, then sent again
    assert recorded.code == 200, recorded
    got = recorded.json()["call"]
    stamp = email.utils.parsedate_to_datetime
    started, answered = (stamp(c.params["Timestamp"]) for c in call.callbacks[:2])
    assert got["startedAt"] == started.strftime("%Y-%m-%dT%H:%M:%S.000Z")  # from before the kill
    assert got["answeredAt"] == answered.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert got["durationSeconds"] == 100 and got["hasRecording"] is True
    assert total == 1
