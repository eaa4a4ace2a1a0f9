"""Application assembly: shared services built once, handler modules collected in one place."""

from __future__ import annotations

import importlib
import time

import tornado.web

from handlers.base import NotFoundHandler
from schemas import Schemas
from server.auth import KeyService, resolve_secret
from server.config import Config
from server.logs import access_log
from store.database import Store, open_store

# Each module ends with `default_handlers = [(pattern, Handler[, kwargs])]`.
HANDLER_MODULES = [
    "handlers.users",
    "handlers.lists",
]


def collect_handlers() -> list:
    routes = []
    for name in HANDLER_MODULES:
        routes.extend(importlib.import_module(name).default_handlers)
    routes.append((r".*", NotFoundHandler))
    return routes


def make_app(config: Config, store: Store, auth: KeyService, **services) -> tornado.web.Application:
    """The Tornado application; `services` (provider client, rate limiter...) join settings."""
    settings = dict(
        config=config,
        store=store,
        auth=auth,
        schemas=Schemas(),
        max_body_bytes=config.max_body_bytes,
        log_function=access_log,
        debug=False,
        xsrf_cookies=False,
        **services,
    )
    return tornado.web.Application(collect_handlers(), **settings)


async def open_services(config: Config, clock=time.monotonic) -> tuple[Store, KeyService]:
    """Connect the store (creating indexes idempotently) and the key service."""
    secret = resolve_secret(config)
    store = open_store(
        config.mongodb_uri, config.database, config.db_timeout_seconds, config.default_region
    )
    try:
        await store.ensure_indexes()
    except Exception:
        store.close()
        raise
    auth = KeyService(secret, store.keys, config.key_cache_seconds, clock)
    return store, auth


def http_server(app: tornado.web.Application, config: Config):
    """An HTTPServer with the service's limits: bodies over the hard cap are cut off by Tornado
    (the API answers 413 itself for bodies between max_body_bytes and the cap), and idle or
    slow clients are disconnected."""
    from tornado.httpserver import HTTPServer

    return HTTPServer(
        app,
        max_body_size=max(config.max_body_bytes * 4, 4 * 1024 * 1024),
        max_header_size=16 * 1024,
        idle_connection_timeout=config.idle_timeout_seconds,
        body_timeout=config.body_timeout_seconds,
    )
