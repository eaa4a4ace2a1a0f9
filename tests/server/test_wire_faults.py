"""Real faults on the wire tier: the database server process stopped (SIGTERM) or killed
(SIGKILL) in the middle of traffic and started again on the same files, and one rate limit
shared by two worker processes.

`workspace-api serve` runs as a real process against a database server: for the stop/start
test a FerretDB of the test's own on SQLite files in tmp_path (so the data outlives the server
process; wire tier only), for the rate limit the tier's own server (wire tier, or a real
MongoDB).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.error
import urllib.request

import pytest

from server.config import load_config
from server.ratelimit import RateLimiter
from server.services import open_services
from tests.helpers import Client, make_workspace, ready_pids, serving, test_environ, wait_for
from tests.wire import WireServer

DB_TIMEOUT = 1.0  # db_timeout_seconds of the served API


@pytest.fixture
def own_server(tmp_path):
    """A FerretDB of this test's own, its SQLite files in tmp_path; stopped afterwards."""
    server = WireServer(tmp_path / "wire-server.log", tmp_path / "data").start()
    yield server
    server.stop()


async def new_workspace(uri: str, name: str, database: str | None = None):
    """A workspace with users and a key in `database` (default: a fresh one) at `uri`:
    (workspace, database)."""
    environ = test_environ(MONGODB_URI=uri)
    config = load_config(
        environ={**environ, "WSAPI_DATABASE": database or environ["WSAPI_DATABASE"]}
    )
    store, auth = await open_services(config)
    try:
        return await make_workspace(store, auth, name), config.database
    finally:
        await store.close()


def readyz(origin: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"{origin}/readyz", timeout=10) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


@pytest.mark.wire
@pytest.mark.parametrize("how", ["stop", "kill"])
async def test_the_database_stops_mid_traffic_and_comes_back(tmp_path, own_server, how):
    """Writers create lists while the database server is stopped (`stop`: a clean SIGTERM) or
    killed (`kill`: SIGKILL, as in a crash) and started again on the same SQLite files:
    meanwhile every request ends in time, as 201/200 or as 503 with Retry-After, /readyz turns
    503; afterwards the same API process serves again and every list it acknowledged is there
    (the server commits a write to disk before it acknowledges it)."""
    workspace, database = await new_workspace(own_server.uri, "Faults")
    env = {
        "MONGODB_URI": own_server.uri,
        "WSAPI_DATABASE": database,
        "WSAPI_SECRET": test_environ()["WSAPI_SECRET"],
        "WSAPI_DB_TIMEOUT_SECONDS": str(DB_TIMEOUT),
        "WSAPI_RATE_LIMIT_PER_MINUTE": "100000",
    }
    with serving(tmp_path, env=env) as (origin, log):
        client = Client(origin, workspace.key, connections=8)
        owner = workspace.users[0]["id"]
        acknowledged: list[str] = []
        statuses: list[int] = []
        phase = {"name": "up"}

        async def writer(number: int) -> None:
            i = 0
            while phase["name"] != "done":
                i += 1
                if i % 3:
                    response = await client.post(
                        "/v1/lists", {"name": f"w{number}-{i}", "ownerUserId": owner}
                    )
                else:
                    response = await client.get("/v1/lists?pageSize=50")
                statuses.append(response.code)
                if response.code == 201:
                    acknowledged.append(response.json()["list"]["id"])
                elif response.code == 503:
                    assert response.headers["Retry-After"], response
                    await asyncio.sleep(0.05)
                else:
                    assert response.code == 200, response

        writers = [asyncio.ensure_future(writer(n)) for n in range(4)]
        try:
            deadline = time.monotonic() + 30
            while len(acknowledged) < 20:
                assert time.monotonic() < deadline, statuses[-20:]
                await asyncio.sleep(0.05)
                assert not any(w.done() for w in writers), [w.exception() for w in writers]
                assert statuses.count(503) == 0 and len(statuses) < 500, statuses[-20:]
            # Returns once the process has exited.
            await asyncio.to_thread(own_server.stop if how == "stop" else own_server.kill)
            before = len(acknowledged)
            phase["name"] = "down"
            # Requests end as 503s (the database timeout ends their wait): none hangs.
            await wait_for(lambda: statuses.count(503) >= 4, timeout=30, what="503s while down")
            assert (await asyncio.to_thread(readyz, origin))[0] == 503
            acknowledged_while_down = len(acknowledged) - before

            own_server.start()
            phase["name"] = "back"
            deadline = time.monotonic() + 30
            while (await asyncio.to_thread(readyz, origin))[0] != 200:
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                await asyncio.sleep(0.2)
            count = len(acknowledged)
            while len(acknowledged) < count + 10:  # the writers get through again
                assert time.monotonic() < deadline, statuses[-20:]
                await asyncio.sleep(0.05)
        finally:
            phase["name"] = "done"
            results = await asyncio.gather(*writers, return_exceptions=True)
        assert [r for r in results if r is not None] == []
        status, headers = await asyncio.to_thread(readyz, origin)
        assert status == 200, headers
        assert acknowledged_while_down <= 4  # at most answers in flight when it exited

        for list_id in acknowledged:  # every acknowledged write survived the restart
            response = await client.get(f"/v1/lists/{list_id}")
            assert response.code == 200, (list_id, response)
        listed = (await client.get("/v1/lists?pageSize=100")).json()["total"]
        assert listed >= len(acknowledged)
        assert len(acknowledged) == len(set(acknowledged))

    server_log = own_server.log_path.read_text()
    assert server_log.count("listening on") == 2  # one server process, then another


