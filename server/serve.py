"""`workspace-api serve`: run the API against the configured store, in one or N processes.

With `--processes N` the socket is bound once and N forked workers accept on it; the parent
only supervises (restarts a crashed worker, forwards SIGTERM/SIGINT), and a worker gets SIGTERM
from the kernel when the supervisor dies, however it dies. Every worker opens its
own store (MongoDB client, or connections to the SQLite file) after the fork. The service starts
even while MongoDB is unreachable: it
answers 503 (and /readyz says not ready) until the indexes could be ensured, retrying by itself.
On SIGTERM a worker stops accepting, lets requests in flight finish (shutdown_timeout_seconds),
then exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import errno
import logging
import os
import signal
import socket
import time
from collections.abc import Callable, Sequence
from types import FrameType

from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from server import metrics_files
from server.app import freeze_heap, http_server, make_app, make_metrics_app
from server.auth import resolve_secret
from server.config import Config, ConfigError, validate, validate_webhooks
from server.event_sweep import EventSweeper
from server.expiry import ExpirySweeper
from server.gate import Gate
from server.logs import secrets_of, setup_logging
from server.recording_retention import RecordingRetention
from server.services import configured_store, open_services
from server.tracing import start as start_tracing
from server.webhook_dispatch import dispatcher
from store.contract import Store
from store.errors import StoreError, StoreUnavailable, StoreUnusable

log = logging.getLogger("workspace_api")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
MAX_RETRY_DELAY = 10.0
BIND_PATIENCE = 3.0  # seconds a port still held by stopping workers is waited for
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def serve(config: Config, args: argparse.Namespace) -> int:
    overrides = {
        k: v
        for k, v in (("host", args.host), ("port", args.port), ("processes", args.processes))
        if v is not None
    }
    config = config.replace(**overrides)
    validate(config)
    validate_webhooks(config)
    if config.processes > 1 and config.throwaway:
        raise ConfigError(
            "--processes > 1 needs a shared store: MONGODB_URI=memory is a throwaway file of one "
            "process. Use the SQLite file (unset MONGODB_URI; WSAPI_SQLITE_PATH) or MongoDB"
        )
    resolve_secret(config)  # refuse a bad secret once, before any worker starts
    setup_logging(config.log_level, secrets_of(config))
    if config.embedded and not config.throwaway:
        # A database file that cannot be used is one line and exit code 2 (server.cli), before
        # anything is logged, and never workers dying one after another.
        asyncio.run(check_store(config))
    sockets = listen(config)
    # The metrics listener (metrics_port): bound once like the API's, served by every worker.
    metrics_sockets = (
        listen_at(config.metrics_host, config.metrics_port) if config.metrics_port else []
    )
    metrics_dir = None
    try:
        if config.processes == 1:
            os.environ.pop(metrics_files.ENV, None)  # this process's figures, in memory
            return asyncio.run(run_worker(config, sockets, metrics_sockets))
        if metrics_sockets:  # every worker's figures in files there, summed by a scrape
            metrics_dir = metrics_files.create()
        return supervise(
            config.processes,
            lambda: asyncio.run(run_worker(config, sockets, metrics_sockets)),
            on_death=metrics_files.worker_died if metrics_dir else None,
        )
    finally:
        if metrics_dir is not None:
            metrics_files.remove(metrics_dir)


def listen(config: Config, patience: float = BIND_PATIENCE) -> list[socket.socket]:
    """Bind the API's listening sockets."""
    return listen_at(config.host, config.port, patience)


def listen_at(host: str, port: int, patience: float = BIND_PATIENCE) -> list[socket.socket]:
    """Bind listening sockets. A port still held for a moment is waited for: the workers
    of a supervisor that was killed (SIGKILL) are stopping on their parent-death signal, and
    close their copies of the socket within moments."""
    deadline = time.monotonic() + patience
    while True:
        try:
            return bind_sockets(port, host)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or time.monotonic() >= deadline:
                raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
            time.sleep(0.1)


async def check_store(config: Config) -> None:
    """Open the store once and close it (raises StoreUnusable for a file that cannot serve)."""
    store = configured_store(config)
    await store.close()


