"""Shared fixtures: the test tier's database, a fresh store per test, the app on a real loopback
port, two seeded workspaces, and HTTP clients that check the invariants of every response.
Helpers that tests import live in tests/helpers.py.

The tier is chosen by WSAPI_TEST_TIER (printed in the header of every run):
- embedded (the default): the embedded store, config.yaml's default (MONGODB_URI unset);
- wire: a FerretDB process (tests/ferretdb/, SQLite backend in a temporary directory) that the
  suite starts on a free loopback port, over a real MongoDB wire connection (wire version 21,
  MongoDB 7.0); MONGODB_URI points at it;
- mongodb: an external MongoDB at MONGODB_URI (the default tier when MONGODB_URI is a
  mongodb:// URI).
Every test starts from an empty database: on the embedded tier a file of its own; on the
MongoDB tiers its process's one database, whose indexes are built once and whose collections
are emptied after every test (`services`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket

import pytest
from pymongo import monitoring

from server.app import http_server as make_http_server
from server.app import make_app
from server.config import load_config
from server.services import open_services
from tests import wire
from tests.helpers import SHARED_DATABASE, Client, FakeClock, make_workspace, test_environ

TIERS = ("embedded", "wire", "mongodb")

# The tests stop commands with Ctrl-C (SIGINT), as a user does. A shell without job control
# starts a background job (`make test &`, nohup) with SIGINT ignored, which its children
# inherit, and a Python started so never raises KeyboardInterrupt: restore the default here,
# which the commands the tests start then inherit.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _tier() -> str:
    uri = os.environ.get("MONGODB_URI", "memory")
    tier = os.environ.get("WSAPI_TEST_TIER") or (
        "mongodb" if uri.startswith("mongodb") else "embedded"
    )
    if tier not in TIERS:
        raise pytest.UsageError(f"WSAPI_TEST_TIER must be one of {', '.join(TIERS)}: {tier!r}")
    if tier == "embedded" and uri.startswith("mongodb"):
        raise pytest.UsageError(
            "WSAPI_TEST_TIER=embedded with a mongodb:// MONGODB_URI: unset one of them"
        )
    if tier == "mongodb" and not uri.startswith("mongodb"):
        raise pytest.UsageError("WSAPI_TEST_TIER=mongodb needs MONGODB_URI=mongodb://...")
    return tier


TIER = _tier()
BACKEND = "sqlite" if TIER == "embedded" else "mongodb"


def pytest_report_header(config):
    detail = {
        "embedded": "the in-process embedded store",
        "wire": "FerretDB 1.24.2 on SQLite over the MongoDB wire protocol (wire version 21), "
        "started by the suite (tests/ferretdb/)",
        "mongodb": "MongoDB at MONGODB_URI",
    }[TIER]
    return f"test tier: {TIER} ({detail})"


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "wire: stops, kills and starts a database server process of its own (FerretDB "
        "on SQLite); runs on the wire tier only",
    )
    config.addinivalue_line(
        "markers",
        "server_limit(name): meets a known limit of the wire tier's server (tests/wire.py "
        "LIMITS); skipped there with the limit as its reason",
    )
    config.addinivalue_line(
        "markers",
        "server_db: needs a database server that several processes share; runs on "
        "the wire and mongodb tiers",
    )
    config.addinivalue_line(
        "markers",
        "image: builds the container image and serves it from its root filesystem; runs on "
        "the embedded tier only (the image serves its own store, never the one under test)",
    )
    config.addinivalue_line(
        "markers",
        "long: runs for tens of seconds (a benchmark's smoke run, a published tool, a proof "
        "with processes); its file is handed to a test worker first",
    )
    config.addinivalue_line(
        "markers",
        "own_store: runs processes on a store of their own (a demo's throwaway one, a "
        "benchmark's), never the store under test; runs on the embedded tier only",
    )


# The container image test serves the image's own embedded store, whatever the tier: run once
# per `make test`, on the embedded tier, so the image is not built twice.
IMAGE_ON_EMBEDDED_TIER = (
    "the container image test does not use the store under test (the image serves its own "
    "embedded store): it runs on the embedded tier only"
)


# The tests marked `own_store` (a demo on its throwaway store driven by a published tool, a
# browser or the documents' examples; a benchmark's smoke run) do the same on every tier: run
# once per `make test`, on the embedded tier.
OWN_STORE_ON_EMBEDDED_TIER = (
    "does not use the store under test (its processes run on a store of their own): it runs on "
    "the embedded tier only"
)


def pytest_collection_modifyitems(config, items):
    """Tests that only make sense for one backend or tier are deselected (not skipped) in the
    others, so each tier's summary says exactly what it ran:
    - `mongodb` and `server_db`: the MongoDB backend's own mechanics, or a MongoDB server
      shared by several processes (the SQLite twins are marked `sqlite`);
    - `sqlite`: the SQLite backend's own mechanics;
    - `wire`: stops, kills and starts a FerretDB process of its own (wire tier only)."""

    def wanted(item) -> bool:
        if item.get_closest_marker("wire") and TIER != "wire":
            return False
        if BACKEND == "sqlite":
            return not (item.get_closest_marker("mongodb") or item.get_closest_marker("server_db"))
        return not item.get_closest_marker("sqlite")

    for item in items:
        for marker in item.iter_markers("server_limit"):
            if reason := wire.limit(marker.args[0]):
                item.add_marker(pytest.mark.skip(reason=reason))
        if item.get_closest_marker("image") and TIER != "embedded":
            item.add_marker(pytest.mark.skip(reason=IMAGE_ON_EMBEDDED_TIER))
        elif item.get_closest_marker("own_store") and TIER != "embedded":
            item.add_marker(pytest.mark.skip(reason=OWN_STORE_ON_EMBEDDED_TIER))

    deselected = [item for item in items if not wanted(item)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if wanted(item)]
    long_first(items)


def long_first(items: list) -> None:
    """The files that hold a `long` test first, each file's tests kept together and in order:
    test workers (pytest-xdist's loadfile, run with --no-loadscope-reorder) take files in this
    order, so the longest start at once instead of running on alone at the end."""
    long_files = {item.path for item in items if item.get_closest_marker("long")}
    items.sort(key=lambda item: item.path not in long_files)  # a stable sort


_image_warmup: contextlib.ExitStack | None = None


def pytest_sessionstart(session):
    """On the wire tier the database server is built (when its sources changed) once, here,
    before any test worker starts: workers then find it built instead of each building it."""
    if TIER != "wire" or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    with contextlib.suppress(RuntimeError):  # the fixture says why, in every worker
        wire.binary()


def pytest_collection_finish(session):
    """When the container image tests are to run, their image starts building in the background
    now (tests/container.py `warmed`): a cold build waits mostly on downloads, which then
    overlap the rest of the suite instead of adding to it."""
    global _image_warmup
    if TIER != "embedded" or session.config.option.collectonly:
        return
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":  # one warm-up for all workers
        return
    if not any(item.get_closest_marker("image") for item in session.items):
        return
    from tests import container

    container.CACHE.mkdir(parents=True, exist_ok=True)
    _image_warmup = contextlib.ExitStack()
    _image_warmup.enter_context(container.warmed(container.CACHE / "warm-up.log"))


def pytest_sessionfinish(session):
    if _image_warmup is not None:
        _image_warmup.close()


@pytest.fixture(scope="session", autouse=True)
def database_server(tmp_path_factory):
    """On the wire tier: one FerretDB (SQLite files in a temporary directory) for the whole
    run of this test process (each xdist worker has its own), on a free loopback port, stopped
    at the end; MONGODB_URI points at it for the tests and for the processes they start. None
    on the other tiers.

    A server per worker, not one for all: FerretDB uses most of a core for one worker's queries
    (it reads whole collections), and its relay runs write commands one at a time; two workers
    on one server miss the 5 s database timeout now and then (docs/contributing.md)."""
    if TIER != "wire":
        yield None
        return
    for attempt in range(3):  # a free port taken by another process before the server bound it
        try:
            directory = tmp_path_factory.mktemp("wire-server")
            server = wire.WireServer(directory / "server.log", directory / "data").start()
            break
        except RuntimeError as exc:  # no Go toolchain, or the server did not start: say so once
            if attempt < 2:
                continue
            message = f"the wire tier cannot start its database server: {exc}"
            if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker's exit would hide the message
                pytest.fail(message, pytrace=False)
            pytest.exit(message, returncode=1)
    previous = os.environ.get("MONGODB_URI")
    os.environ["MONGODB_URI"] = server.uri
    try:
        yield server
    finally:
        server.stop()
        if previous is None:
            os.environ.pop("MONGODB_URI", None)
        else:
            os.environ["MONGODB_URI"] = previous


# Its collection that says the indexes are built: a test that drops the database (or its
# indexes' collections) takes it with it, and the next test builds them again.
PREPARED = "test_database_prepared"
_shared_dropped = False


@pytest.fixture
def config():
    if TIER == "embedded":
        return load_config(environ=test_environ())  # a file of its own
    return load_config(environ=test_environ(shared=True))


@pytest.fixture
def clock():
    return FakeClock()


async def _open_prepared(config, clock):
    """The services on the shared database, its indexes built only when they are not yet."""
    global _shared_dropped
    store, auth = await open_services(config, clock, wait_for_indexes=False)
    try:
        if not _shared_dropped:  # what an earlier run left (a MongoDB of the mongodb tier)
            await store.drop()
            _shared_dropped = True
        prepared = await store.db[PREPARED].find_one({"_id": "indexes"})
        if prepared is None:
            await store.ensure_indexes()
            await store.db[PREPARED].insert_one({"_id": "indexes", "ttl": store.ttl_indexes})
        else:
            store.ttl_indexes, store.indexes_ready = prepared["ttl"], True
    except BaseException:
        await store.close()
        raise
    return store, auth


class _Written(monitoring.CommandListener):
    """The collections of the shared database that a write command of this process reached
    since the last `_emptied`: the test's documents are there and nowhere else (the shared
    database is reached through the store fixtures alone: a process a test starts gets a
    database of its own, tests/helpers.py `test_environ`). Emptying only these saves a delete
    per untouched collection and test, about a millisecond each on the wire tier's server."""

    WRITES = frozenset({"insert", "update", "delete", "findAndModify", "findandmodify"})

    def __init__(self) -> None:
        self.names: set[str] = set()

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name in self.WRITES and event.database_name == SHARED_DATABASE:
            self.names.add(event.command[event.command_name])

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


