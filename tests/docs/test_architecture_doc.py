"""docs/architecture.md cannot drift from the tree: its rooms table names every top-level
directory that holds Python code (and no other), and its two store contract tables name exactly
the Protocols of store/contract/: each module with the classes it declares, and each family of
`RequestStore` and `Store` with its request-path Protocol and its seeding and hooks Protocols."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import typing

import store.contract
from store.contract.requests import RequestStore
from store.contract.store import Store
from tests.docs.markdown import ROOT, code, read, section, tables

DOC = "docs/architecture.md"
CONTRACT = ROOT / "store" / "contract"


def names(cell: str) -> set[str]:
    """The Python names in backticks of a cell (the words around them are comment)."""
    return {found for found in re.findall(r"`([A-Za-z_]\w*)`", cell)}


def table_with(heading: str, first_column: str) -> list[dict[str, str]]:
    found = [t for t in tables(section(read(DOC), heading)) if t and first_column in t[0]]
    assert len(found) == 1, f"{heading}: one table whose first column is {first_column!r}"
    return found[0]


def python_rooms() -> set[str]:
    """The top-level directories of the repository whose tracked files include Python."""
    listed = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return {path.split("/")[0] for path in listed if "/" in path}


def test_the_rooms_table_names_every_directory_that_holds_python():
    rows = table_with("## The rooms", "Directory")
    documented = [code(row["Directory"]).rstrip("/") for row in rows]
    assert len(documented) == len(set(documented)), "a room listed twice"
    assert set(documented) == python_rooms()
    assert "webhooks" in documented


def declared_classes() -> dict[str, set[str]]:
    """Each module of store/contract/ (but the package's __init__) -> the classes it defines."""
    found = {}
    for path in sorted(CONTRACT.glob("*.py")):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found[path.name] = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    return found


def test_the_module_table_names_every_protocol_of_every_contract_module():
    rows = table_with("## The store contract", "Module")
    documented = {code(row["Module"]): names(row["Declares"]) for row in rows}
    assert len(documented) == len(rows), "a module listed twice"
    assert documented == declared_classes()
    exported = set(store.contract.__all__)
    assert set().union(*documented.values()) == exported  # the package re-exports them all


def family_protocols() -> dict[str, tuple[str, set[str]]]:
    """`store.<name>` -> (its request-path Protocol, its seeding and hooks Protocols), read from
    the properties of RequestStore and Store."""
    request = {
        name: typing.get_type_hints(member.fget)["return"]
        for name, member in inspect.getmembers(RequestStore)
        if isinstance(member, property)
    }
    whole = {
        name: typing.get_type_hints(member.fget)["return"]
        for name, member in inspect.getmembers(Store)
        if isinstance(member, property)
    }
    families = {}
    for name, protocol in request.items():
        if not getattr(protocol, "_is_protocol", False):
            continue  # backend, embedded, ...: facts about the store, not families
        everything = whole.get(name, protocol)
        parts = (
            {base.__name__ for base in everything.__bases__}
            if everything is not protocol
            else set()
        )
        families[name] = (protocol.__name__, parts - {protocol.__name__, "Protocol", "Generic"})
    return families


def test_the_family_table_matches_the_request_store_and_the_store():
    rows = table_with("## The store contract", "`store.<name>`")
    documented = {}
    for row in rows:
        name = code(row["`store.<name>`"])
        assert name not in documented, f"{name} listed twice"
        cell = row["Seeding / hooks"]
        documented[name] = (
            code(row["Request path"]),
            {code(p.strip()) for p in cell.split(",") if p.strip()},
        )
    assert documented == family_protocols()
