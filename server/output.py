"""What the operator commands print: one JSON document with `--json` (for scripts), otherwise a
readable table per list of records, and `name: value` lines for single values."""

from __future__ import annotations

import json

TABLE_GAP = "  "
NONE = "-"


def _plain(value: dict) -> dict:
    """The value as JSON would show it (timestamps as ISO 8601 strings)."""
    from handlers.jsonio import dumps

    return json.loads(dumps(value))


def _cell(value: object) -> str:
    if value is None:
        return NONE
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ",".join(_cell(item) for item in value) or NONE
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def table(records: list[dict]) -> str:
    """Records as aligned columns under a header of their field names; "(none)" for no records."""
    if not records:
        return "(none)"
    columns = list(dict.fromkeys(name for record in records for name in record))
    rows = [columns] + [[_cell(record.get(name)) for name in columns] for record in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    return "\n".join(
        TABLE_GAP.join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def render(document: dict) -> str:
    """A command's document for people: a table for each list of records and for each record,
    a `name: value` line for everything else."""
    parts = []
    for name, value in document.items():
        if isinstance(value, list) and all(isinstance(item, dict) for item in value):
            parts.append(f"{name}:\n{table(value)}")
        elif isinstance(value, dict):
            parts.append(f"{name}:\n{table([value])}")
        else:
            parts.append(f"{name}: {_cell(value)}")
    return "\n".join(parts)


def emit(document: dict, as_json: bool) -> None:
    """Print a command's result on stdout: JSON (`--json`) or the readable form."""
    from handlers.jsonio import dumps

    print(dumps(document, indent=2) if as_json else render(_plain(document)))