_written = _Written()
if TIER != "embedded":
    monitoring.register(_written)  # before any client: a client takes the listeners it finds


async def _emptied(store) -> None:
    """Every document of the shared database gone; its collections and indexes stay. (A
    configuration without `shared` names a database of the test's own, never used again.)"""
    if store.db.name != SHARED_DATABASE:
        return
    names, _written.names = _written.names - {PREPARED}, set()
    await asyncio.gather(*(store.db[name].delete_many({}) for name in sorted(names)))


@pytest.fixture
def services(io_loop, config, clock):
    if TIER == "embedded":
        store, auth = io_loop.run_sync(lambda: open_services(config, clock))
    else:
        store, auth = io_loop.run_sync(lambda: _open_prepared(config, clock))
    yield store, auth
    try:
        io_loop.run_sync(auth.usage.stop)
        if not store.embedded:
            io_loop.run_sync(lambda: _emptied(store))
    finally:
        # Closed whatever failed before: a client left to the garbage collector warns from its
        # finalizer, and on CPython 3.11 a finalizer that runs while pytest parses a module (its
        # assertion rewriting, a traceback) can turn that into "SystemError: AST constructor
        # recursion depth mismatch", which ends the worker and hides the first error.
        io_loop.run_sync(store.close)


@pytest.fixture
def store(services):
    return services[0]


