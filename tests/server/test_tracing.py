"""Tracing (server/tracing.py): a span per request and per store call, carrying the request id
of the log lines; recorded by the SDK's in-memory exporter in the app under test, and sent by a
real `serve` to an OTLP/HTTP receiver when OTEL_EXPORTER_OTLP_ENDPOINT is set. Without the
endpoint, or without the `otel` extra, nothing of OpenTelemetry is imported."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import textwrap

import pytest
import tornado.web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from server.app import make_app
from server.tracing import REQUEST_ID, Tracing
from server.tracing import start as start_tracing
from tests.helpers import TEST_SECRET
from tests.server.metrics_helpers import MetricsServe, fetch
from tests.webhooks.receiver import wait_for


@pytest.fixture
def exporter():
    return InMemorySpanExporter()


@pytest.fixture
def tracing(exporter):
    tracing = Tracing(exporter)
    yield tracing
    tracing.stop()


@pytest.fixture
def app(config, store, auth, app_services, tracing):
    return make_app(config, tracing.wrap(store), auth, **app_services)


def spans_of(exporter, request_id: str) -> list:
    return [s for s in exporter.get_finished_spans() if s.attributes.get(REQUEST_ID) == request_id]


async def test_a_request_and_its_store_calls_are_spans_with_its_request_id(
    api, ws_a, exporter, caplog
):
    caplog.set_level(logging.INFO, logger="workspace_api.access")
    response = await api.get("/v1/users", headers={"X-Request-Id": "trace-me-1"})
    assert response.code == 200
    created = await api.post("/v1/lists", {"name": "Traced", "ownerUserId": ws_a.users[0]["id"]})
    assert created.code == 201
    generated = created.headers["X-Request-Id"]  # made by the service

    for request_id, store_call in (("trace-me-1", "store.users."), (generated, "store.lists.")):
        spans = spans_of(exporter, request_id)
        (server,) = [s for s in spans if s.kind == SpanKind.SERVER]
        stored = [s for s in spans if s.name.startswith("store.")]
        assert any(s.name.startswith(store_call) for s in stored), [s.name for s in spans]
        for span in stored:  # children of the request's span, in its trace
            assert span.kind == SpanKind.CLIENT
            assert span.context.trace_id == server.context.trace_id
            assert span.parent is not None and span.parent.span_id == server.context.span_id
        # The access log line of the request carries the same id.
        lines = [r.fields for r in caplog.records if getattr(r, "fields", None)]
        assert any(line["requestId"] == request_id for line in lines)
    # Store calls outside requests (background loops) are not traced.
    unmarked = [
        s.name
        for s in exporter.get_finished_spans()
        if s.name.startswith("store.") and not s.attributes.get(REQUEST_ID)
    ]
    assert unmarked == []


async def test_the_endpoint_variable_turns_tracing_on(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert start_tracing() is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    tracing = start_tracing()
    try:
        assert isinstance(tracing, Tracing)
    finally:
        assert tracing is not None
        tracing.stop()


class _Traces(tornado.web.RequestHandler):
    def initialize(self, received: list) -> None:
        self.received = received

    def post(self) -> None:
        self.received.append(ExportTraceServiceRequest.FromString(self.request.body))
        self.set_header("Content-Type", "application/x-protobuf")
        self.finish(b"")


async def test_serve_sends_spans_to_the_otlp_endpoint(tmp_path):
    """A real `serve` with OTEL_EXPORTER_OTLP_ENDPOINT pointing at an OTLP/HTTP receiver: the
    request's server span and its store spans arrive with the response's request id."""
    received: list = []
    sockets = bind_sockets(0, "127.0.0.1")
    receiver = HTTPServer(
        tornado.web.Application([(r"/v1/traces", _Traces, {"received": received})])
    )
    receiver.add_sockets(sockets)
    port = sockets[0].getsockname()[1]
    env = {
        "MONGODB_URI": "memory",
        "WSAPI_SECRET": TEST_SECRET,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    server = MetricsServe(tmp_path, env)
    try:
        await asyncio.to_thread(server.wait_up, "/readyz")
        status, headers, _ = await asyncio.to_thread(fetch, server.origin + "/readyz")
        assert status == 200
        request_id = headers["X-Request-Id"]

        def spans() -> dict[str, dict]:
            found = {}
            for export in received:
                for resource in export.resource_spans:
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            attributes = {a.key: a.value.string_value for a in span.attributes}
                            if attributes.get(REQUEST_ID) == request_id:
                                found[span.name] = attributes
            return found

        await wait_for(lambda: "store.readiness" in spans(), what="the spans")
        assert any(not name.startswith("store.") for name in spans()), spans()  # the request's
    finally:
        server.kill()
        receiver.stop()


SCRIPT = textwrap.dedent(
    """
    import asyncio, json, os, signal, sys, threading, urllib.request

    if os.environ.get("HIDE_OTEL"):  # as if the `otel` extra were not installed
        class Hide:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "opentelemetry":
                    raise ImportError(f"No module named {name!r}", name=name)
        sys.meta_path.insert(0, Hide())

    from tornado.netutil import bind_sockets
    from server.config import load_config
    from server.serve import run_worker

    config = load_config()
    sockets = bind_sockets(0, "127.0.0.1")
    port = sockets[0].getsockname()[1]

    async def main():
        worker = asyncio.ensure_future(run_worker(config, sockets))
        def ask():
            for _ in range(100):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/openapi.json") as r:
                        return r.status
                except OSError:
                    import time; time.sleep(0.1)
        status = await asyncio.to_thread(ask)
        os.kill(os.getpid(), signal.SIGTERM)
        await worker
        return status

    status = asyncio.run(main())
    loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
    print(json.dumps({"status": status, "loaded": loaded}))
    """
)


@pytest.mark.parametrize(
    "env",
    [
        {},  # no endpoint: off
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "HIDE_OTEL": "1"},  # no extra
    ],
    ids=["no-endpoint", "no-extra"],
)
def test_without_the_endpoint_or_the_extra_nothing_is_imported(env):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environ.update({"MONGODB_URI": "memory", "WSAPI_SECRET": TEST_SECRET, **env})
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, env=environ
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"status": 200, "loaded": []}
    if env:
        assert "OpenTelemetry is not installed" in done.stderr
