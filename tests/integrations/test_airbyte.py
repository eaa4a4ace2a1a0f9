"""integrations/airbyte/manifest.yaml, run by the pinned airbyte-cdk's source-declarative-manifest
(no Docker) against a demo: its configuration's spec, `check`, `discover`, a full `read` whose
record counts are the API's, and an incremental `read` from the state the full read emitted,
which reads only the records changed since (within the settle period's lookback); after a prospect
and a list are deleted, the next incremental read carries their tombstones (deletedAt set)."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time
import urllib.request
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.helpers import running_demo
from tests.integrations.airbyte_env import source_declarative_manifest

pytestmark = [pytest.mark.long, pytest.mark.own_store]

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "integrations" / "airbyte" / "manifest.yaml"
STREAMS = {"calls", "prospects", "lists", "users"}
LOOKBACK = dt.timedelta(seconds=5)  # the manifest's lookback_window: the settle period


def airbyte(
    command: list[str], *args: str, files: dict[str, object], tmp: Path, failing: bool = False
) -> list[dict]:
    """Run one command of the connector; its Airbyte messages. `files` are written as JSON and
    passed as --<name> <file>. Unless `failing`, the command must succeed without an error."""
    options = []
    for name, value in files.items():
        path = tmp / f"{name}.json"
        path.write_text(json.dumps(value))
        options += [f"--{name}", str(path)]
    done = subprocess.run(
        [*command, *args, *options, "--manifest-path", str(MANIFEST)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    messages = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    errors = [m for m in messages if m["type"] == "TRACE" and m["trace"]["type"] == "ERROR"]
    assert failing or (done.returncode == 0 and not errors), (done.stderr[-3000:], errors)
    return messages


def records(messages: list[dict]) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {name: [] for name in STREAMS}
    for message in messages:
        if message["type"] == "RECORD":
            found[message["record"]["stream"]].append(message["record"]["data"])
    return found


def last_states(messages: list[dict]) -> list[dict]:
    """The last state message of every stream, as `read --state` takes them."""
    latest = {}
    for message in messages:
        if message["type"] == "STATE":
            latest[message["state"]["stream"]["stream_descriptor"]["name"]] = message["state"]
    return list(latest.values())


def instant(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


class Api:
    def __init__(self, keys: dict):
        self.base, self.key = keys["baseUrl"], keys["workspaces"][0]["apiKey"]

    def call(self, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(
            self.base + path,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def delete(self, path: str) -> int:
        request = urllib.request.Request(
            self.base + path, method="DELETE", headers={"Authorization": f"Bearer {self.key}"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status

    def tombstone(self, resource: str, record_id: str, timeout: float = 30) -> dict:
        """The record's tombstone, once it shows in the sync order (includeDeleted=true)."""
        deadline = time.monotonic() + timeout
        while True:
            query = "sort=updatedAt&includeDeleted=true&pageSize=100"
            while True:
                page = self.call(f"/{resource}?{query}")
                for record in page[resource]:
                    if record["id"] == record_id and record.get("deletedAt"):
                        return record
                if not page["hasMore"]:
                    break
                query = f"cursor={page['nextCursor']}&pageSize=100"
            assert time.monotonic() < deadline, f"{resource} {record_id}: no tombstone"
            time.sleep(0.3)

    def settled(self, resource: str, timeout: float = 30) -> int:
        """How many records the resource has, once all of them show in the sync order."""
        deadline = time.monotonic() + timeout
        while True:
            total = self.call(f"/{resource}")["total"]
            seen, query = 0, "sort=updatedAt&pageSize=100"
            while True:
                page = self.call(f"/{resource}?{query}")
                seen += len(page[resource])
                if not page["hasMore"]:
                    break
                query = f"cursor={page['nextCursor']}&pageSize=100"
            if seen == total:
                return total
            assert time.monotonic() < deadline, f"{resource}: {seen} of {total} settled"
            time.sleep(0.3)


