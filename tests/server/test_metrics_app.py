"""Metrics of the app under test (server.metrics in settings, as `serve` with metrics_port puts
it): the route labels of every route, and the figures of recordings (bytes relayed, provider
failures, streams open) against the simulated provider."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import generate_latest

from schemas import Schemas
from server.app import collect_handlers, endpoint_paths
from server.metrics import UNMATCHED, Metrics
from telephony.upstream import UpstreamClient
from tests.handlers.test_recordings import (  # noqa: F401 - fixtures
    ACCOUNT_ID,
    AUTH_TOKEN,
    REF,
    calls,
    path,
    provider,
)
from tests.server.metrics_helpers import parse, value


@pytest.fixture
def metrics():
    return Metrics()


@pytest.fixture
def app_services(provider, metrics):  # noqa: F811 - the fixture imported above
    upstream = UpstreamClient(
        provider.base_url, ACCOUNT_ID, AUTH_TOKEN, connect_timeout=1, header_timeout=0.5
    )
    return {"upstream": upstream, "metrics": metrics}


def figures(metrics: Metrics):
    return parse(generate_latest(metrics.registry).decode())


def test_every_route_is_labelled_with_its_template():
    metrics = Metrics()
    rules = collect_handlers()
    metrics.learn_routes(rules, endpoint_paths(Schemas()))
    documented = set(endpoint_paths(Schemas()))
    for pattern, cls, *_ in rules:
        route = metrics.routes[cls]
        if pattern.startswith("/v1/") or pattern in ("/healthz", "/readyz"):
            assert route in documented, (pattern, route)
        elif pattern == r".*":
            assert route == UNMATCHED
        else:
            assert "(" not in route and route.startswith("/"), (pattern, route)
    assert metrics.routes[dict((p, c) for p, c, *_ in rules)[r"/v1/calls/([^/]+)"]] == (
        "/v1/calls/{id}"
    )


async def test_recordings_count_bytes_failures_and_open_streams(
    api,
    origin,
    ws_a,
    calls,  # noqa: F811
    provider,  # noqa: F811
    metrics,
):
    size = provider.library.get(REF).size
    response = await api.get(path(calls["plain"]))
    assert response.code == 200 and len(response.body) == size
    ranged = await api.get(path(calls["plain"]), headers={"Range": "bytes=0-99"})
    assert ranged.code == 206
    samples = figures(metrics)
    assert value(samples, "wsapi_recording_bytes_sent_total") == size + 100
    assert value(samples, "wsapi_upstream_errors_total") == 0
    route = "/v1/calls/{id}/recording"
    assert value(samples, "wsapi_http_requests_total", method="GET", route=route, status="206") == 1

    provider.faults.set("500")
    assert (await api.get(path(calls["plain"]))).code == 502
    provider.faults.set("stall", stall_seconds=5)
    assert (await api.get(path(calls["plain"]))).code == 502  # the header timeout
    samples = figures(metrics)
    assert value(samples, "wsapi_upstream_errors_total") == 2
    assert value(samples, "wsapi_http_requests_total", method="GET", route=route, status="502") == 2

    # A client that asks for a long recording and reads nothing holds a stream open; when it
    # goes, the stream is given back.
    provider.faults.clear()
    port = int(origin.rsplit(":", 1)[1])
    _reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"GET {path(calls['big'])} HTTP/1.1\r\nHost: api\r\n"
        f"Authorization: Bearer {ws_a.key}\r\n\r\n".encode()
    )
    await until_value(metrics, "wsapi_streams_open", 1)
    writer.close()
    await until_value(metrics, "wsapi_streams_open", 0)


async def until_value(metrics: Metrics, name: str, wanted: float, timeout: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while value(figures(metrics), name) != wanted:
        assert asyncio.get_running_loop().time() < deadline, f"{name} never became {wanted}"
        await asyncio.sleep(0.05)
