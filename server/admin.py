"""Operator commands (workspaces, users, keys) against the configured store (the SQLite file or
MongoDB): their command-line syntax and their dispatch; each prints a table, or JSON with
`--json` (server/output.py). The entry point
(server/cli.py) and the demo's stdin console both parse with `add_admin_commands`, so the
commands read the same in both places."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

from server.auth import KeyService, parse_scopes
from server.config import Config
from server.output import emit
from server.services import open_services
from server.workspace_delete import DeleteRefused, delete_workspace
from store.contract import Store
from store.keys import DEFAULT_SCOPES, SCOPES, ordered
from store.retention import MAX_RETENTION_DAYS, RETENTION_SETTING
from store.users import InvalidEmail, UserExists

MAX_EXPIRY_DAYS = 36_500

ADMIN_COMMANDS = ("workspaces", "users", "keys")

# The commands that make a record print its JSON document with or without --json: a script reads
# the new id, or the API key shown once, from what they print, as it always could.
CREATES = {("workspaces", "create"), ("users", "create"), ("keys", "create")}


def _printing(help: str = "print one JSON document instead of a table") -> argparse.ArgumentParser:
    """The option every admin command has: how it prints what it shows."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--json", action="store_true", help=help)
    return parent


def add_admin_commands(sub: argparse._SubParsersAction) -> None:
    """Add the admin commands to an argparse subparsers object."""
    printing = [_printing()]
    creating = [_printing("accepted for scripts; a create prints its JSON document either way")]
    workspaces = sub.add_parser("workspaces", help="manage workspaces").add_subparsers(
        dest="action", required=True
    )
    create = workspaces.add_parser("create", help="create a workspace", parents=creating)
    create.add_argument("name")
    workspaces.add_parser("list", help="list every workspace", parents=printing)
    rename = workspaces.add_parser("rename", help="rename a workspace", parents=printing)
    rename.add_argument("workspace_id")
    rename.add_argument("name")
    settings = workspaces.add_parser(
        "set", help="change a workspace's own settings", parents=printing
    )
    settings.add_argument("workspace_id")
    settings.add_argument(
        "--recording-retention-days",
        type=_retention,
        required=True,
        metavar="DAYS",
        help="delete the workspace's recordings this many days after their calls ended (0: keep "
        "them; 'default': recording_retention_days applies again)",
    )
    delete = workspaces.add_parser(
        "delete",
        help="erase a workspace whole: every record, key, webhook endpoint and recording",
        description="Erase a workspace whole, for a customer who leaves: its keys and webhook "
        "endpoints stop at once, then its recordings are deleted at the provider, then every "
        "record, and on SQLite the write-ahead log is truncated. Run it again after a failure "
        "or a crash: it carries on where it stopped.",
        parents=printing,
    )
    delete.add_argument("workspace_id")
    delete.add_argument(
        "--confirm",
        required=True,
        metavar="NAME",
        help="the workspace's current name, exactly (else nothing is deleted)",
    )

    users = sub.add_parser("users", help="manage workspace users").add_subparsers(
        dest="action", required=True
    )
    listing = users.add_parser("list", help="list a workspace's users", parents=printing)
    listing.add_argument("--workspace", required=True)
    listing.add_argument(
        "--include-deleted", action="store_true", help="list the deleted users too"
    )
    create = users.add_parser("create", help="create a user", parents=creating)
    create.add_argument("--workspace", required=True)
    create.add_argument("--email", required=True)
    create.add_argument("--first-name", required=True)
    create.add_argument("--last-name", required=True)
    delete = users.add_parser(
        "delete", help="delete a user (hidden from GET /users)", parents=printing
    )
    delete.add_argument("user_id")

    keys = sub.add_parser("keys", help="manage API keys").add_subparsers(
        dest="action", required=True
    )
    create = keys.add_parser("create", help="create a key (shown once)", parents=creating)
    create.add_argument("--workspace", required=True)
    create.add_argument("--name", required=True)
    create.add_argument(
        "--scope",
        type=_scopes,
        default=",".join(ordered(DEFAULT_SCOPES)),  # a string default goes through `type`
        metavar="SCOPES",
        help=f"what the key may do, comma-separated: {', '.join(SCOPES)}",
    )
    create.add_argument(
        "--expires-in",
        type=_days,
        default=None,
        metavar="DAYS",
        help="the key stops working this many days from now (default: never)",
    )
    listing = keys.add_parser(
        "list", help="list a workspace's keys (scopes, expiry, last use)", parents=printing
    )
    listing.add_argument("--workspace", required=True)
    revoke = keys.add_parser(
        "revoke", help="revoke a key (refused within seconds)", parents=printing
    )
    revoke.add_argument("key_id")


