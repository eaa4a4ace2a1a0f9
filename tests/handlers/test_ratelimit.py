"""Per-workspace rate limiting: one quota per workspace, counted in the store, so shared by all
its keys, the console and every app instance (process) over the same database. The clock is
injected; nothing here sleeps."""

import asyncio
import datetime as dt
import math
import re

import pytest
from tornado.netutil import bind_sockets

from server.app import http_server as make_http_server
from server.app import make_app
from server.ratelimit import EPOCH, RateLimiter
from tests.helpers import Client, FakeClock

LIMIT = 5
POLICY = re.compile(r'^"workspace";q=(\d+);w=(\d+)$')
STATE = re.compile(r'^"workspace";r=(\d+);t=(\d+)$')


@pytest.fixture
def rate_clock():
    """Unix time, frozen in 2027 (a real date: MongoDB's TTL monitor leaves the counters be)."""
    return FakeClock(1_800_000_000.0)


@pytest.fixture
def limiter(store, rate_clock):
    return RateLimiter(store.ratelimits, LIMIT, clock=rate_clock)


@pytest.fixture
def app_services(limiter):
    return {"rate_limiter": limiter}


def state(response) -> tuple[int, int]:
    """(remaining, seconds to reset) from the RateLimit field."""
    match = STATE.match(response.headers["RateLimit"])
    assert match, response.headers["RateLimit"]
    return int(match.group(1)), int(match.group(2))


async def use_up(client, count=LIMIT):
    for _ in range(count):
        assert (await client.get("/v1/users")).code == 200


async def test_every_counted_response_carries_policy_and_remaining_quota(
    api, limiter, ws_a, rate_clock
):
    start, end = limiter.window_of(ws_a.id, rate_clock.time())
    rate_clock.set(start + 0.25)  # all requests below fall into this window
    for expected in range(LIMIT - 1, -1, -1):
        response = await api.get("/v1/users")
        assert response.code == 200
        assert response.headers["RateLimit-Policy"] == f'"workspace";q={LIMIT};w=60'
        assert state(response) == (expected, math.ceil(end - rate_clock.time()))
        rate_clock.advance(1)


async def test_over_the_limit_is_429_with_retry_after_until_the_window_ends(
    api, rate_clock, limiter, ws_a
):
    rate_clock.set(limiter.window_of(ws_a.id, rate_clock.time())[0] + 0.25)
    await use_up(api)
    response = await api.get("/v1/users")
    assert response.code == 429
    problem = response.json()
    assert problem["code"] == "rate_limited" and problem["status"] == 429
    remaining, reset = state(response)
    assert remaining == 0 and reset == 60
    assert response.headers["Retry-After"] == str(reset)
    assert POLICY.match(response.headers["RateLimit-Policy"])
    rate_clock.advance(reset - 0.5)
    assert (await api.get("/v1/users")).code == 429  # still the same window
    rate_clock.advance(0.5)
    response = await api.get("/v1/users")
    assert response.code == 200 and state(response) == (LIMIT - 1, 60)


async def test_another_workspace_is_unaffected(api, api_b):
    await use_up(api)
    assert (await api.get("/v1/users")).code == 429
    response = await api_b.get("/v1/users")
    assert response.code == 200 and state(response)[0] == LIMIT - 1


async def test_all_keys_of_a_workspace_share_one_quota(api, origin, auth, ws_a):
    _, second_key = await auth.create(ws_a.id, "second integration")
    other = Client(origin, second_key)
    await use_up(api, 3)
    await use_up(other, 2)
    assert (await api.get("/v1/users")).code == 429
    assert (await other.get("/v1/users")).code == 429


async def test_client_errors_after_authentication_count_and_carry_the_fields(api):
    missing = "00000000-0000-4000-8000-000000000000"
    responses = [
        await api.get(f"/v1/lists/{missing}"),  # 404
        await api.get("/v1/lists?pageSize=7"),  # 400
        await api.post("/v1/lists", {"name": "x"}),  # 400
        await api.fetch(
            "/v1/lists",
            "POST",
            body=b"x",  # 415
            headers={"Content-Type": "text/plain"},
        ),
    ]
    assert [r.code for r in responses] == [404, 400, 400, 415]
    assert [state(r)[0] for r in responses] == [4, 3, 2, 1]


