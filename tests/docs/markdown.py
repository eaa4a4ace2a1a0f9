"""Reading the project's Markdown documents in tests: sections by heading, pipe tables as rows
of cells, fenced code blocks. Only what the documents use (no nested tables, no HTML)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def read(name: str) -> str:
    """A document by its path from the repository's root, e.g. "docs/api.md"."""
    return (ROOT / name).read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The body of the section whose heading line is exactly `heading` (e.g. "## Keys"), up to
    the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines()
    matches = [i for i, line in enumerate(lines) if line.strip() == heading]
    assert len(matches) == 1, f"{heading!r}: {len(matches)} headings with this text"
    body: list[str] = []
    for line in lines[matches[0] + 1 :]:
        found = re.match(r"(#{1,6}) ", line)
        if found and len(found.group(1)) <= level and not in_fence(body):
            break
        body.append(line)
    return "\n".join(body)


def headings(text: str, level: int) -> list[str]:
    """The text of every heading of exactly `level` (outside code blocks)."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match("#" * level + " ", line):
            found.append(line[level + 1 :].strip())
    return found


def in_fence(lines: list[str]) -> bool:
    return sum(line.startswith("```") for line in lines) % 2 == 1


def tables(text: str) -> list[list[dict[str, str]]]:
    """Every pipe table of `text`: a list of rows, each a dict from header to cell (stripped)."""
    found: list[list[dict[str, str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if (
            lines[i].startswith("|")
            and i + 1 < len(lines)
            and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1].strip())
        ):
            header = cells(lines[i])
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                row = cells(lines[i])
                assert len(row) == len(header), f"a row of {len(row)} cells: {lines[i]}"
                rows.append(dict(zip(header, row, strict=True)))
                i += 1
            found.append(rows)
        else:
            i += 1
    return found


def cells(line: str) -> list[str]:
    """The cells of one table row; a pipe inside backticks or escaped as \\| is text."""
    parts, current, code = [], "", False
    body = line.strip()[1:-1] if line.strip().endswith("|") else line.strip()[1:]
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\" and body[index + 1 : index + 2] == "|":
            current += "|"
            index += 2
            continue
        if char == "`":
            code = not code
        if char == "|" and not code:
            parts.append(current.strip())
            current = ""
        else:
            current += char
        index += 1
    parts.append(current.strip())
    return parts


def code(cell: str) -> str:
    """A cell's text without the backticks around it."""
    cell = cell.strip()
    return cell[1:-1] if cell.startswith("`") and cell.endswith("`") and len(cell) > 1 else cell


def code_blocks(text: str, language: str) -> list[str]:
    """The bodies of the fenced code blocks of `language` in `text`."""
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.S | re.M)