@pytest.mark.server_db
async def test_two_processes_enforce_one_rate_limit_exactly(tmp_path):
    """`serve --processes 2`: over one full window of the workspace, requests spread over both
    workers get exactly `quota` answers that are not 429, each with its own remaining count."""
    quota, extra = 120, 60
    uri, database = os.environ["MONGODB_URI"], test_environ()["WSAPI_DATABASE"]
    env = {
        "MONGODB_URI": uri,
        "WSAPI_DATABASE": database,
        "WSAPI_SECRET": test_environ()["WSAPI_SECRET"],
        "WSAPI_RATE_LIMIT_PER_MINUTE": str(quota),
        "WSAPI_LOG_LEVEL": "info",
        # 180 requests at once on a loaded machine: the suite's FerretDB can take longer than
        # the usual 5 s to answer one of them, and a counted request answered 503 is not what
        # is tested here.
        "WSAPI_DB_TIMEOUT_SECONDS": "30",
    }
    with serving(tmp_path, "--processes", "2", env=env) as (origin, log):
        # Both workers ready: each has answered /readyz 200 (by the pid of its access lines; a
        # worker still ensuring its indexes answers 503, the API too). Readiness needs no key
        # and counts nothing.
        deadline = time.monotonic() + 60
        while len(ready_pids(log)) < 2:
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            await asyncio.to_thread(readyz, origin)
            await asyncio.sleep(0.05)
        # Windows are offset per workspace: take one whose window has time left for the burst
        # (the window ends in 60 s or less; a burst takes a few seconds).
        while True:
            workspace, _ = await new_workspace(uri, "Limited", database)
            _, end = RateLimiter(None, quota).window_of(workspace.id, time.time())
            if end - time.time() > 20:
                break
        client = Client(origin, workspace.key, connections=20)
        responses = await asyncio.gather(*[client.get("/v1/users") for _ in range(quota + extra)])
        assert time.time() < end, "the burst crossed a window boundary"

    allowed = [r for r in responses if r.code != 429]
    assert all(r.code == 200 for r in allowed), sorted(r.code for r in allowed)
    assert len(allowed) == quota
    remaining = sorted(int(r.headers["RateLimit"].split("r=")[1].split(";")[0]) for r in allowed)
    assert remaining == list(range(quota))  # every counted request had its own slot
    refused = [r for r in responses if r.code == 429]
    assert len(refused) == extra and all(r.headers["Retry-After"] for r in refused)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    pids = {line.get("pid") for line in lines if line.get("path") == "/v1/users"}
    assert len(pids) == 2, "both workers answered"
