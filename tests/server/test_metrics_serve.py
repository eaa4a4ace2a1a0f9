"""Metrics, scraped from real `workspace-api serve` processes on this tier's database: known
traffic, then the figures of /metrics on the metrics listener (parsed with prometheus_client's
parser, checked with `promtool check metrics`); one process, and `--processes 2` summed across
its workers, with its multiprocess directory made, kept and removed by `serve`. A 404, a 429
and a 503 each land in their series; no label carries an id or a key; the metrics listener
never serves the API and the API's port never serves /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import time
import uuid

import jwt
import psutil
import pytest

from server.config import load_config
from server.services import open_services
from tests.handlers.test_events import dialer_call
from tests.helpers import TEST_SECRET, Client, make_workspace, test_environ, until
from tests.server.metrics_helpers import (
    MetricsServe,
    fetch,
    promtool_check,
    value,
)
from tests.server.test_serve import free_port
from tests.server.test_wire_faults import new_workspace, own_server  # noqa: F401 - a fixture
from tests.webhooks.receiver import Answer, Receiver

LIMIT = 12  # the rate limit per minute of these tests' workspaces
REQUESTS = "wsapi_http_requests_total"


def environment(tmp_path) -> dict:
    base = test_environ()
    return {
        "MONGODB_URI": base["MONGODB_URI"] if base["MONGODB_URI"] != "memory" else "",
        "WSAPI_SQLITE_PATH": str(tmp_path / "store.sqlite3"),
        "WSAPI_DATABASE": base["WSAPI_DATABASE"],
        "WSAPI_SECRET": TEST_SECRET,
        "WSAPI_RATE_LIMIT_PER_MINUTE": str(LIMIT),
        "WSAPI_SYNC_SETTLE_SECONDS": "0.2",
        "WSAPI_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
        "WSAPI_WEBHOOK_POLL_SECONDS": "0.1",
        "WSAPI_WEBHOOK_TIMEOUT_SECONDS": "2",
        "WSAPI_WEBHOOK_LEASE_SECONDS": "5",
    }


@contextlib.asynccontextmanager
async def database(env: dict, *names: str):
    """Workspaces (with keys) on this tier's database; the database dropped afterwards."""
    store, auth = await open_services(load_config(environ=env))
    try:
        yield auth, [await make_workspace(store, auth, name) for name in names]
    finally:
        if not store.embedded:
            await store.drop()
        await store.close()


def recorded(samples) -> float:
    return sum(v for (name, _), v in samples.items() if name == "wsapi_events_recorded_total")


def label_values(samples) -> set[str]:
    return {value for _name, labels in samples for _label, value in labels}


