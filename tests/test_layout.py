"""The tree's rooms: imports among the project's own code point down the floors, with no
cycles, and no module of the product grows past 500 lines."""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "server",
    "handlers",
    "store",
    "console",
    "schemas",
    "telephony",
    "webhooks",
    "demo",
    "cli",
    "bench",
)
# The rooms from the top floor down: a room imports only rooms on the floors below its own.
# cli/ is the `workspace-api` program (the server's commands and the demo's); the demo is built
# on the server's assembly; bench/ measures everything below it.
FLOORS = (
    ("cli", "bench"),
    ("demo",),
    ("server",),
    ("handlers",),
    ("console", "webhooks"),
    ("schemas", "store", "telephony"),
)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Every project module `path` imports, at any depth (function-level imports count too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def graph(level) -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        source = level(name)
        targets = {level(target) for target in imports_of(path, set(known))} - {source}
        edges.setdefault(source, set()).update(targets)
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph as a path, or None (depth-first search, three colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


@pytest.mark.parametrize("level", ["package", "module"])
def test_no_import_cycles(level):
    def package(name: str) -> str:
        return name.partition(".")[0]

    cycle = find_cycle(graph(package if level == "package" else str))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_handlers_and_store_stay_below_the_assembly():
    edges = graph(lambda name: name.partition(".")[0])
    assert "server" not in edges["handlers"]
    assert edges["store"] == set()  # the store imports no other room
    assert edges["telephony"] == set()


def test_webhook_delivery_imports_only_the_standard_library_and_its_http_client():
    """webhooks/ is the outbound side: the standard library, aiohttp (and yarl, the URL type
    aiohttp parses with) and its own modules; no handler or server. The dispatcher alone also
    uses the store (its contract: claims, deliveries, the events feed), as handlers do."""
    allowed = set(sys.stdlib_module_names) | {"aiohttp", "yarl", "webhooks"}
    store_users = {"webhooks.dispatcher"}
    known = modules()
    found = {}
    for name, path in known.items():
        if name.partition(".")[0] != "webhooks":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                roots = {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                roots = {node.module.partition(".")[0]}
            else:
                continue
            extra = roots - allowed - ({"store"} if name in store_users else set())
            if extra:
                found[str(path.relative_to(ROOT))] = sorted(extra)
    assert found == {}
    assert "webhooks" in known  # the rule looks at a package that exists


def test_imports_point_down_the_floors():
    """Every import between rooms goes to a room on a lower floor (TYPE_CHECKING and
    function-level imports count too): nothing reaches up, nothing sideways."""
    floor = {room: level for level, rooms in enumerate(FLOORS) for room in rooms}
    assert set(floor) == set(PACKAGES)
    edges = graph(lambda name: name.partition(".")[0])
    upward = sorted(
        f"{source} -> {target}"
        for source, targets in edges.items()
        for target in targets
        if floor[target] <= floor[source]
    )
    assert upward == []


def test_the_floor_check_finds_an_arrow_that_points_up(monkeypatch):
    """The check above fails on the import it was written against: the server's command line
    dispatching to the demo's process (the demo registers its command from cli/ instead)."""
    real = imports_of

    def with_the_old_dispatch(path: Path, known: set[str]) -> set[str]:
        extra = {"demo.runner"} if path == ROOT / "server" / "cli.py" else set()
        return real(path, known) | extra

    monkeypatch.setitem(globals(), "imports_of", with_the_old_dispatch)
    with pytest.raises(AssertionError, match="server -> demo"):
        test_imports_point_down_the_floors()


def test_the_demo_is_reached_only_from_above_and_reaches_no_handler():
    """The server's command line names no demo module: the `workspace-api` program (cli/)
    registers the demo's command on it; the benchmarks seed their files with the demo's data."""
    known = modules()
    into_demo = {
        name.partition(".")[0]
        for name, path in known.items()
        if not name.startswith("demo")
        and any(t.startswith("demo") for t in imports_of(path, set(known)))
    }
    assert into_demo == {"cli", "bench"}
    edges = graph(lambda name: name.partition(".")[0])
    assert "handlers" not in edges["demo"]


def test_the_benchmarks_import_each_other_in_one_direction():
    """The harness (processes, settings, side-by-side load) sits below the benchmarks that use
    it, and the runner that calls them sits above them: no benchmark imports bench.run."""
    known = modules()
    into_run = {
        name
        for name, path in known.items()
        if name not in ("bench.run", "bench.__main__")
        and "bench.run" in imports_of(path, set(known))
    }
    assert into_run == set()


def test_only_the_mongodb_backend_knows_the_driver():
    """Driver errors become store.errors inside store/mongo/; nothing else imports PyMongo (or
    the BSON package that ships with it), so handlers and the process never know the backend.
    (Tests and bench/ that measure the backend's own mechanics may.)"""
    drivers = {"pymongo", "bson", "gridfs", "motor"}
    known = modules()
    importers = set()
    for name, path in known.items():
        if name == "store.mongo" or name.startswith(("store.mongo.", "bench.")):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                roots = {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                roots = {node.module.partition(".")[0]}
            else:
                continue
            if roots & drivers:
                importers.add(str(path.relative_to(ROOT)))
    assert importers == set()


# The store contract's modules that are not the request path: handlers never reach them.
NOT_FOR_HANDLERS = ("store.contract.seeding", "store.contract.hooks", "store.contract.store")


def test_handlers_reach_only_the_request_path_of_the_store():
    """handlers/ import no seeding, bulk-loading, operator or test Protocol of the store
    contract (not by module, nor by name through store.contract), and the store they see is
    RequestStore, none of whose families declares a seeding or hook method."""
    import importlib
    import inspect
    import typing

    from handlers.base import APIHandler
    from store.contract.requests import RequestStore

    hidden = {}
    for module in NOT_FOR_HANDLERS:
        for name, value in vars(importlib.import_module(module)).items():
            if inspect.isclass(value) and value.__module__ == module:
                hidden[name] = module
    assert {"CallSeeding", "Seeding", "EventHooks", "StoreHooks", "Store"} <= set(hidden)
    known = modules()
    reached = {}
    for name, path in known.items():
        if name.partition(".")[0] != "handlers":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [f"{node.module}.{alias.name}" for alias in node.names]
                if node.module == "store.contract":
                    names = [hidden[a.name] for a in node.names if a.name in hidden]
                names.append(node.module)
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            bad = sorted({n for n in names if n.startswith(NOT_FOR_HANDLERS)})
            if bad:
                reached[str(path.relative_to(ROOT))] = bad
    assert reached == {}
    assert typing.get_type_hints(APIHandler.store.fget)["return"] is RequestStore
    from store.contract.store import Store

    def declared(protocol: type) -> set[str]:
        return {m for m in vars(protocol) if not m.startswith("_")}

    for family, prop in vars(Store).items():
        if not isinstance(prop, property):
            continue
        whole = typing.get_type_hints(prop.fget)["return"]
        request, *others = whole.__bases__[:-1]  # (request path, seeding/hooks..., Protocol)
        assert typing.get_type_hints(vars(RequestStore)[family].fget)["return"] is request
        assert others, family
        for other in others:
            assert other.__module__ in NOT_FOR_HANDLERS, (family, other)
            assert declared(other) and not declared(request) & declared(other), (family, other)


# A module holds one concern; past this many lines it holds several (CONVENTIONS 1).
MODULE_LINES = 500


def product_modules() -> list[Path]:
    """Every Python file of the checkout but the tests' (and what is not the project's: hidden
    directories such as .venv and .git, builds, installed metadata)."""
    found = []
    for folder, dirs, files in os.walk(ROOT):
        top = Path(folder) == ROOT
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".")
            and not d.endswith(".egg-info")
            and d not in ("build", "node_modules", "__pycache__")
            and not (top and d == "tests")
        ]
        found += [Path(folder) / name for name in files if name.endswith(".py")]
    return found


def test_no_product_module_is_over_500_lines():
    found = product_modules()
    names = {str(path.relative_to(ROOT)) for path in found}
    assert {"setup.py", "server/cli.py", "bench/run.py", "demo/data.py"} <= names
    assert not any(name.startswith(("tests/", ".venv/")) for name in names)
    long = {
        str(path.relative_to(ROOT)): lines
        for path in found
        if (lines := len(path.read_text().splitlines())) > MODULE_LINES
    }
    assert long == {}, f"modules over {MODULE_LINES} lines: {long}"
