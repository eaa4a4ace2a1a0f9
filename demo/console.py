"""The demo's admin console: admin commands (workspaces, users, keys) typed on the demo's
standard input run against its embedded store, the only place they can reach it."""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import sys
import threading
from typing import Any, TextIO

from server.admin import ADMIN_COMMANDS, admin_parser, run_admin
from server.config import Config

log = logging.getLogger("workspace_api")


def reads_commands(stdin: TextIO | None) -> bool:
    """Whether to read admin commands: from a pipe or file, or from a terminal the demo has in
    the foreground (a background job reading its terminal would be stopped by the shell)."""
    if stdin is None or stdin.closed:
        return False
    try:
        if not stdin.isatty():
            return True
        return os.tcgetpgrp(stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError):
        return False


async def admin_console(config: Config, store: Any, auth: Any) -> None:
    """Run admin commands typed on standard input, e.g. `keys revoke KEY_ID`, with the demo's
    store and key service. Returns at end of input (at once when input is not read)."""
    loop, lines = asyncio.get_running_loop(), asyncio.Queue[str | None]()

    def read() -> None:  # a daemon thread: a blocked read never holds up exit
        for line in sys.stdin:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        loop.call_soon_threadsafe(lines.put_nowait, None)

    if not reads_commands(sys.stdin):
        return
    threading.Thread(target=read, name="demo-admin", daemon=True).start()
    while (line := await lines.get()) is not None:
        try:
            words = shlex.split(line)
            if not words:
                continue
            if words[0] not in ADMIN_COMMANDS:
                raise ValueError("only admin commands (workspaces, users, keys) run here")
            args = admin_parser().parse_args(words)
        except SystemExit:  # argparse has printed the usage
            continue
        except ValueError as exc:
            print(f"workspace-api: {exc}", file=sys.stderr, flush=True)
            continue
        try:
            await run_admin(config, args, services=(store, auth))
        except Exception:  # a failed command must not end the demo
            log.exception("admin command failed: %s", words[:2])
        sys.stdout.flush()
