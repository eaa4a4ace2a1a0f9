"""Fixtures of the webhook tests: the app configured for a receiver on loopback (allowed
networks 127.0.0.0/8, a short retry schedule, a short settle period and poll), the receiver,
and dispatchers started on the test's loop and stopped after it."""

from __future__ import annotations

import pytest

from server.config import load_config
from server.webhook_dispatch import dispatcher
from tests.helpers import test_environ
from tests.webhooks.receiver import Receiver
from webhooks.dispatcher import Dispatcher

WEBHOOK_ENV = {
    "WSAPI_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
    "WSAPI_WEBHOOK_RETRY_SCHEDULE": "1,1,2",
    "WSAPI_SYNC_SETTLE_SECONDS": "0.3",
    "WSAPI_WEBHOOK_POLL_SECONDS": "0.1",
    "WSAPI_WEBHOOK_TIMEOUT_SECONDS": "5",
    "WSAPI_WEBHOOK_LEASE_SECONDS": "20",
}


@pytest.fixture
def config():
    return load_config(environ=test_environ(shared=True, **WEBHOOK_ENV))


@pytest.fixture
def receiver(io_loop):
    server = Receiver().start()
    yield server
    io_loop.run_sync(server.stop)


@pytest.fixture
def start_dispatcher(io_loop, store, config):
    """`start_dispatcher(**config changes)` from inside a test: a running dispatcher."""
    started: list[Dispatcher] = []

    def start(**changes) -> Dispatcher:
        running = dispatcher(store, config.replace(**changes)).start()
        started.append(running)
        return running

    yield start
    for running in started:
        io_loop.run_sync(lambda running=running: running.stop(5))