def test_the_airbyte_manifest_checks_discovers_and_reads_in_full_and_incrementally(
    tmp_path, monkeypatch
):
    command = source_declarative_manifest()
    # Every demo call lies months back, so everything is settled once the lists are.
    monkeypatch.setenv("WSAPI_DEMO_ANCHOR", "2026-01-05")
    with running_demo(tmp_path) as (_, keys, _log):
        api = Api(keys)
        totals = {name: api.settled(name) for name in ("lists", "prospects", "calls")}
        totals["users"] = len(api.call("/users")["users"])
        config = {"base_url": api.base, "api_key": api.key}

        # The connector's configuration, as the manifest's spec declares it.
        specification = yaml.safe_load(MANIFEST.read_text())["spec"]["connection_specification"]
        assert set(specification["properties"]) == {"base_url", "api_key", "start_date"}
        assert specification["properties"]["api_key"]["airbyte_secret"] is True
        validator = jsonschema.Draft7Validator(specification)
        assert list(validator.iter_errors(config)) == []
        assert list(validator.iter_errors({**config, "start_date": "2026-01-01T00:00:00Z"})) == []
        for wrong in ({"base_url": api.base}, {**config, "base_url": "http://h/api"}):
            assert list(validator.iter_errors(wrong)), wrong

        checked = airbyte(command, "check", files={"config": config}, tmp=tmp_path)
        [status] = [m["connectionStatus"] for m in checked if m["type"] == "CONNECTION_STATUS"]
        assert status["status"] == "SUCCEEDED"
        wrong = airbyte(
            command,
            "check",
            files={"config": {**config, "api_key": "x"}},
            tmp=tmp_path,
            failing=True,
        )
        [status] = [m["connectionStatus"] for m in wrong if m["type"] == "CONNECTION_STATUS"]
        assert status["status"] == "FAILED"

        discovered = airbyte(command, "discover", files={"config": config}, tmp=tmp_path)
        [catalog] = [m["catalog"] for m in discovered if m["type"] == "CATALOG"]
        streams = {s["name"]: s for s in catalog["streams"]}
        assert set(streams) == STREAMS
        for name in ("calls", "prospects", "lists"):
            assert "incremental" in streams[name]["supported_sync_modes"], name
            assert streams[name]["default_cursor_field"] == ["updatedAt"]
        assert streams["users"]["supported_sync_modes"] == ["full_refresh"]
        configured = {
            "streams": [
                {
                    "stream": stream,
                    "sync_mode": "full_refresh" if name == "users" else "incremental",
                    "destination_sync_mode": "append",
                    **({} if name == "users" else {"cursor_field": ["updatedAt"]}),
                }
                for name, stream in streams.items()
            ]
        }

        full = airbyte(
            command, "read", files={"config": config, "catalog": configured}, tmp=tmp_path
        )
        read = records(full)
        assert {name: len(found) for name, found in read.items()} == totals
        for name, found in read.items():
            assert len({r["id"] for r in found}) == len(found), name  # each record once
        states = last_states(full)
        cursors = {
            s["stream"]["stream_descriptor"]["name"]: s["stream"]["stream_state"]["updatedAt"]
            for s in states
            if "updatedAt" in s["stream"].get("stream_state", {})
        }
        for name in ("calls", "prospects", "lists"):
            assert instant(cursors[name]) == max(instant(r["updatedAt"]) for r in read[name])

        owner = read["users"][0]["id"]
        created = api.call("/lists", {"name": "Read incrementally", "ownerUserId": owner})["list"]
        api.settled("lists")
        again = records(
            airbyte(
                command,
                "read",
                files={"config": config, "catalog": configured, "state": states},
                tmp=tmp_path,
            )
        )
        assert created["id"] in {r["id"] for r in again["lists"]}
        for name in ("calls", "prospects", "lists"):
            since = instant(cursors[name]) - LOOKBACK
            assert all(instant(r["updatedAt"]) >= since for r in again[name]), name
        assert len(again["calls"]) < totals["calls"] / 10  # only the lookback's few
        assert len(again["users"]) == totals["users"]  # a full refresh every time

        # Deletions: the next incremental read carries the tombstones, deletedAt the soft-delete
        # column. Deduplicated by id on the newest updatedAt (Append + Deduped), the deleted
        # records' rows are marked and every other row is not. The prospects' state lies months
        # back (the demo's anchor): the read starts inside the tombstones' horizon, never a 410.
        for name in ("prospects", "lists"):
            schema = streams[name]["json_schema"]["properties"]
            assert schema["deletedAt"]["type"] == ["string", "null"], name
        assert all("deletedAt" not in r for name in ("prospects", "lists") for r in read[name])
        gone = {"lists": created["id"], "prospects": read["prospects"][0]["id"]}
        for name, record_id in gone.items():
            assert api.delete(f"/{name}/{record_id}") == 204
        tombstones = {name: api.tombstone(name, record_id) for name, record_id in gone.items()}
        deleted = records(
            airbyte(
                command,
                "read",
                files={"config": config, "catalog": configured, "state": states},
                tmp=tmp_path,
            )
        )
        for name, record_id in gone.items():
            [sent] = [r for r in deleted[name] if r["id"] == record_id]
            assert sent == tombstones[name] and sent["deletedAt"] == sent["updatedAt"], name
            rows: dict[str, dict] = {}
            for record in [*read[name], *again[name], *deleted[name]]:
                kept = rows.get(record["id"])
                if kept is None or instant(record["updatedAt"]) >= instant(kept["updatedAt"]):
                    rows[record["id"]] = record
            marked = {i for i, row in rows.items() if row.get("deletedAt")}
            assert marked == {record_id}, name