async def test_one_process_counts_known_traffic(tmp_path):
    env = environment(tmp_path)
    async with database(env, "Hooks", "Busy") as (auth, (hooks, busy)):
        _, dialer_key = await auth.create(hooks.id, "dialer", frozenset({"read", "ingest"}))
        receiver = Receiver().start()
        receiver.plan = lambda request, number: Answer(200)
        server = MetricsServe(tmp_path, env)
        try:
            await asyncio.to_thread(server.wait_up, "/readyz")
            _, before = await asyncio.to_thread(server.scrape)
            assert value(before, "wsapi_store_up") == 1
            assert value(before, REQUESTS, method="GET", route="/v1/users", status="200") == 0

            # Workspace Hooks: a webhook endpoint, two lists (two events and deliveries each), a
            # batch of two calls, a call that does not exist, and a path no route matches.
            api = Client(server.origin, hooks.key)
            created = await api.post("/v1/webhook-endpoints", {"url": receiver.url()})
            assert created.code == 201, created
            owner = hooks.users[0]["id"]
            lists = []
            for name in ("A", "B"):
                response = await api.post("/v1/lists", {"name": name, "ownerUserId": owner})
                assert response.code == 201, response
                lists.append(response.json()["list"]["id"])
            batch = await Client(server.origin, dialer_key).post(
                "/v1/calls/batch",
                {
                    "calls": [
                        dialer_call(hooks, None, n, prospect={"email": f"p{n}@hooks.example"})
                        for n in (1, 2)
                    ]
                },
            )
            assert batch.code == 200, batch
            calls = [result["callId"] for result in batch.json()["results"]]
            missing = await api.get(f"/v1/calls/{uuid.uuid4()}")
            assert missing.code == 404
            assert (await Client(server.origin, None).get("/no/such/path")).code == 404
            # Workspace Busy: LIMIT requests pass, the next three are 429.
            busy_api = Client(server.origin, busy.key)
            codes = [(await busy_api.get("/v1/users")).code for _ in range(LIMIT + 3)]
            assert codes == [200] * LIMIT + [429] * 3

            def settled(samples) -> bool:  # every event recorded has been delivered
                return (
                    value(samples, "wsapi_webhook_attempts_total", outcome="delivered")
                    == recorded(samples)
                    == len(receiver.requests)
                    and value(samples, "wsapi_webhook_backlog") == 0
                )

            samples = await asyncio.to_thread(server.scrape_until, settled, "deliveries counted")
            text, samples = await asyncio.to_thread(server.scrape)
        finally:
            server.kill()
            await receiver.stop()

    def requests(method: str, route: str, status: int) -> float:
        return value(samples, REQUESTS, method=method, route=route, status=str(status))

    assert requests("GET", "/v1/users", 200) == LIMIT
    assert requests("GET", "/v1/users", 429) == 3
    assert value(samples, "wsapi_rate_limited_total") == 3
    assert requests("GET", "/v1/calls/{id}", 404) == 1  # the route's template, never the id
    assert requests("GET", "unmatched", 404) == 1  # a fixed label, never the raw path
    assert requests("POST", "/v1/lists", 201) == 2
    assert requests("POST", "/v1/calls/batch", 200) == 1
    assert requests("POST", "/v1/webhook-endpoints", 201) == 1
    counted = [
        v
        for (name, labels), v in samples.items()
        if name == REQUESTS and dict(labels)["route"] != "/readyz"  # (waiting for the start)
    ]
    assert sum(counted) == LIMIT + 3 + 6
    duration = {
        dict(labels).get("le"): v
        for (name, labels), v in samples.items()
        if name == "wsapi_http_request_duration_seconds_bucket"
        and dict(labels)["route"] == "/v1/users"
    }
    assert duration["+Inf"] == LIMIT + 3
    assert value(
        samples, "wsapi_http_request_duration_seconds_count", method="GET", route="/v1/users"
    ) == (LIMIT + 3)
    assert value(samples, "wsapi_http_requests_in_flight") == 0
    assert value(samples, "wsapi_store_up") == 1
    assert value(samples, "wsapi_store_errors_total", reason="unavailable") == 0
    assert value(samples, "wsapi_events_recorded_total", type="list.created") == 2
    assert value(samples, "wsapi_events_recorded_total", type="call.created") == 2
    assert value(samples, "wsapi_events_recorded_total", type="prospect.created") == 2
    assert value(samples, "wsapi_import_records_total", kind="calls", outcome="created") == 2
    # Every event recorded (of workspace Hooks, the one with an endpoint) delivered once.
    assert recorded(samples) >= 6
    delivered = value(samples, "wsapi_webhook_attempts_total", outcome="delivered")
    assert delivered == recorded(samples) == len(receiver.requests)
    assert value(samples, "wsapi_webhook_attempts_total", outcome="failed") == 0
    assert value(samples, "wsapi_webhook_delivery_lag_seconds_count") == delivered
    assert value(samples, "wsapi_webhook_delivery_lag_seconds_sum") > 0
    assert value(samples, "wsapi_webhook_backlog") == 0
    assert value(samples, "wsapi_streams_open") == 0
    assert value(samples, "wsapi_recording_bytes_sent_total") == 0

    # Every name is the service's, and promtool finds nothing to say against the text.
    assert all(name.startswith("wsapi_") for name, _ in samples)
    promtool_check("metrics", text=text)
    # No label value is an id, a key or a path a client chose.
    secrets = {hooks.id, busy.id, hooks.key, busy.key, dialer_key, *lists, *calls}
    secrets |= {user["id"] for user in (*hooks.users, *busy.users)}
    shown = label_values(samples)
    assert not {v for v in shown for s in secrets if s in v}
    assert not any("no/such" in v for v in shown)


async def test_the_listeners_serve_apart(tmp_path):
    """The metrics listener answers /metrics, /healthz and /readyz and nothing of the API (a
    valid key or not); the API's port has no /metrics."""
    env = environment(tmp_path)
    async with database(env, "Apart") as (_, (ws,)):
        server = MetricsServe(tmp_path, env)
        try:
            await asyncio.to_thread(server.wait_up, "/readyz")
            for path in ("/metrics", "/healthz", "/readyz"):
                assert (await asyncio.to_thread(fetch, server.metrics + path))[0] == 200
            for path in ("/v1/users", "/v1/openapi.json", "/reference", "/"):
                status, _, body = await asyncio.to_thread(fetch, server.metrics + path, ws.key)
                assert status == 404 and json.loads(body)["code"] == "not_found", path
            assert (await asyncio.to_thread(fetch, server.origin + "/v1/users", ws.key))[0] == 200
            status, headers, body = await asyncio.to_thread(fetch, server.origin + "/metrics")
            assert status == 404 and b"wsapi_" not in body
            assert headers["Content-Type"] == "application/problem+json"
        finally:
            server.kill()


