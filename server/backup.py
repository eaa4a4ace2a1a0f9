"""`workspace-api backup` and `restore`: the operator's copies of the embedded SQLite file, taken
while the service serves and writes, and put back while nothing uses it (the SQLite work itself:
store/sqlite/backup.py). MongoDB is backed up with its own tools (docs/deployment.md)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from server.config import Config
from server.output import emit
from store.sqlite.backup import (
    BackupError,
    carry_erasures,
    copy_online,
    in_use,
    problems,
    publish,
    replace,
    stage,
    timed,
)

MONGODB = (
    "the store is MongoDB (MONGODB_URI): back it up with `mongodump` (with `--oplog` on a "
    "replica set, for a copy as of one moment) and restore it with `mongorestore "
    "--oplogReplay`; see docs/deployment.md, Backups"
)
THROWAWAY = (
    "MONGODB_URI=memory is a throwaway store that lives inside one process: there is nothing "
    "to back up or restore"
)


def add_backup_commands(sub: argparse._SubParsersAction) -> None:
    backup = sub.add_parser(
        "backup",
        help="copy the SQLite file while the service runs",
        description="Copy the embedded store's SQLite file online (SQLite's backup API, while "
        "the service keeps serving and writing), check the copy with PRAGMA integrity_check, "
        "and print its size and how long it took.",
    )
    backup.add_argument(
        "--to", required=True, metavar="PATH", help="the new file (refused when it exists)"
    )
    backup.add_argument("--json", action="store_true", help="print JSON instead of a table")
    restore = sub.add_parser(
        "restore",
        help="replace the SQLite file with a backup (nothing may use it)",
        description="Check a backup (PRAGMA integrity_check, and that it is a Workspace Data API "
        "database) and put it in place of the SQLite file at sqlite_path. Refused while any "
        "process has that file open.",
    )
    restore.add_argument(
        "--from", dest="source", required=True, metavar="PATH", help="the backup to restore"
    )
    restore.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _refusal(config: Config) -> str | None:
    if not config.embedded:
        return MONGODB
    if config.throwaway:
        return THROWAWAY
    return None


def run_backup(config: Config, args: argparse.Namespace) -> int:
    if why := _refusal(config):
        print(f"workspace-api backup: {why}", file=sys.stderr)
        return 2
    source = Path(config.sqlite_path).expanduser()
    target = Path(args.to).expanduser()
    try:
        if not source.is_file():
            raise BackupError(f"no database file at {source} (sqlite_path, WSAPI_SQLITE_PATH)")
        if target.exists():
            raise BackupError(f"{target} exists: a backup never replaces a file")
        partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
        try:
            seconds = timed(lambda: copy_online(source, partial, config.db_timeout_seconds))
            found: list[str] = []
            checking = timed(lambda: found.extend(problems(partial)))
            if found:
                raise BackupError(f"the copy failed PRAGMA integrity_check: {'; '.join(found)}")
            publish(partial, target)
        finally:
            for leftover in (partial, *(Path(f"{partial}{s}") for s in ("-wal", "-shm"))):
                leftover.unlink(missing_ok=True)
    except (BackupError, OSError) as exc:
        print(f"workspace-api backup: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # sqlite3.Error: the source could not be read
        print(f"workspace-api backup: {source}: {exc}", file=sys.stderr)
        return 1
    summary = {
        "backup": str(target),
        "source": str(source),
        "bytes": target.stat().st_size,
        "seconds": round(seconds, 3),
        "integrityCheck": "ok",
        "checkSeconds": round(checking, 3),
    }
    emit(summary, args.json)
    return 0


def run_restore(config: Config, args: argparse.Namespace) -> int:
    if why := _refusal(config):
        print(f"workspace-api restore: {why}", file=sys.stderr)
        return 2
    target = Path(config.sqlite_path).expanduser()
    source = Path(args.source).expanduser()
    staged = target.with_name(f".{target.name}.{os.getpid()}.restore")
    carried = 0
    try:
        if not source.is_file():
            raise BackupError(f"no backup file at {source}")
        if in_use(target):  # said before the copy; checked again while it replaces the file
            raise BackupError(
                f"a process has the database file {target} open: stop every `workspace-api "
                "serve`, `demo`, `import` and admin command using it, then run the restore again"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        seconds = timed(lambda: stage(source, staged))
        found: list[str] = []
        checking = timed(lambda: found.extend(problems(staged)))
        if found:
            raise BackupError(f"{source} cannot be restored: {'; '.join(found)}")
        carried = carry_erasures(target, staged)  # what was erased since stays on record
        replace(target, staged)
    except (BackupError, OSError) as exc:
        print(f"workspace-api restore: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # sqlite3.Error: the backup could not be read
        print(f"workspace-api restore: {source} cannot be restored: {exc}", file=sys.stderr)
        return 1
    finally:
        for leftover in (staged, *(Path(f"{staged}{s}") for s in ("-wal", "-shm"))):
            leftover.unlink(missing_ok=True)
    summary = {
        "restored": str(target),
        "source": str(source),
        "bytes": target.stat().st_size,
        "seconds": round(seconds, 3),
        "integrityCheck": "ok",
        "checkSeconds": round(checking, 3),
        "erasuresKept": carried,
    }
    emit(summary, args.json)
    return 0
