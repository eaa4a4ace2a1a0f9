"""`workspace-api demo` on the command line: its options, and the start of the demo process
(demo/runner.py) with them. cli/ registers it with the server's commands."""

from __future__ import annotations

import argparse

from server.cli import Command, seconds, whole_number
from server.config import Config


def add_demo_command(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser(
        "demo",
        help="run the API on the embedded store with demo data",
        description="Run the API on the embedded store, seeded with two demo "
        "workspaces and their API keys.",
    )
    demo.add_argument(
        "--host", help="listen address (default: host of the configuration, $WSAPI_HOST, 127.0.0.1)"
    )
    demo.add_argument(
        "--port",
        type=int,
        help="listen port, 0 for any free one (default: port "
        "of the configuration, $WSAPI_PORT, 8888)",
    )
    demo.add_argument(
        "--keys-file",
        default="demo-keys.json",
        help="where to write the demo workspaces and their API keys as JSON",
    )
    demo.add_argument(
        "--data",
        metavar="PATH",
        default=None,
        help="keep the demo's data in this SQLite file (default: a throwaway file, "
        "gone when the demo ends); an existing file keeps its data, is not "
        "seeded again, and gets fresh demo keys",
    )
    demo.add_argument("--seed", type=int, default=42, help="same seed, same demo data")
    demo.add_argument(
        "--rate-limit",
        type=whole_number(1, 10**9),
        default=None,
        help="requests per minute per workspace (default: "
        "$WSAPI_RATE_LIMIT_PER_MINUTE if set, else 60000)",
    )
    demo.add_argument(
        "--calls",
        type=whole_number(0, 2_000_000),
        default=5000,
        help="calls over the last 90 days in the first workspace (the second "
        "workspace gets a tenth)",
    )
    demo.add_argument(
        "--prospects",
        type=whole_number(20, 150_000),
        default=500,
        help="prospects in the first workspace",
    )
    demo.add_argument(
        "--timeline",
        type=whole_number(0, 2_000_000),
        default=5000,
        help="extra activities of the one prospect with a very long timeline",
    )
    demo.add_argument(
        "--live-calls-per-minute",
        type=whole_number(0, 600_000),
        default=0,
        metavar="N",
        help="keep writing N new calls a minute to every demo workspace while "
        "the demo runs (some recorded, some booking meetings; now and then "
        "a call's notes change); 0 writes none",
    )
    demo.add_argument(
        "--live-via",
        choices=("http", "provider"),
        default="http",
        help="how the live calls arrive: http (a dialer posting each finished call with "
        "POST /v1/calls) or provider (placed through the simulated telephony provider, whose "
        "signed status and recording callbacks record them)",
    )
    demo.add_argument(
        "--sync-settle-seconds",
        type=seconds,
        default=None,
        metavar="N",
        help="how old a change must be before sort=updatedAt and GET /v1/events show it "
        "(default: "
        "sync_settle_seconds of the configuration, "
        "$WSAPI_SYNC_SETTLE_SECONDS, 5)",
    )


def run(config: Config, args: argparse.Namespace) -> int:
    from demo.runner import run_demo  # the process's imports, only when it runs

    args.host = config.host if args.host is None else args.host
    args.port = config.port if args.port is None else args.port
    return run_demo(config, args)


DEMO = Command("demo", add_demo_command, run)