def held_request(port: int) -> socket.socket:
    """A request in flight: its head sent, its body not yet (closed by the caller)."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn.sendall(
        b"POST /v1/lists HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100\r\n\r\n{"
    )
    return conn


@pytest.mark.parametrize("processes", ["1", "2"])
def test_requests_in_flight_are_counted_until_they_end(tmp_path, processes):
    server = MetricsServe(
        tmp_path,
        {"MONGODB_URI": "memory"}
        if processes == "1"
        else {"MONGODB_URI": "", "WSAPI_SQLITE_PATH": str(tmp_path / "db.sqlite3")},
        "--processes",
        processes,
    )
    try:
        server.wait_up("/readyz")
        held = [held_request(server.port) for _ in range(3)]
        server.scrape_until(
            lambda s: value(s, "wsapi_http_requests_in_flight") == 3, "three requests in flight"
        )
        for conn in held:
            conn.close()
        server.scrape_until(
            lambda s: value(s, "wsapi_http_requests_in_flight") == 0, "none in flight"
        )
    finally:
        server.kill()


def test_a_database_that_is_down_is_503_in_its_series(tmp_path):
    """Started while MongoDB is unreachable: /readyz on both listeners is 503, the API answers
    503, and the figures say so (requests by status, store errors, store up)."""
    env = {
        "MONGODB_URI": f"mongodb://127.0.0.1:{free_port()}",
        "WSAPI_DB_TIMEOUT_SECONDS": "0.5",
        "WSAPI_SECRET": TEST_SECRET,
    }
    server = MetricsServe(tmp_path, env)
    try:
        server.wait_up("/healthz")
        key = jwt.encode({"kid": "k", "wid": "w", "iat": 1}, TEST_SECRET, algorithm="HS256")
        for _ in range(3):
            status, headers, _ = fetch(server.origin + "/v1/users", key)
            assert status == 503 and headers["Retry-After"] == "5"
        assert fetch(server.origin + "/readyz")[0] == 503
        assert fetch(server.metrics + "/readyz")[0] == 503
        text, samples = server.scrape()
    finally:
        server.kill()
    assert value(samples, REQUESTS, method="GET", route="/v1/users", status="503") == 3
    assert value(samples, REQUESTS, method="GET", route="/readyz", status="503") == 1
    assert value(samples, "wsapi_store_errors_total", reason="not_ready") == 3
    assert value(samples, "wsapi_store_up") == 0
    promtool_check("metrics", text=text)


@pytest.mark.wire
async def test_a_database_lost_while_serving_is_503_in_its_series(
    tmp_path,
    own_server,  # noqa: F811 - the fixture imported above
):
    """The database server stops under a serving process: the API's 503s are counted by status
    and as store errors, and the store is reported down (wire tier: a server process to stop)."""
    workspace, database = await new_workspace(own_server.uri, "Lost")
    env = {
        "MONGODB_URI": own_server.uri,
        "WSAPI_DATABASE": database,
        "WSAPI_SECRET": TEST_SECRET,
        "WSAPI_DB_TIMEOUT_SECONDS": "1",
    }
    server = MetricsServe(tmp_path, env)
    try:
        await asyncio.to_thread(server.wait_up, "/readyz")
        url = server.origin + "/v1/lists"
        assert (await asyncio.to_thread(fetch, url, workspace.key))[0] == 200
        await asyncio.to_thread(own_server.stop)
        for _ in range(3):
            status, headers, _ = await asyncio.to_thread(fetch, url, workspace.key)
            assert status == 503 and headers["Retry-After"] == "5"
        text, samples = await asyncio.to_thread(server.scrape)
    finally:
        server.kill()
    assert value(samples, REQUESTS, method="GET", route="/v1/lists", status="200") == 1
    assert value(samples, REQUESTS, method="GET", route="/v1/lists", status="503") == 3
    lost = sum(
        value(samples, "wsapi_store_errors_total", reason=reason)
        for reason in ("unavailable", "timeout")
    )
    assert lost == 3
    assert value(samples, "wsapi_store_errors_total", reason="not_ready") == 0
    assert value(samples, "wsapi_store_up") == 0
    promtool_check("metrics", text=text)


async def test_processes_are_summed_and_their_directory_is_managed(tmp_path):
    """`serve --processes 2`: requests answered by both workers are counted once each in every
    scrape, whichever worker answers it; a worker killed with SIGKILL is replaced and its counts
    stay while its live gauges go; the directory goes when serve stops, and one left by a killed
    supervisor is removed by the next serve."""
    env = {**environment(tmp_path), "WSAPI_RATE_LIMIT_PER_MINUTE": "100000"}
    async with database(env, "Many") as (_, (ws,)):
        server = MetricsServe(tmp_path, env, "--processes", "2")
        try:
            await asyncio.to_thread(server.wait_up, "/readyz")
            (directory,) = server.multiprocess_dirs()
            assert directory.name == f"wsapi-metrics-{server.process.pid}"
            assert oct(directory.stat().st_mode & 0o777) == "0o700"
            workers = psutil.Process(server.process.pid).children()
            assert len(workers) == 2

            def answered(path: str) -> set[int]:
                """The workers that have answered `path` with 200 (their access lines)."""
                lines = [json.loads(line) for line in server.log.read_text().splitlines()]
                return {
                    line["pid"]
                    for line in lines
                    if line.get("path") == path and line.get("status") == 200
                }

            async def both_ready() -> bool:
                await asyncio.to_thread(fetch, server.origin + "/readyz")  # a new connection
                return len(answered("/readyz")) == 2

            # One worker said ready; the other may still be opening its store (and answers 503
            # meanwhile): ask on new connections until both have said so.
            await until(both_ready, timeout=60, what="both workers ready")

            sent = 0  # new connections until both workers have answered some
            while sent < 20 or len(answered("/v1/users")) < 2:
                assert sent < 400, "one worker answered every connection"
                status = (await asyncio.to_thread(fetch, server.origin + "/v1/users", ws.key))[0]
                assert status == 200
                sent += 1
            for _ in range(6):  # each scrape on a new connection, whichever worker takes it
                samples = (await asyncio.to_thread(server.scrape))[1]
                got = value(samples, REQUESTS, method="GET", route="/v1/users", status="200")
                assert got == sent
                assert value(samples, "wsapi_http_requests_in_flight") == 0
                assert value(samples, "wsapi_store_up") == 1
            text = (await asyncio.to_thread(server.scrape))[0]
            promtool_check("metrics", text=text)

            victim = workers[0]
            victim.kill()
            deadline = time.monotonic() + 20
            while True:
                alive = psutil.Process(server.process.pid).children()
                if len(alive) == 2 and victim.pid not in {w.pid for w in alive}:
                    break
                assert time.monotonic() < deadline, server.log.read_text()
                await asyncio.sleep(0.1)
            await asyncio.to_thread(server.wait_up, "/readyz")
            assert not list(directory.glob(f"gauge_live*_{victim.pid}.db"))
            assert list(directory.glob(f"counter_{victim.pid}.db"))  # its counts are kept
            samples = (await asyncio.to_thread(server.scrape))[1]
            assert value(samples, REQUESTS, method="GET", route="/v1/users", status="200") == sent
            assert await asyncio.to_thread(server.terminate) == 0
            assert not directory.exists()

            # A supervisor killed outright leaves its directory; the next serve removes it.
            killed = MetricsServe(tmp_path, env, "--processes", "2")
            await asyncio.to_thread(killed.wait_up, "/readyz")
            (left,) = killed.multiprocess_dirs()
            os.kill(killed.process.pid, signal.SIGKILL)
            killed.process.wait(10)
            await asyncio.to_thread(killed.kill)  # and its workers
            assert left.exists()
            server = MetricsServe(tmp_path, env, "--processes", "2")
            await asyncio.to_thread(server.wait_up, "/readyz")
            assert not left.exists()
            assert [d.name for d in server.multiprocess_dirs()] == [
                f"wsapi-metrics-{server.process.pid}"
            ]
        finally:
            server.kill()


@pytest.mark.parametrize("bad", ["70000", "-1"])
def test_a_metrics_port_out_of_range_is_refused(bad):
    from server.config import ConfigError

    with pytest.raises(ConfigError, match="metrics_port"):
        load_config(environ={"MONGODB_URI": "memory", "WSAPI_METRICS_PORT": bad})
