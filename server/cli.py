"""The `workspace-api` entry point: parses the command line and dispatches to serve, demo,
provider or the admin commands; it is the only module that imports all of them."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from pymongo.errors import PyMongoError

from server.admin import add_admin_commands
from server.config import ConfigError, load_config

log = logging.getLogger("workspace_api")

def _count(low: int, high: int):
    """An argparse type: an integer from low to high."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="workspace-api", description="Workspace Data API server and admin tool"
    )
    parser.add_argument("--config", help="configuration file (default: config.yaml)")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the API (MONGODB_URI decides the store)")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--processes", type=int, help="worker processes sharing the port")

    demo = sub.add_parser("demo", help="run the API on the embedded store with demo data")
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=8888)
    demo.add_argument(
        "--keys-file",
        default="demo-keys.json",
        help="where to write the demo workspaces and their API keys as JSON",
    )
    demo.add_argument("--data", metavar="PATH", default=None,
                      help="keep the demo's data in this SQLite file (default: a throwaway file, "
                           "gone when the demo ends); an existing file keeps its data, is not "
                           "seeded again, and gets fresh demo keys")
    demo.add_argument("--seed", type=int, default=42, help="same seed, same demo data")
    demo.add_argument("--rate-limit", type=_count(1, 10**9), default=None,
                      help="requests per minute per workspace (default: "
                           "$WSAPI_RATE_LIMIT_PER_MINUTE if set, else 60000)")
    demo.add_argument("--calls", type=_count(0, 2_000_000), default=5000,
                      help="calls over the last 90 days in the first workspace (default 5000; "
                           "the second workspace gets a tenth)")
    demo.add_argument("--prospects", type=_count(20, 150_000), default=500,
                      help="prospects in the first workspace (default 500)")
    demo.add_argument("--timeline", type=_count(0, 2_000_000), default=5000,
                      help="extra activities of the one prospect with a very long timeline "
                           "(default 5000)")

    provider = sub.add_parser("provider", help="run the simulated telephony provider")
    provider.add_argument("--host", default="127.0.0.1")
    provider.add_argument("--port", type=int, default=8899)
    provider.add_argument("--account-id", help="default: $WSAPI_PROVIDER_ACCOUNT_ID")
    provider.add_argument("--auth-token", help="default: $WSAPI_PROVIDER_AUTH_TOKEN")
    provider.add_argument("--size", action="append", default=[], metavar="REF=BYTES",
                          help="serve recording REF with exactly BYTES bytes (repeatable)")
    provider.add_argument("--missing", action="append", default=[], metavar="REF",
                          help="answer 404 for recording REF (repeatable)")

    add_admin_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = load_config(args.config)
        if args.command == "serve":
            from server.serve import serve

            return serve(config, args)
        if args.command == "provider":
            return run_simulated_provider(args)
        if args.command == "demo":
            from server.demo import run_demo

            return run_demo(config, args)
        from server.admin import run_admin

        return asyncio.run(run_admin(config, args))
    except ConfigError as exc:
        print(f"workspace-api: configuration error: {exc}", file=sys.stderr)
        return 2
    except PyMongoError as exc:
        # Never echo the URI: it may carry credentials.
        print(f"workspace-api: MongoDB is not usable: {type(exc).__name__}", file=sys.stderr)
        return 3


def run_simulated_provider(args) -> int:
    from telephony.simulated_provider import run_provider

    sizes = {}
    for item in args.size:
        ref, _, size = item.partition("=")
        if not size.isdigit():
            raise ConfigError(f"--size takes REF=BYTES, not {item!r}")
        sizes[ref] = int(size)
    run_provider(args.host, args.port, args.account_id, args.auth_token, sizes, args.missing)
    return 0



if __name__ == "__main__":
    sys.exit(main())
