"""The `workspace-api` program: the server's command line (server/cli.py) with the commands of
the rooms above the server registered on it, the demo's (demo/command.py). It is the top of the
tree: the one room that imports both the server and the demo."""

from __future__ import annotations

import argparse

from demo.command import DEMO
from server import cli

COMMANDS = (DEMO,)


def build_parser() -> argparse.ArgumentParser:
    return cli.build_parser(COMMANDS)


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, COMMANDS)
