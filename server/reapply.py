"""`workspace-api erasures reapply`: after a backup is restored, erase again what was erased
since it was taken. A restore keeps the erasure requests of the file it replaces
(store/sqlite/backup.py `carry_erasures`; on MongoDB, restore without the `erasures`
collection), so they name what the restored data brought back: the store's `reopen_undone`
makes each such request `pending` again, and the erasure worker (server/erasure_work.py) runs
them here, to the end, with the scrub that ends each one."""

from __future__ import annotations

import argparse
import sys

from server.config import Config
from server.output import emit

THROWAWAY = (
    "MONGODB_URI=memory is a throwaway store that lives inside one process: there is nothing "
    "to erase again"
)


def add_erasures_commands(sub: argparse._SubParsersAction) -> None:
    erasures = sub.add_parser("erasures", help="erasure requests (after a restore)").add_subparsers(
        dest="action", required=True
    )
    reapply = erasures.add_parser(
        "reapply",
        help="erase again what was erased since the restored backup",
        description="Erase again every person erased since the backup that was restored: each "
        "completed erasure request whose prospects or calls the data shows again is run again, "
        "to the end (recordings already gone at the provider count as deleted).",
    )
    reapply.add_argument(
        "--json", action="store_true", help="print one JSON document instead of a table"
    )


async def run_reapply(config: Config, args: argparse.Namespace) -> int:
    if config.throwaway:
        print(f"workspace-api erasures reapply: {THROWAWAY}", file=sys.stderr)
        return 2
    # Here, not at the top: the command line's parser is built without the application.
    from server.erasure_work import ErasureWork
    from server.services import open_services
    from telephony.upstream import UpstreamClient

    store, auth = await open_services(config)
    try:
        reopened = await store.erasures.reopen_undone(store.clock.now())
        work = ErasureWork(store, UpstreamClient.from_config(config))
        ran = await work.drain()
        left = await store.erasures.open_count()
    finally:
        await auth.usage.stop()
        await store.close()
    emit({"reopened": reopened, "ran": ran, "stillOpen": left}, args.json)
    return 0 if left == 0 else 1