@pytest.fixture
def auth(services):
    return services[1]


@pytest.fixture
def app_services():
    """Extra services for make_app (tests of later features add theirs here)."""
    return {}


@pytest.fixture
def app(config, store, auth, app_services):
    return make_app(config, store, auth, **app_services)


@pytest.fixture
def http_server(io_loop, app, config, http_server_port):
    """Like pytest-tornasync's, but with the service's own limits and timeouts."""
    server = make_http_server(app, config)
    server.add_socket(http_server_port[0])
    yield server
    server.stop()
    io_loop.run_sync(server.close_all_connections, timeout=5)


@pytest.fixture
def ws_a(io_loop, store, auth):
    return io_loop.run_sync(lambda: make_workspace(store, auth, "Alpha"))


@pytest.fixture
def ws_b(io_loop, store, auth):
    return io_loop.run_sync(lambda: make_workspace(store, auth, "Bravo"))


@pytest.fixture
def origin(http_server, http_server_port):
    return f"http://127.0.0.1:{http_server_port[1]}"


@pytest.fixture
def small_send_buffer(http_server_port):
    """The app's connections accepted from now on send through a 64 kB buffer (Linux doubles
    the 32 kB asked for; an accepted socket inherits the listening socket's), where the kernel
    would let it grow to 4 MB: a client that stops reading holds a streamed response back
    within a few batches, so a test of that needs a megabyte or two, not 16. (The wire tier's
    FerretDB reads and decodes every document of a sorted query for each batch: at 16 MB a
    batch took a second alone, and past the store's 5 s limit on a loaded machine.)"""
    listening = http_server_port[0]
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 * 1024)


@pytest.fixture
def api(origin, ws_a):
    """Client authenticated as workspace A."""
    return Client(origin, ws_a.key)


@pytest.fixture
def api_b(origin, ws_b):
    """Client authenticated as workspace B."""
    return Client(origin, ws_b.key)


@pytest.fixture
def anon(origin):
    """Client without credentials."""
    return Client(origin, None)


@pytest.fixture
def new_list(api, ws_a):
    """Creates a list of workspace A through the API (owned by its first user); its record."""

    async def create(name="Leads"):
        response = await api.post("/v1/lists", {"name": name, "ownerUserId": ws_a.users[0]["id"]})
        return response.json()["list"]

    return create


@pytest.fixture
def dialer(io_loop, origin, auth, ws_a):
    """Client of workspace A with the scopes a dialer holds (read, ingest)."""
    _, key = io_loop.run_sync(lambda: auth.create(ws_a.id, "dialer", frozenset({"read", "ingest"})))
    return Client(origin, key)


@pytest.fixture
def dialer_b(io_loop, origin, auth, ws_b):
    """Client of workspace B with the scopes a dialer holds (read, ingest)."""
    _, key = io_loop.run_sync(lambda: auth.create(ws_b.id, "dialer", frozenset({"read", "ingest"})))
    return Client(origin, key)
