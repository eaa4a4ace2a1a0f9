"""docs/cli.md cannot drift from the command line: every command of `workspace-api` has a
section, every option and argument a row (with its default when it has one), and every
documented option exists, read from the parser the command itself builds."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from cli import build_parser
from tests.docs.markdown import code, headings, read, section, tables

DOC = "docs/cli.md"


def commands(
    parser: argparse.ArgumentParser, name: str = "workspace-api"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(name, parser) of every command that takes options or arguments of its own."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    own = [
        a
        for a in parser._actions
        if not isinstance(a, argparse._SubParsersAction | argparse._HelpAction)
    ]
    if own or not subparsers:
        yield name, parser
    for action in subparsers:
        for sub_name, sub in action.choices.items():
            yield from commands(sub, f"{name} {sub_name}")


def documented(name: str) -> dict[str, dict[str, str]]:
    """The rows of a command's section, by option string (`--port`) or argument (`NAME`)."""
    text = read(DOC)
    level = "##" if f"`{name}`" in headings(text, 2) else "###"
    rows = {}
    for table in tables(section(text, f"{level} `{name}`")):
        for row in table:
            first = row.get("Option") or row.get("Argument")
            assert first, f"{name}: a table without an Option or Argument column"
            rows[code(first).split()[0]] = row
    return rows


def test_every_command_has_a_section():
    text = read(DOC)
    sections = {code(h) for h in headings(text, 2) + headings(text, 3) if h.startswith("`")}
    names = {name for name, _ in commands(build_parser())}
    assert names <= sections, names - sections
    assert sections <= names, f"sections for commands that do not exist: {sections - names}"


def test_every_option_and_argument_has_a_row_and_nothing_else_does():
    for name, parser in commands(build_parser()):
        expected = {}
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            if action.option_strings:
                expected[max(action.option_strings, key=len)] = action
            else:
                expected[action.dest.upper()] = action
        rows = documented(name)
        assert set(rows) == set(expected), name


def test_each_row_gives_the_default_or_says_required():
    for name, parser in commands(build_parser()):
        rows = documented(name)
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            key = (
                max(action.option_strings, key=len)
                if action.option_strings
                else action.dest.upper()
            )
            shown = rows[key]["Default"]
            if action.required:
                assert shown == "required", (name, key)
            elif action.default not in (None, []):
                assert f"`{action.default}`" in shown, (name, key, action.default, shown)
            else:
                assert shown and shown != "required", (name, key)
            assert len(rows[key]["Meaning"].split()) >= 2, (name, key)