async def run_worker(
    config: Config, sockets: list[socket.socket], metrics_sockets: Sequence[socket.socket] = ()
) -> int:
    """Serve on the bound sockets (and the metrics listener's, if any) until SIGTERM/SIGINT,
    then shut down gracefully."""
    if config.throwaway:
        log.warning(
            "MONGODB_URI=memory: using a throwaway SQLite file. NOTHING IS PERSISTED; all data "
            "is lost when the process exits. Unset MONGODB_URI to keep the data in the SQLite "
            "file at sqlite_path (WSAPI_SQLITE_PATH), or point it at MongoDB."
        )
    elif config.embedded:
        log.info("store: SQLite file %s", config.sqlite_path)
    store, auth = await open_services(config, wait_for_indexes=config.embedded)
    if config.embedded and not config.throwaway and not await store.workspaces.list():
        log.warning(
            "the SQLite file %s has no workspace yet, so every request gets 401. Create one and "
            "a key with the admin CLI on the same file: workspace-api workspaces create NAME; "
            "workspace-api keys create --workspace WORKSPACE_ID --name NAME (prints the key "
            "once). Or explore with data: workspace-api demo",
            config.sqlite_path,
        )
    indexes = None
    if not store.indexes_ready:
        indexes = asyncio.create_task(ensure_indexes_when_reachable(store))
    metrics = None
    if metrics_sockets:
        from server.metrics import Metrics  # prometheus_client: imported only when on

        metrics = Metrics()
    # Spans per request and store call, when OTEL_EXPORTER_OTLP_ENDPOINT is set (server.tracing).
    tracing = start_tracing()
    app = make_app(config, tracing.wrap(store) if tracing else store, auth, metrics=metrics)
    sweeper = ExpirySweeper(
        store, config.expiry_sweep_seconds, retention_days=config.tombstone_retention_days
    ).start()
    events = EventSweeper.from_config(store, config).start()
    retention = RecordingRetention.from_config(store, app.settings["upstream"], config)
    if retention is not None:
        retention.start()
    list_work = app.settings["list_work"].start()
    erasure_work = app.settings["erasure_work"].start()
    webhooks = dispatcher(store, config, metrics).start()
    server = http_server(app, config)
    server.add_sockets(sockets)
    apps, servers = [app], [server]
    if metrics is not None:
        apps.append(make_metrics_app(config, store, metrics, app.settings["schemas"]))
        servers.append(
            HTTPServer(
                apps[-1],
                max_body_size=64 * 1024,  # it takes no bodies: GETs only
                max_header_size=16 * 1024,
                idle_connection_timeout=config.idle_timeout_seconds,
                body_timeout=config.body_timeout_seconds,
            )
        )
        servers[-1].add_sockets(metrics_sockets)
    freeze_heap()
    log.info("serving on http://%s:%s/v1 (pid %d)", config.host, config.port, os.getpid())
    if metrics is not None:
        log.info("metrics on http://%s:%s/metrics", config.metrics_host, config.metrics_port)
    stop = asyncio.Event()
    for signum in STOP_SIGNALS:
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # blocked since the fork, if any
    await stop.wait()

    for each in apps:
        each.settings["draining"] = True  # /readyz: 503 from now on
    for listener in servers:
        listener.stop()  # no new connections; requests on open ones are still served
    gate = server.request_callback
    assert isinstance(gate, Gate)  # server.app.http_server's
    deadline = time.monotonic() + config.shutdown_timeout_seconds
    while gate.inflight > 0 and time.monotonic() < deadline:  # noqa: ASYNC110 - a counter, not an event
        await asyncio.sleep(0.05)
    if gate.inflight > 0:
        log.warning(
            "closing %d requests still running after %s s",
            gate.inflight,
            config.shutdown_timeout_seconds,
        )
    for listener in servers:
        await listener.close_all_connections()
    if indexes:
        indexes.cancel()
    await webhooks.stop(config.shutdown_timeout_seconds)
    await sweeper.stop()
    if retention is not None:
        await retention.stop()
    await list_work.stop()
    await erasure_work.stop()
    await auth.usage.stop()  # writes the keys' last uses still queued
    await events.stop()
    await store.close()
    if tracing is not None:
        tracing.stop()
    log.info("stopped (pid %d)", os.getpid())
    return 0


async def ensure_indexes_when_reachable(store: Store, delay: float = 0.5) -> None:
    """Create the indexes as soon as the database answers; until then the API answers 503."""
    while True:
        try:
            await store.ensure_indexes()
            log.info("database ready")
            return
        except StoreUnavailable as exc:
            log.warning(
                "database not reachable (%s); retrying in %.1f s",
                type(exc.__cause__ or exc).__name__,
                delay,
            )
        except StoreError as exc:  # e.g. an index conflict: an operator has to look
            log.error("cannot create the indexes (%s); retrying in %.1f s", exc, delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, MAX_RETRY_DELAY)


def supervise(
    count: int, work: Callable[[], int], on_death: Callable[[int], None] | None = None
) -> int:
    """Fork `count` workers running `work()` and keep them running until SIGTERM/SIGINT, which
    is passed on to every worker. A worker that dies is restarted, unless workers keep dying;
    `on_death(pid)` is called for each worker that ended (the metrics files' bookkeeping)."""
    children: dict[int, float] = {}  # pid -> start time
    stopping = False

    supervisor = os.getpid()

    def spawn() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                # Still blocked: a stop signal waits until the worker can shut down gracefully.
                for signum in STOP_SIGNALS:
                    signal.signal(signum, signal.SIG_DFL)
                # (0 without work: the supervisor died before this worker could serve.)
                code = work() if die_with_parent(supervisor) else 0
            except StoreUnusable as exc:
                log.error("worker %d cannot serve: %s", os.getpid(), exc)
            except BaseException:
                log.exception("worker %d failed", os.getpid())
            finally:
                os._exit(code)  # never return into the supervisor's loop
        children[pid] = time.monotonic()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    for signum in STOP_SIGNALS:
        signal.signal(signum, stop)
    for _ in range(count):
        spawn()
    log.info("supervising %d workers (pid %d)", count, os.getpid())
    quick_deaths = 0
    while children:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        started = children.pop(pid, None)
        if on_death is not None and started is not None:
            on_death(pid)
        if started is None or stopping:
            continue
        log.error("worker %d exited (%s); restarting it", pid, describe(status))
        quick_deaths = quick_deaths + 1 if time.monotonic() - started < 5 else 0
        if quick_deaths >= 3 * count:
            log.error("workers keep dying right after start; stopping")
            stop(signal.SIGTERM, None)
            continue
        spawn()
    return 1 if quick_deaths >= 3 * count else 0


def die_with_parent(parent: int) -> bool:
    """In a worker: ask the kernel for SIGTERM when the supervisor dies, however it dies (a
    SIGKILL leaves it no time to stop its workers), so that no worker serves on without it
    and holds the port against a restart; the worker then shuts down gracefully. False when
    the supervisor has died already (before the request took effect)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    except (OSError, AttributeError) as exc:  # not Linux: the supervisor's SIGTERM only
        log.warning("workers cannot follow their supervisor's death here (%s)", exc)
    return os.getppid() == parent


def describe(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    return f"signal {-code}" if code < 0 else f"exit code {code}"
