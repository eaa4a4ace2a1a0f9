"""Application assembly: shared services built once, handler modules collected in one place."""

from __future__ import annotations

import gc
import importlib
from collections.abc import Callable
from typing import Any

import tornado.web
from tornado.httpserver import HTTPServer

from handlers.base import NotFoundHandler
from schemas import Schemas
from schemas.openapi import ENDPOINTS as ENDPOINT_FILES
from server.auth import KeyService
from server.config import Config
from server.erasure_work import ErasureWork
from server.gate import Gate
from server.list_work import ListWork
from server.logs import access_log
from server.ratelimit import RateLimiter, counters_for
from server.webhook_dispatch import webhook_policy
from store.contract import Store
from store.cursors import Cursors
from telephony.upstream import UpstreamClient

# Each module ends with `default_handlers = [(pattern, Handler[, kwargs])]`.
HANDLER_MODULES = [
    "handlers.apikey",
    "handlers.users",
    "handlers.lists",
    "handlers.calls",
    "handlers.provider",
    "handlers.recordings",
    "handlers.prospects",
    "handlers.dnc",
    "handlers.activities",
    "handlers.exports",
    "handlers.events",
    "handlers.webhooks",
    "handlers.erasures",
    "handlers.reporting",
    "handlers.openapi",
    "handlers.console",
    "handlers.health",
]


def collect_handlers() -> list:
    routes = []
    for name in HANDLER_MODULES:
        routes.extend(importlib.import_module(name).default_handlers)
    routes.append((r".*", NotFoundHandler))
    return routes


def make_app(
    config: Config, store: Store, auth: KeyService, **services: Any
) -> tornado.web.Application:
    """The Tornado application; `services` (provider client, rate limiter...) join settings.
    Its `clock` is the key service's (one clock for the store, the services and the sweeps)."""
    clock = services.setdefault("clock", auth.clock)
    services.setdefault("upstream", UpstreamClient.from_config(config))
    services.setdefault(
        "rate_limiter", RateLimiter(counters_for(store), config.rate_limit_per_minute, clock=clock)
    )
    services.setdefault(
        "callback_limiter",
        RateLimiter(
            counters_for(store),
            config.provider_callbacks_per_minute,
            clock=clock,
            name="provider-callbacks",
        ),
    )
    services.setdefault("cursors", Cursors(auth.subkey("cursors")))
    services.setdefault("webhook_policy", webhook_policy(config))
    services.setdefault("metrics", None)  # server.metrics.Metrics when metrics_port is set
    # The lists' background work (server/list_work.py): `serve` starts it; a DELETE kicks it.
    services.setdefault("list_work", ListWork(store, config.list_purge_batch))
    # Erasures' background work (server/erasure_work.py): `serve` starts it; a POST kicks it.
    services.setdefault("erasure_work", ErasureWork(store, services["upstream"]))
    schemas = Schemas()
    routes = collect_handlers()
    log_function: Callable[[tornado.web.RequestHandler], None] = access_log
    if (metrics := services["metrics"]) is not None:
        metrics.learn_routes(routes, endpoint_paths(schemas))
        log_function = counted(metrics.observe)
        writer = getattr(store, "event_writer", None)  # both backends' (store/*/events.py)
        if writer is not None:
            writer.observe = metrics.event_recorded
    settings = dict(
        config=config,
        store=store,
        auth=auth,
        schemas=schemas,
        max_body_bytes=config.max_body_bytes,
        log_function=log_function,
        debug=False,
        xsrf_cookies=False,
        **services,
    )
    return tornado.web.Application(routes, **settings)


def endpoint_paths(schemas: Schemas) -> list[str]:
    """The path templates of the OpenAPI document's operations (/v1/calls/{id})."""
    return [doc["path"] for sid, doc in schemas.documents.items() if sid.startswith(ENDPOINT_FILES)]


def counted(
    observe: Callable[[tornado.web.RequestHandler], None],
) -> Callable[[tornado.web.RequestHandler], None]:
    """The log function with metrics on: the request's figures, then its access line."""

    def log_function(handler: tornado.web.RequestHandler) -> None:
        observe(handler)
        access_log(handler)

    return log_function


def make_metrics_app(
    config: Config, store: Store, metrics: Any, schemas: Schemas
) -> tornado.web.Application:
    """The metrics listener's application (`metrics_port`): /metrics, /healthz and /readyz
    (the API's own readiness check), a JSON 404 for everything else; never the API. Its access
    lines are written for failed requests only (a scrape every few seconds is no news)."""
    from handlers.health import default_handlers as health
    from handlers.metrics import default_handlers as exposition

    return tornado.web.Application(
        [*exposition, *health, (r".*", NotFoundHandler)],
        config=config,
        store=store,
        metrics=metrics,
        schemas=schemas,
        max_body_bytes=config.max_body_bytes,
        log_function=failures_only,
        debug=False,
        xsrf_cookies=False,
    )


def failures_only(handler: tornado.web.RequestHandler) -> None:
    if handler.get_status() >= 400:
        access_log(handler)


def http_server(app: tornado.web.Application, config: Config) -> HTTPServer:
    """An HTTPServer with the service's limits: bodies over max_body_bytes get the API's 413 at
    any size (server.gate), and idle or slow clients are disconnected (idle_connection_timeout
    also bounds the wait for a request's headers)."""
    metrics = app.settings.get("metrics")
    gate = Gate(
        app,
        config.max_body_bytes,
        linger_seconds=min(5, config.body_timeout_seconds),
        # Workers of `serve --processes N` move their in-flight gauge per request (its value
        # lives in a file a scrape sums); one process reads the gate's count at scrape time.
        in_flight=metrics.in_flight if metrics is not None and metrics.multiprocess else None,
    )
    if metrics is not None and not metrics.multiprocess:
        metrics.in_flight.set_function(lambda: gate.inflight)
    return HTTPServer(
        gate,
        max_body_size=max(config.max_body_bytes * 4, 4 * 1024 * 1024),
        max_header_size=16 * 1024,
        idle_connection_timeout=config.idle_timeout_seconds,
        body_timeout=config.body_timeout_seconds,
    )


def freeze_heap() -> None:
    """Call once the process is about to serve: what exists now (modules, schemas, the app, the
    store) lives as long as the process, so it is moved out of the garbage collector's sight,
    and a full collection then walks only what requests made. Full collections over the
    start-up heap were 30-40 ms pauses that every request in flight waited out (the p99 of
    `bench.scale` L2; docs/performance.md)."""
    gc.collect()
    gc.freeze()