async def test_unauthenticated_and_service_requests_are_not_counted(api, anon):
    for path in ("/v1/users", "/healthz", "/readyz", "/v1/openapi.json", "/v1/nope"):
        response = await anon.get(path)
        assert "RateLimit" not in response.headers and "RateLimit-Policy" not in response.headers
    assert (await anon.get("/v1/users", headers={"Authorization": "Bearer nope"})).code == 401
    assert state(await api.get("/v1/users"))[0] == LIMIT - 1


async def test_concurrent_requests_get_exactly_the_quota(api):
    responses = await asyncio.gather(*(api.get("/v1/users") for _ in range(LIMIT + 4)))
    codes = sorted(r.code for r in responses)
    assert codes == [200] * LIMIT + [429] * 4
    assert sorted(state(r)[0] for r in responses if r.code == 200) == list(range(LIMIT))


async def test_two_app_instances_sharing_one_store_enforce_one_limit(
    io_loop, config, store, auth, api, ws_a, rate_clock
):
    # A second "process": its own application, key service, limiter and listening socket,
    # over the same database.
    from server.auth import KeyService
    from tests.helpers import TEST_SECRET

    other_auth = KeyService(TEST_SECRET, store.keys)
    other_app = make_app(
        config,
        store,
        other_auth,
        rate_limiter=RateLimiter(store.ratelimits, LIMIT, clock=rate_clock),
    )
    sock = bind_sockets(0, "127.0.0.1")[0]
    server = make_http_server(other_app, config)
    server.add_socket(sock)
    try:
        other = Client(f"http://127.0.0.1:{sock.getsockname()[1]}", ws_a.key)
        codes = []
        for i in range(LIMIT + 2):
            codes.append((await (api if i % 2 else other).get("/v1/users")).code)
        assert codes == [200] * LIMIT + [429] * 2
        assert (await api.get("/v1/users")).code == 429
        assert (await other.get("/v1/users")).code == 429
    finally:
        server.stop()
        await server.close_all_connections()
        await other_auth.usage.stop()  # its last-use writer, as serve stops it


@pytest.mark.sqlite
async def test_counters_live_in_a_shared_file_beside_the_database(
    store, limiter, ws_a, rate_clock, api
):
    await use_up(api, 2)
    start, _ = limiter.window_of(ws_a.id, rate_clock.time())
    window = EPOCH + dt.timedelta(seconds=start)
    assert await store.ratelimits.count(ws_a.id, window) == 2
    assert store.ratelimits.path == store.path.with_name(store.path.name + "-ratelimit")
    assert store.ratelimits.path.stat().st_mode & 0o777 == 0o600
    assert "rate_limits" not in await store.collections()  # no database write per request


@pytest.mark.mongodb
async def test_counters_are_documents_that_expire(store, limiter, ws_a, rate_clock, api):
    await use_up(api, 2)
    start, end = limiter.window_of(ws_a.id, rate_clock.time())
    window = EPOCH + dt.timedelta(seconds=start)
    assert await store.ratelimits.count(ws_a.id, window) == 2
    doc = await store.db["rate_limits"].find_one({"workspaceId": ws_a.id})
    assert doc["expireAt"] == EPOCH + dt.timedelta(seconds=end + 60)  # TTL: one spare window
    indexes = await store.db["rate_limits"].index_information()
    # A TTL index where the server keeps them, else a plain one for the expiry sweep
    # (tests/store/test_indexes.py).
    expiry = indexes["ttl" if store.ttl_indexes else "expiry"]
    assert expiry["key"] == [("expireAt", 1)]
    assert expiry.get("expireAfterSeconds") == (0 if store.ttl_indexes else None)
    assert indexes["ws_window"]["unique"]
    assert next(iter(indexes["ws_window"]["key"]))[0] == "workspaceId"


def test_windows_are_offset_per_workspace_and_always_contain_now():
    limiter = RateLimiter(None, 10, clock=FakeClock(0))
    starts = set()
    for n in range(20):
        workspace = f"00000000-0000-4000-8000-{n:012d}"
        for now in (1_800_000_000.0, 1_800_000_059.5, 1_800_000_123.25):
            start, end = limiter.window_of(workspace, now)
            assert start <= now < end and end - start == 60 and start == int(start)
        starts.add(limiter.window_of(workspace, 1_800_000_000.0)[0])
    assert len(starts) > 5  # workspaces do not all reset at the same second


async def test_the_default_limit_comes_from_configuration(origin, store, auth, config, ws_a):
    assert config.rate_limit_per_minute == 600
    app = make_app(config, store, auth)
    assert app.settings["rate_limiter"].limit == 600
    assert app.settings["rate_limiter"].policy == '"workspace";q=600;w=60'
