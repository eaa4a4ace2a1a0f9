"""The events feed across a crash: `workspace-api serve` (a real process) is killed with SIGKILL
in the middle of contact uploads, list creations, a dialer's calls (POST /v1/calls by contact,
then PATCH) and the users' writes (POST, PATCH, DELETE /v1/users) and started again on the same
database, while calls are created and changed beside it and a reader follows GET /v1/events
all along. Once the writes have stopped (and, on MongoDB, the event sweep of the new process
has recorded what the killed one left unwritten), the reader has seen, for every record, an
event carrying its final state as its last event, and a `*.created` event for every record,
every write acknowledged to its client among them: 0 missing, 0 stale.

The database is this tier's: a SQLite file in tmp_path (embedded), or the wire tier's server.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from tornado.httpclient import HTTPClientError

from server.config import load_config
from server.services import open_services
from store.calls import call_document
from store.clock import utcnow
from tests.handlers.test_events_proof import Reader, check, truth
from tests.helpers import TEST_SECRET, Client, make_workspace, test_environ, wait_for

SETTLE = 1.0
DB_TIMEOUT = 2.0  # so that the event sweep's grace (4 of them) keeps the test short


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Serve:
    """`workspace-api serve` in its own process group, on a port of its own."""

    def __init__(self, log, env: dict) -> None:
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        with open(log, "a") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "server.cli", "serve", "--port", str(self.port)],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                env={**os.environ, **env},
                start_new_session=True,
            )
        self.log = log

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, self.log.read_text()
            with (
                contextlib.suppress(OSError, urllib.error.URLError),
                urllib.request.urlopen(f"{self.origin}/readyz", timeout=2) as response,
            ):
                if response.status == 200:
                    return
            assert time.monotonic() < deadline, "serve did not get ready: " + self.log.read_text()
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL to the whole group this test started: no shutdown of any kind."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)


async def test_every_acknowledged_write_has_its_event_after_serve_is_killed_mid_write(tmp_path):
    base = test_environ()
    env = {
        "MONGODB_URI": base["MONGODB_URI"] if base["MONGODB_URI"] != "memory" else "",
        "WSAPI_SQLITE_PATH": str(tmp_path / "store.sqlite3"),
        "WSAPI_DATABASE": base["WSAPI_DATABASE"],
        "WSAPI_SECRET": TEST_SECRET,
        "WSAPI_SYNC_SETTLE_SECONDS": str(SETTLE),
        "WSAPI_DB_TIMEOUT_SECONDS": str(DB_TIMEOUT),
        "WSAPI_RATE_LIMIT_PER_MINUTE": "10000000",
        "WSAPI_LOG_LEVEL": "info",
    }
    store, auth = await open_services(load_config(environ=env))
    rng = random.Random(26)
    log = tmp_path / "serve.log"
    servers: list[Serve] = []
    try:
        ws = await make_workspace(store, auth, "Crash")
        server = Serve(log, env)
        servers.append(server)
        await asyncio.to_thread(server.wait_ready)
        _, ingest = await auth.create(ws.id, "dialer", frozenset({"read", "ingest"}))
        _, admin = await auth.create(ws.id, "directory", frozenset({"read", "admin"}))
        state = {
            "api": Client(server.origin, ws.key, connections=8),
            "dialer": Client(server.origin, ingest, connections=4),
            "admin": Client(server.origin, admin, connections=2),
            "down": False,
        }
        owner = ws.users[0]["id"]
        first = await state["api"].post("/v1/lists", {"name": "Crash 0", "ownerUserId": owner})
        lists = [first.json()["list"]]
        seed = [
            {"email": f"seed{i}@example.com", "phoneNumber": f"+1212555{i:04d}"} for i in range(20)
        ]
        await state["api"].post(f"/v1/lists/{lists[0]['id']}/contacts", {"contacts": seed})
        prospects = (await state["api"].get("/v1/prospects?pageSize=100")).json()["prospects"]
        acknowledged: dict[str, set[str]] = {
            "list": set(),
            "prospect": set(),
            "call": set(),
            "user": set(),
        }
        users: list[str] = []
        answers: dict[int, int] = {}
        calls: list[str] = []
        stop = asyncio.Event()

        async def post(path: str, body: dict, client: str = "api", method: str = "POST"):
            """A write over HTTP: its response, or None when the connection failed (the
            process was killed under it: not acknowledged)."""
            try:
                response = await state[client].fetch(path, method, json_body=body, check=False)
            except (OSError, HTTPClientError):  # the connection broke: not acknowledged
                return None
            if response.code == 599:
                return None
            answers[response.code] = answers.get(response.code, 0) + 1
            return response if response.code in (200, 201) else None

        async def uploads() -> None:
            n = 0
            while not stop.is_set():
                n += 1
                contacts = [
                    {"email": f"c{rng.randint(0, 60)}@example.com", "jobTitle": f"t{n}"}
                    for _ in range(rng.randint(1, 8))
                ]
                target = rng.choice(lists)["id"]
                response = await post(f"/v1/lists/{target}/contacts", {"contacts": contacts})
                if response is None:
                    await asyncio.sleep(0.05)
                    continue
                acknowledged["prospect"] |= {r["prospectId"] for r in response.json()["results"]}

        async def create_lists() -> None:
            n = 0
            while not stop.is_set():
                n += 1
                response = await post("/v1/lists", {"name": f"Crash {n}", "ownerUserId": owner})
                if response is None:
                    await asyncio.sleep(0.05)
                    continue
                lists.append(response.json()["list"])
                acknowledged["list"].add(lists[-1]["id"])

        async def dialer_writes() -> None:  # the dialer's POST and PATCH /v1/calls
            n = 0
            while not stop.is_set():
                n += 1
                body = {
                    "userId": owner,
                    "prospect": {
                        "email": f"c{rng.randint(0, 60)}@example.com",
                        "lastName": f"l{n}",
                    },
                    "direction": "outbound",
                    "disposition": "connected",
                    "fromNumber": "+12125550100",
                    "toNumber": "+14155550100",
                    "startedAt": f"2026-01-05T10:{n % 60:02d}:00Z",
                    "endedAt": f"2026-01-05T10:{n % 60:02d}:30Z",
                    "providerCallSid": f"CA{rng.getrandbits(128):032x}",
                }
                response = await post("/v1/calls", body, "dialer")
                if response is None:
                    await asyncio.sleep(0.05)
                    continue
                call_id = response.json()["call"]["id"]
                acknowledged["call"].add(call_id)
                acknowledged["prospect"].add(response.json()["prospectMatch"]["prospectId"])
                await post(f"/v1/calls/{call_id}", {"disposition": "voicemail"}, "dialer", "PATCH")

        async def call_writes() -> None:  # beside the API process, on the same database
            while not stop.is_set():
                prospect = rng.choice(prospects)
                now = utcnow()
                doc = call_document(
                    ws.id,
                    user_id=owner,
                    prospect_id=prospect["id"],
                    direction="outbound",
                    disposition=rng.choice(["connected", "no_answer"]),
                    from_number="+12125550100",
                    to_number=prospect["phoneNumber"],
                    started_at=now - dt.timedelta(minutes=1),
                    ended_at=now,
                )
                await store.calls.insert_documents(ws.id, [doc])
                calls.append(doc["_id"])
                await store.calls.change(ws.id, rng.choice(calls), {"notes": f"n{rng.random()}"})

        async def user_writes() -> None:  # the users' POST, PATCH and DELETE
            n = 0
            while not stop.is_set():
                n += 1
                body = {"email": f"u{n}@crash.example", "firstName": "U", "lastName": str(n)}
                response = await post("/v1/users", body, "admin")
                if response is None:
                    await asyncio.sleep(0.05)
                    continue
                users.append(response.json()["user"]["id"])
                acknowledged["user"].add(users[-1])
                await post(f"/v1/users/{users[-1]}", {"lastName": f"r{n}"}, "admin", "PATCH")
                if n % 2 == 0:
                    with contextlib.suppress(OSError, HTTPClientError):  # 204, or cut short
                        await state["admin"].fetch(f"/v1/users/{rng.choice(users)}", "DELETE")

        reader = None

        async def follow() -> None:
            nonlocal reader
            while not stop.is_set() or reader is None:
                reader = reader or Reader(state["api"])
                reader.api = state["api"]
                try:
                    caught_up = await reader.poll()
                except (OSError, HTTPClientError, AssertionError):  # the API is down: again
                    caught_up = True
                if caught_up:
                    await asyncio.sleep(0.05)

        writers = (uploads, uploads, create_lists, call_writes, dialer_writes, user_writes)
        tasks = [asyncio.ensure_future(t()) for t in writers]
        following = asyncio.ensure_future(follow())

        def written() -> int:  # the writes acknowledged so far
            return answers.get(200, 0) + answers.get(201, 0)

        def going(count: int) -> bool:  # `count` acknowledged (or a writer failed: it says why)
            return written() >= count or any(task.done() for task in tasks)

        await wait_for(lambda: going(40), timeout=60, what="writes under way")
        await asyncio.to_thread(server.kill)  # in the middle of the writes
        server = Serve(log, env)
        servers.append(server)
        await asyncio.to_thread(server.wait_ready)
        state["api"] = Client(server.origin, ws.key, connections=8)
        state["dialer"] = Client(server.origin, ingest, connections=4)
        state["admin"] = Client(server.origin, admin, connections=2)
        restarted_at = written()
        await wait_for(lambda: going(restarted_at + 30), timeout=60, what="writes after it")
        stop.set()
        await asyncio.gather(*tasks)
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)
        assert reader is not None
        assert answers.get(200, 0) >= 3 and answers.get(201, 0) >= 3, answers
        assert set(answers) <= {200, 201, 503}, answers

        # One settle period without writes, and on MongoDB the new process's event sweep (what
        # the killed process left marked waits for it): read on until the reader's last events
        # are the records as they are, or fail after the deadline (an event that landed behind
        # the reader would never show up).
        # The records are read again each round: on MongoDB a list the killed process was
        # counting is recounted once its upload lease lapses, a legitimate change after the
        # writes stopped, which the reader must then see too.
        history = {u["id"] for u in [*ws.users, ws.deleted_user]}
        deadline = time.monotonic() + 90
        while True:
            while not await reader.poll():
                pass
            records = await truth(state["api"], users, history)
            current = all(reader.last.get(key) == record for key, record in records.items())
            if current or time.monotonic() > deadline:
                break
            await asyncio.sleep(1.0)
        check(reader, records)
        for resource, ids in acknowledged.items():
            assert ids and {(resource, i) for i in ids} <= reader.created, resource
    finally:
        for server in servers:
            server.kill()
        if not store.embedded:
            await store.drop()
        await store.close()