def _scopes(text: str) -> frozenset[str]:
    """An argparse type: a comma-separated list of scopes (read, write, ingest, admin), not
    empty."""
    try:
        return parse_scopes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _days(text: str) -> int:
    """An argparse type: a whole number of days from 1 to MAX_EXPIRY_DAYS."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of days") from None
    if not 1 <= value <= MAX_EXPIRY_DAYS:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_EXPIRY_DAYS} days")
    return value


def _retention(text: str) -> int | None:
    """An argparse type: a whole number of days from 0 to MAX_RETENTION_DAYS, or `default`
    (None: the workspace's own setting is removed)."""
    if text == "default":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number of days or 'default'"
        ) from None
    if not 0 <= value <= MAX_RETENTION_DAYS:
        raise argparse.ArgumentTypeError(f"must be from 0 to {MAX_RETENTION_DAYS} days")
    return value


def admin_parser() -> argparse.ArgumentParser:
    """A parser of the admin commands alone (the demo's stdin console)."""
    parser = argparse.ArgumentParser(prog="workspace-api")
    add_admin_commands(parser.add_subparsers(dest="command", required=True))
    return parser


class AdminError(Exception):
    """An admin command could not be carried out; the message says why."""


async def run_admin(
    config: Config,
    args: argparse.Namespace,
    services: tuple[Store, KeyService] | None = None,
) -> int:
    """Run one admin command. `services` (store, auth) lets tests and the demo pass their own."""
    owned = services is None
    if services is None:
        if config.throwaway:
            print(
                "workspace-api: MONGODB_URI=memory is a throwaway store that lives inside one "
                "process: admin commands cannot reach it. Unset MONGODB_URI to use the SQLite "
                "file at sqlite_path (WSAPI_SQLITE_PATH), point it at MongoDB, or type the "
                "command into a running `workspace-api demo`.",
                file=sys.stderr,
            )
            return 2
        services = await open_services(config)
    store, auth = services
    try:
        as_json = args.json or (args.command, args.action) in CREATES
        if (args.command, args.action) == ("workspaces", "delete"):
            emit(await _delete_workspace(store, config, args), as_json)
        else:
            emit(await _dispatch(store, auth, args), as_json)
    except (AdminError, DeleteRefused) as exc:
        print(f"workspace-api: {exc}", file=sys.stderr)
        return 1
    finally:
        if owned:
            await store.close()
    return 0


async def _dispatch(store: Store, auth: KeyService, args: argparse.Namespace) -> dict:
    command = (args.command, args.action)
    if command == ("workspaces", "create"):
        return {"workspace": await store.workspaces.create(args.name)}
    if command == ("workspaces", "list"):
        return {"workspaces": await store.workspaces.list()}
    if command == ("workspaces", "rename"):
        renamed = await store.workspaces.rename(args.workspace_id, args.name)
        if renamed is None:
            raise AdminError(f"no workspace {args.workspace_id}")
        return {"workspace": renamed}
    if command == ("workspaces", "set"):
        changed = await store.workspaces.update_settings(
            args.workspace_id, {RETENTION_SETTING: args.recording_retention_days}
        )
        if changed is None:
            raise AdminError(f"no workspace {args.workspace_id}")
        return {"workspace": changed}
    if command == ("users", "list"):
        await _workspace(store, args.workspace)
        return {"users": await store.users.list(args.workspace, args.include_deleted)}
    if command == ("users", "create"):
        await _workspace(store, args.workspace)
        try:
            user = await store.users.create(
                args.workspace, args.email, args.first_name.strip(), args.last_name.strip()
            )
        except InvalidEmail:
            raise AdminError(f"{args.email!r} is not an email address") from None
        except UserExists:
            raise AdminError(f"another user of the workspace has the email {args.email}") from None
        return {"user": user}
    if command == ("users", "delete"):
        workspace = await store.users.workspace_of(args.user_id)
        if workspace is None or not await store.users.delete(workspace, args.user_id):
            raise AdminError(f"no active user {args.user_id}")
        return {"deleted": args.user_id}
    if command == ("keys", "create"):
        await _workspace(store, args.workspace)
        expires = None if args.expires_in is None else dt.timedelta(days=args.expires_in)
        record, key = await auth.create(args.workspace, args.name, args.scope, expires)
        print("The API key is shown once and never stored: keep it now.", file=sys.stderr)
        return {"key": record, "apiKey": key}
    if command == ("keys", "list"):
        await _workspace(store, args.workspace)
        return {"keys": await store.keys.list(args.workspace)}
    if command == ("keys", "revoke"):
        revoked = await store.keys.revoke(args.key_id)
        if revoked is None:
            raise AdminError(f"no key {args.key_id}")
        return {"key": revoked}
    raise AdminError(f"unknown command {' '.join(command)}")


async def _delete_workspace(store: Store, config: Config, args: argparse.Namespace) -> dict:
    from telephony.upstream import UpstreamClient

    upstream = UpstreamClient.from_config(config)
    return await delete_workspace(store, config, upstream, args.workspace_id, args.confirm)


async def _workspace(store: Store, workspace_id: str) -> None:
    if await store.workspaces.get(workspace_id) is None:
        raise AdminError(f"no workspace {workspace_id}")
