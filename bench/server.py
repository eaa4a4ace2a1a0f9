"""The server under test: the API exactly as `workspace-api serve` assembles it, on the embedded
store seeded for the benchmarks, plus the "bare" comparison handlers on a second port of the
same process and on the same store.

    python -m bench.server [--users 25] [--calls 2000] [--recording REF=BYTES ...]
                           [--activities 100000] [--events 1000000] [--provider-url URL ...]
                           [--sqlite-path FILE --synchronous full|normal]

Once listening it prints one JSON line on stdout (ports, key, seeded ids, features) and runs
until SIGTERM. Logs go to stderr, as in production (the harness sends them to a file).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal

from tornado.netutil import bind_sockets

from bench import bare, counting, seeding
from server.app import collect_handlers, http_server, make_app
from server.config import load_config
from server.logs import setup_logging
from server.services import open_services

# High enough that the limiter runs on every request but never refuses one.
BENCH_RATE_LIMIT = 1_000_000_000


def bench_config(args):
    sqlite_path = getattr(args, "sqlite_path", None)  # bench.streams' arguments have none
    environ = {
        # A throwaway file, or with --sqlite-path a file kept there, synced as --synchronous
        # says (a throwaway file is never synced: bench P7 measures what syncing costs).
        "MONGODB_URI": "" if sqlite_path else "memory",
        "WSAPI_SQLITE_PATH": sqlite_path or "",
        "WSAPI_SQLITE_SYNCHRONOUS": getattr(args, "synchronous", "full"),
        "WSAPI_HOST": "127.0.0.1",
        "WSAPI_RATE_LIMIT_PER_MINUTE": str(args.rate_limit),
        "WSAPI_LOG_LEVEL": "info",
        "WSAPI_PROVIDER_URL": args.provider_url or "",
        "WSAPI_PROVIDER_ACCOUNT_ID": args.provider_account or "",
        "WSAPI_PROVIDER_AUTH_TOKEN": args.provider_token or "",
    }
    return load_config(environ=environ)


def route_exists(path: str) -> bool:
    """Whether the API (not its JSON 404 catch-all) routes `path`."""
    return any(re.fullmatch(rule[0], path) for rule in collect_handlers()[:-1])


def build_app(config, store, auth):
    """The API app exactly as `workspace-api serve` builds it: `make_app` adds its own services
    (rate limiter, provider client from provider_url)."""
    return make_app(config, store, auth)


async def main(args) -> None:
    config = bench_config(args)
    setup_logging(config.log_level)
    store, auth = await open_services(config)
    counts = counting.install(store)
    recordings = dict(item.split("=", 1) for item in args.recording)
    info = await seeding.seed(
        store,
        auth,
        users=args.users,
        calls=args.calls,
        recordings={ref: int(size) for ref, size in recordings.items()},
        activities=args.activities,
        events=args.events,
    )
    app = build_app(config, store, auth)
    api_sockets = bind_sockets(0, "127.0.0.1")
    http_server(app, config).add_sockets(api_sockets)
    if args.metrics:  # bench.metrics_cost (M1): the same API with metrics on, on a port of its own
        metrics_ports = serve_with_metrics(config, store, auth)
        info.update(metrics_api_port=metrics_ports[0], metrics_port=metrics_ports[1])
    bare_app = bare.make_bare_app(store, info, counts)
    bare_sockets = bind_sockets(0, "127.0.0.1")
    http_server(bare_app, config).add_sockets(bare_sockets)
    info.update(
        pid=os.getpid(),
        api_port=api_sockets[0].getsockname()[1],
        bare_port=bare_sockets[0].getsockname()[1],
        features={
            "users": route_exists("/v1/users"),
            "contacts": route_exists("/v1/lists/x/contacts"),
            "calls": route_exists("/v1/calls") and hasattr(store, "calls"),
            "recording": route_exists("/v1/calls/x/recording"),
            "activities": route_exists("/v1/prospect-activities"),
            "rate_limit": args.rate_limit,
        },
    )
    await serve_until_stopped(info)


def serve_with_metrics(config, store, auth) -> tuple[int, int]:
    """A second API app on the same store, with metrics on (as `serve` with metrics_port builds
    it), and its metrics listener: (API port, metrics port)."""
    from server.app import make_metrics_app
    from server.metrics import Metrics

    metrics = Metrics()
    app = make_app(config, store, auth, metrics=metrics)
    api_sockets = bind_sockets(0, "127.0.0.1")
    http_server(app, config).add_sockets(api_sockets)
    listener = make_metrics_app(config, store, metrics, app.settings["schemas"])
    metrics_sockets = bind_sockets(0, "127.0.0.1")
    http_server(listener, config).add_sockets(metrics_sockets)
    return api_sockets[0].getsockname()[1], metrics_sockets[0].getsockname()[1]


async def serve_until_stopped(info: dict) -> None:
    """Say the server is ready (one JSON line on stdout, which the harness reads: ports, key,
    seeded ids) and serve until SIGINT or SIGTERM."""
    print(json.dumps(info), flush=True)
    os.dup2(2, 1)  # nobody reads stdout after the ready line: anything later goes to the log
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.server")
    parser.add_argument("--users", type=int, default=25)
    parser.add_argument("--calls", type=int, default=0)
    parser.add_argument(
        "--recording",
        action="append",
        default=[],
        metavar="REF=BYTES",
        help="a call whose recording is REF, which the provider serves",
    )
    parser.add_argument(
        "--activities",
        type=int,
        default=0,
        help="activities of one prospect (for GET /prospect-activities)",
    )
    parser.add_argument(
        "--events", type=int, default=0, help="events in the feed, written directly (P9)"
    )
    parser.add_argument("--provider-url")
    parser.add_argument("--provider-account")
    parser.add_argument("--provider-token")
    parser.add_argument("--rate-limit", type=int, default=BENCH_RATE_LIMIT)
    parser.add_argument("--sqlite-path", help="a SQLite file instead of a throwaway one")
    parser.add_argument("--synchronous", choices=("full", "normal"), default="full")
    parser.add_argument(
        "--metrics", action="store_true", help="also the API with metrics on (bench M1)"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
