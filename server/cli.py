"""The server's command line: the parser every command shares (defaults shown in every --help)
and the dispatch to serve, provider, events, import, backup, restore or the admin commands.

The rooms above the server add their commands as `Command`s: cli/ (the `workspace-api`
program) registers the demo's, so that nothing here imports the demo. `python -m server.cli`
runs the server's commands alone."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import sys
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from server.admin import add_admin_commands
from server.backup import add_backup_commands
from server.config import Config, ConfigError, load_config
from server.importer import add_import_command
from server.reapply import add_erasures_commands
from server.tail import add_events_commands
from store.database import is_mongodb
from store.errors import StoreError, StoreUnavailable, StoreUnusable

log = logging.getLogger("workspace_api")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default, or says that it is required."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if not action.option_strings or "default" in text or action.default == argparse.SUPPRESS:
            return text
        if action.required:
            return text if "required" in text else f"{text} (required)"
        if action.default is None or action.default == []:
            return f"{text} (default: none)"
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """The command's parsers (sub-commands inherit it): defaults shown in every --help."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def add_argument(self, *names, **kwargs):
        if names and names[0].startswith("-") and not kwargs.get("help"):
            kwargs["help"] = "required" if kwargs.get("required") else " "
        return super().add_argument(*names, **kwargs)


def mongodb_hosts(uri: str) -> str:
    """Where a MongoDB URI points, without its credentials: 'db1:27017, db2:27017'."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return "the configured MONGODB_URI"
    hosts = parts.netloc.rpartition("@")[2]
    if parts.scheme == "mongodb+srv":
        return f"the hosts of the DNS SRV record of {hosts}"
    named = [
        h if h.rpartition(":")[2].isdigit() and "]" not in h.rpartition(":")[2] else f"{h}:27017"
        for h in hosts.split(",")
        if h
    ]
    return ", ".join(named) or "the configured MONGODB_URI"


def whole_number(low: int, high: int) -> Callable[[str], int]:
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


def seconds(text: str) -> float:
    """An argparse type: a number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 86_400:
        raise argparse.ArgumentTypeError("must be from 0 to 86400")
    return value


@dataclasses.dataclass(frozen=True)
class Command:
    """A command of a room above the server: `add` adds its parser to the sub-commands, `run`
    runs it with the loaded configuration and returns the exit code."""

    name: str
    add: Callable[[argparse._SubParsersAction], object]
    run: Callable[[Config, argparse.Namespace], int]


def build_parser(above: Sequence[Command] = ()) -> argparse.ArgumentParser:
    """The parser of the server's commands, with the commands `above` listed after serve."""
    parser = Parser(prog="workspace-api", description="Workspace Data API server and admin tool")
    parser.add_argument(
        "--config", help="configuration file (default: $WSAPI_CONFIG if set, else config.yaml)"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser(
        "serve",
        help="run the API (MONGODB_URI decides the store)",
        description="Run the API against the store MONGODB_URI names.",
    )
    serve.add_argument(
        "--host", help="listen address (default: host of the configuration, $WSAPI_HOST, 127.0.0.1)"
    )
    serve.add_argument(
        "--port",
        type=int,
        help="listen port (default: port of the configuration, $WSAPI_PORT, 8888)",
    )
    serve.add_argument(
        "--processes",
        type=int,
        help="worker processes sharing the port (default: processes of the "
        "configuration, $WSAPI_PROCESSES, 1)",
    )

    for command in above:  # the commands of the rooms above the server (cli/: the demo)
        command.add(sub)

    provider = sub.add_parser("provider", help="run the simulated telephony provider")
    provider.add_argument("--host", default="127.0.0.1", help="listen address")
    provider.add_argument("--port", type=int, default=8899, help="listen port")
    provider.add_argument("--account-id", help="default: $WSAPI_PROVIDER_ACCOUNT_ID")
    provider.add_argument("--auth-token", help="default: $WSAPI_PROVIDER_AUTH_TOKEN")
    provider.add_argument(
        "--size",
        action="append",
        default=[],
        metavar="REF=BYTES",
        help="serve recording REF with exactly BYTES bytes (repeatable)",
    )
    provider.add_argument(
        "--missing",
        action="append",
        default=[],
        metavar="REF",
        help="answer 404 for recording REF (repeatable)",
    )

    add_admin_commands(sub)
    add_import_command(sub)
    add_events_commands(sub)
    add_backup_commands(sub)
    add_erasures_commands(sub)
    return parser


# `serve` on the embedded store: it starts empty and no admin command can reach it, so every
# request would be 401 without a word of explanation.
THROWAWAY_SERVE_HINT = """\
workspace-api serve: MONGODB_URI=memory is a throwaway store. It starts empty, without any
workspace or API key, and admin commands cannot reach it, so every request gets 401.
  To explore the API with data and keys:  workspace-api demo   (or: make demo)
  To serve real data: unset MONGODB_URI (the SQLite file at WSAPI_SQLITE_PATH) or point it at
  MongoDB, then
    workspace-api workspaces create NAME
    workspace-api keys create --workspace WORKSPACE_ID --name NAME   (prints the key once)"""


def main(argv: list[str] | None = None, above: Sequence[Command] = ()) -> int:
    args = build_parser(above).parse_args(argv)
    try:
        config = load_config(args.config)
        if args.command == "serve":
            from server.serve import serve

            if config.throwaway:
                print(THROWAWAY_SERVE_HINT, file=sys.stderr, flush=True)
            return serve(config, args)
        if args.command == "provider":
            return run_simulated_provider(args)
        if args.command == "events":
            from server.tail import run_events

            return run_events(config, args)
        for command in above:
            if args.command == command.name:
                return command.run(config, args)
        if args.command in ("backup", "restore"):
            from server.backup import run_backup, run_restore

            return (run_backup if args.command == "backup" else run_restore)(config, args)
        if args.command == "erasures":
            from server.reapply import run_reapply

            return asyncio.run(run_reapply(config, args))
        if args.command == "import":
            from server.importer import run_import

            return asyncio.run(run_import(config, args))
        from server.admin import run_admin

        return asyncio.run(run_admin(config, args))
    except ConfigError as exc:
        print(f"workspace-api: configuration error: {exc}", file=sys.stderr)
        return 2
    except StoreUnusable as exc:  # the database file: one line saying what, where, what to do
        print(f"workspace-api: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        if not is_mongodb(config.mongodb_uri):
            raise
        # Never echo the URI or the driver's message: they may carry credentials.
        hosts = mongodb_hosts(config.mongodb_uri)
        if isinstance(exc, StoreUnavailable):
            why = (
                f"no answer from {hosts} within {config.db_timeout_seconds:g} s "
                "(db_timeout_seconds, WSAPI_DB_TIMEOUT_SECONDS)"
            )
        else:
            why = f"{hosts} refused the operation"
        print(
            f"workspace-api: MongoDB is not usable ({type(exc.__cause__ or exc).__name__}): {why}",
            file=sys.stderr,
        )
        return 3


def run_simulated_provider(args: argparse.Namespace) -> int:
    from telephony.simulated_standalone import run_provider

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
