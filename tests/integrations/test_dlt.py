"""integrations/dlt: the loader run as its users run it (`python integrations/dlt/load.py ...`)
into DuckDB, against a live demo that keeps recording calls and changing notes. After each run
every table holds exactly what the API held when the run caught up; the second run loads only
what changed since the first (its rows are all newer than the first run's); after a list and a
prospect are deleted, the third removes their rows (dlt's `hard_delete` on the tombstones'
`deletedAt`); and the source is importable on its own."""

from __future__ import annotations

import datetime as dt
import importlib
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import duckdb
import pytest
from dlt.common.normalizers.naming.snake_case import NamingConvention

from tests.helpers import running_demo

pytestmark = [pytest.mark.long, pytest.mark.own_store]

ROOT = Path(__file__).resolve().parents[2]
LOADER = ROOT / "integrations" / "dlt" / "load.py"
SNAKE = NamingConvention()
# The instant each table is in step up to: a record's last change (activities: when stored).
ORDER = {"calls": "updatedAt", "prospects": "updatedAt", "lists": "updatedAt"}


class Api:
    def __init__(self, keys: dict):
        self.base = keys["baseUrl"]
        self.key = keys["workspaces"][0]["apiKey"]

    def get(self, path: str) -> tuple[bytes, dict]:
        request = urllib.request.Request(
            self.base + path, headers={"Authorization": f"Bearer {self.key}"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.read(), dict(response.headers)

    def current(self, resource: str) -> list[dict]:
        """Every record of the resource as it is now, settled or not: newest first, by
        cursor (records recorded meanwhile are newer than anything loaded)."""
        seen, query = [], "pageSize=100"
        while True:
            page = json.loads(self.get(f"/{resource}?{query}")[0])
            seen += page[resource]
            if not page["hasMore"]:
                return seen
            query = f"cursor={page['nextCursor']}&pageSize=100"

    def delete(self, path: str) -> int:
        request = urllib.request.Request(
            self.base + path, method="DELETE", headers={"Authorization": f"Bearer {self.key}"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status

    def walk(self, resource: str) -> dict[str, dict]:
        """The whole sync order with tombstones (includeDeleted=true), by id."""
        seen, query = {}, "sort=updatedAt&includeDeleted=true&pageSize=100"
        while True:
            page = json.loads(self.get(f"/{resource}?{query}")[0])
            seen.update((record["id"], record) for record in page[resource])
            if not page["hasMore"]:
                return seen
            query = f"cursor={page['nextCursor']}&pageSize=100"

    def activities(self) -> list[dict]:
        return [json.loads(line) for line in self.get("/exports/activities")[0].splitlines()]

    def users(self) -> list[dict]:
        return json.loads(self.get("/users")[0])["users"]


def settled(api: Api, timeout: float = 30) -> None:
    """Wait until the demo's seeded lists show in the sync order (sync_settle_seconds after
    they were written), so that the first run has every resource to load."""
    total = json.loads(api.get("/lists")[0])["total"]
    deadline = time.monotonic() + timeout
    while len(json.loads(api.get("/lists?sort=updatedAt&pageSize=100")[0])["lists"]) < total:
        assert time.monotonic() < deadline, "the demo's lists never settled"
        time.sleep(0.2)


def load(api: Api, warehouse: Path) -> str:
    done = subprocess.run(
        [
            sys.executable,
            str(LOADER),
            "--base-url",
            api.base,
            "--api-key",
            api.key,
            "--duckdb",
            str(warehouse),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def as_api(value: object) -> object:
    """A DuckDB value as the API writes it (instants as ISO 8601 UTC with milliseconds)."""
    if isinstance(value, dt.datetime):
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.isoformat(timespec="milliseconds") + "Z"
    return value


def table(warehouse: Path, name: str, like: list[dict]) -> dict[str, dict]:
    """The table's rows by id, with the API's field names (`like` gives them) and values; the
    load id of each row under `_load`."""
    conn = duckdb.connect(str(warehouse), read_only=True)
    try:
        cursor = conn.execute(f"SELECT * FROM workspace_api.{name}")
        columns = [c[0] for c in cursor.description]
        rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    finally:
        conn.close()
    fields = list(dict.fromkeys(key for record in like for key in record))
    result = {}
    for row in rows:
        record = {}
        for field in fields:
            value = as_api(row.get(SNAKE.normalize_identifier(field)))
            if field in ("details", "listIds") and isinstance(value, str):
                value = json.loads(value)
            record[field] = value
        record["_load"] = row["_dlt_load_id"]
        result[record["id"]] = record
    return result


def last_load(warehouse: Path) -> str:
    conn = duckdb.connect(str(warehouse), read_only=True)
    try:
        return conn.execute("SELECT max(load_id) FROM workspace_api._dlt_loads").fetchone()[0]
    finally:
        conn.close()


def check_in_step(loaded: dict[str, dict], now: list[dict], field: str) -> str:
    """The table holds exactly the API's records up to the newest instant it holds: every
    record the API shows changed at or before it is there as the API shows it, and every row
    is a record of the API (one changed since shows there with a later instant)."""
    newest = max(row[field] for row in loaded.values())
    api = {record["id"]: record for record in now}
    for record in now:
        if record[field] <= newest:
            assert loaded.get(record["id"], {}) | {"_load": None} == record | {"_load": None}
    for row in loaded.values():
        assert row["id"] in api
        assert row[field] < api[row["id"]][field] or api[row["id"]][field] <= newest
    return newest


def test_the_dlt_loader_keeps_duckdb_in_step_with_a_live_workspace(tmp_path):
    warehouse = tmp_path / "warehouse.duckdb"
    # 2 live calls a second: a second load that takes a minute on a busy machine still finds
    # only a fraction of the calls changed.
    with running_demo(tmp_path, "--live-calls-per-minute", "120") as (_, keys, _log):
        api = Api(keys)
        settled(api)
        first = load(api, warehouse)
        assert "calls " in first
        high: dict[str, str] = {}
        for name, field in ORDER.items():
            now = api.current(name)
            high[name] = check_in_step(table(warehouse, name, now), now, field)
        activities = api.activities()
        high["activities"] = check_in_step(
            table(warehouse, "activities", activities), activities, "storedAt"
        )
        users = api.users()
        assert {k: {**v, "_load": None} for k, v in table(warehouse, "users", users).items()} == {
            u["id"]: {**u, "_load": None} for u in users
        }
        calls_after_first = len(table(warehouse, "calls", api.current("calls")))
        assert calls_after_first > 4000  # the demo's calls (about 5,000) and live ones

        time.sleep(3)  # the live writer records calls and changes notes meanwhile
        load(api, warehouse)
        second = last_load(warehouse)
        for name in ("calls", "prospects", "lists"):
            now = api.current(name)
            loaded = table(warehouse, name, now)
            check_in_step(loaded, now, "updatedAt")
            fresh = [row for row in loaded.values() if row["_load"] == second]
            assert all(row["updatedAt"] > high[name] for row in fresh), name  # nothing again
            if name == "calls":
                assert 0 < len(fresh) < calls_after_first / 10  # only what changed
            else:
                assert fresh == [], name  # nothing changed there
        activities = api.activities()
        loaded = table(warehouse, "activities", activities)
        check_in_step(loaded, activities, "storedAt")
        fresh = [row for row in loaded.values() if row["_load"] == second]
        assert fresh and all(row["storedAt"] >= high["activities"] for row in fresh)
        users = api.users()
        assert [r for r in table(warehouse, "users", users).values() if r["_load"] == second] == []
        deletions_leave_their_tables(api, warehouse)


def deletions_leave_their_tables(api: Api, warehouse: Path) -> None:
    """A list and a prospect of another list are deleted: the next run removes their rows, and
    loads the changes the deletions made (the list's members lose it from listIds, the
    prospect's lists count one member less) and nothing else."""
    prospects, lists = api.current("prospects"), api.current("lists")
    before = {
        "prospects": table(warehouse, "prospects", prospects),
        "lists": table(warehouse, "lists", lists),
    }
    gone_list = next(record for record in lists if record["prospectsCount"] > 0)
    members = {p["id"] for p in prospects if gone_list["id"] in p["listIds"]}
    gone_prospect = next(p for p in prospects if p["listIds"] and p["id"] not in members)
    touched = {"prospects": members, "lists": set(gone_prospect["listIds"])}
    gone = {"prospects": gone_prospect["id"], "lists": gone_list["id"]}
    for name in ("prospects", "lists"):
        assert gone[name] in before[name] and touched[name] <= set(before[name]), name
    assert api.delete(f"/prospects/{gone_prospect['id']}") == 204
    assert api.delete(f"/lists/{gone_list['id']}") == 204

    # The load must find every change of the deletions settled in the sync order.
    deadline = time.monotonic() + 60
    for name in ("prospects", "lists"):
        while True:
            walked = api.walk(name)
            if walked.get(gone[name], {}).get("deletedAt") and all(
                walked.get(i, {}).get("updatedAt", "") > before[name][i]["updatedAt"]
                for i in touched[name]
            ):
                break
            assert time.monotonic() < deadline, f"the deletions' {name} never settled"
            time.sleep(0.3)

    load(api, warehouse)
    third = last_load(warehouse)
    for name in ("prospects", "lists"):
        now = api.current(name)
        loaded = table(warehouse, name, now)
        assert gone[name] not in loaded, name
        check_in_step(loaded, now, "updatedAt")  # every row is a record the API still has
        assert {row["id"] for row in loaded.values() if row["_load"] == third} == touched[name]
        assert set(loaded) == set(before[name]) - {gone[name]}, name
    members_now = table(warehouse, "prospects", api.current("prospects"))
    assert all(gone_list["id"] not in members_now[i]["listIds"] for i in members)


def test_the_source_is_importable_and_builds_one_resource_per_table(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "integrations" / "dlt"))
    module = importlib.import_module("workspace_api")
    source = module.workspace_api("http://127.0.0.1:9/v1", "key")
    assert set(source.resources) == {"calls", "prospects", "lists", "users", "activities"}
    for name in ("calls", "prospects", "lists", "activities", "users"):
        assert source.resources[name].write_disposition == "merge"
