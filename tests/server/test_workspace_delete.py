"""`workspace-api workspaces delete ID --confirm NAME`, run for real (a subprocess on this tier's
store: the SQLite file, or this test's database at MONGODB_URI) against a serving app with two
workspaces whose data came in through the API, and the simulated provider holding their
recordings. The deleted workspace's keys answer 401, every record of it is gone from every
table or collection, its recordings are 404 at the provider, the other workspace is untouched;
on SQLite its people are in 0 bytes of the database file and its write-ahead log. A wrong
name deletes nothing; a provider failure stops the command, and running it again (also after a
kill, at the provider or between two batches of records) completes it."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import sqlite3
import sys
import time
import uuid
from pathlib import Path

import pytest

from server.config import load_config
from store.paging import Position
from store.sqlite.schema import EPOCH
from store.sqlite.turns import Turns
from telephony.simulated_provider import ProviderServer, make_ref, start_provider
from tests.erased_bytes import assert_absent, assert_present, stored_forms
from tests.helpers import Client, Workspace, test_environ, until, wait_for

pytestmark = pytest.mark.long

ACCOUNT_ID = "AC" + "7d" * 16
AUTH_TOKEN = "provider-token-c0ffee42"
# Short enough that the command's grace (key cache + database timeout) stays short here.
KEY_CACHE_SECONDS = "0.5"
DB_TIMEOUT_SECONDS = "3"


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "store.sqlite3"


@pytest.fixture
def config(db_path):
    """This tier's store in a place the command can reach too: a SQLite file (not a throwaway
    one) or this test's database at MONGODB_URI."""
    base = test_environ()
    return load_config(
        environ={
            **base,
            "MONGODB_URI": "" if base["MONGODB_URI"] == "memory" else base["MONGODB_URI"],
            "WSAPI_SQLITE_PATH": str(db_path),
            "WSAPI_KEY_CACHE_SECONDS": KEY_CACHE_SECONDS,
            "WSAPI_DB_TIMEOUT_SECONDS": DB_TIMEOUT_SECONDS,
        }
    )


@pytest.fixture
def provider(io_loop) -> ProviderServer:
    server = io_loop.run_sync(lambda: start_provider(account_id=ACCOUNT_ID, auth_token=AUTH_TOKEN))
    yield server
    io_loop.run_sync(server.stop)


@pytest.fixture
def env(config, provider) -> dict:
    return {
        **os.environ,
        "MONGODB_URI": config.mongodb_uri,
        "WSAPI_SQLITE_PATH": str(config.sqlite_path),
        "WSAPI_DATABASE": config.database,
        "WSAPI_SECRET": config.secret,
        "WSAPI_KEY_CACHE_SECONDS": KEY_CACHE_SECONDS,
        "WSAPI_DB_TIMEOUT_SECONDS": DB_TIMEOUT_SECONDS,
        "WSAPI_PROVIDER_URL": provider.base_url,
        "WSAPI_PROVIDER_ACCOUNT_ID": ACCOUNT_ID,
        "WSAPI_PROVIDER_AUTH_TOKEN": AUTH_TOKEN,
    }


async def start(env: dict, *argv: str) -> asyncio.subprocess.Process:
    """The command, started without blocking the event loop (the provider answers on it)."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server.cli",
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )


async def command(env: dict, *argv: str) -> tuple[int, str, str]:
    process = await start(env, *argv)
    out, err = await asyncio.wait_for(process.communicate(), 120)
    return process.returncode or 0, out.decode(), err.decode()


def delete_argv(ws: Workspace, name: str | None = None) -> list[str]:
    return ["workspaces", "delete", ws.id, "--confirm", ws.name if name is None else name]


# -- the data of a workspace, as a customer's integration writes it ---------------------------


def person(tag: str, n: int) -> dict:
    """A contact whose every value is distinctive (a byte search cannot find it by chance):
    each tag has an area code of its own."""
    area = 300 + sum(map(ord, tag)) % 600
    return {
        "firstName": f"Wilhelmina{tag}{n}",
        "lastName": f"Quarrington{tag}{n}",
        "email": f"Wilhelmina.Quarrington{tag}{n}@Departing-{tag}.example",
        "phoneNumber": f"({area}) 555-01{n:02d}",
        "companyName": f"Zanzibar Freight {tag}{n}",
    }


def forms_of(people: list[dict], notes: list[str]) -> dict[str, set[bytes]]:
    return stored_forms(
        emails=[p["email"] for p in people],
        phones=[p["phoneNumber"] for p in people if "phoneNumber" in p],
        names=[p[f] for p in people for f in ("firstName", "lastName", "companyName") if f in p]
        + notes,
    )


async def seed(store, client: Client, dialer: Client, ws: Workspace, tag: str) -> dict:
    """Every kind of record the store keeps for a workspace, most through the API: a list and
    its upload (with an Idempotency-Key), prospects, calls with notes and recordings, an
    activity, a do-not-call entry, a user, a webhook endpoint with deliveries, a provider call
    kept aside with its recording. Returns the people, the notes and the recording refs."""
    people = [person(tag, n) for n in range(3)]
    user = ws.users[0]["id"]
    listing = (await client.post("/v1/lists", {"name": f"Leads {tag}", "ownerUserId": user})).json()
    upload = await client.post(
        f"/v1/lists/{listing['list']['id']}/contacts",
        {"contacts": people},
        headers={"Idempotency-Key": f"upload-{tag}"},
    )
    assert upload.code == 200, upload.json()
    ids = [result["prospectId"] for result in upload.json()["results"]]
    notes, refs = [], []
    for n, who in enumerate(people):
        note = f"Notes{tag}{n}: {who['firstName']} wants the Zanzibar tariff"
        ref = make_ref(f"{tag}-call-{n}")
        notes.append(note)
        refs.append(ref)
        call = await dialer.post(
            "/v1/calls",
            {
                "userId": user,
                "prospectId": ids[n],
                "direction": "outbound",
                "disposition": "connected",
                "fromNumber": "+12125550100",
                "toNumber": who["phoneNumber"],
                "startedAt": f"2026-11-0{n + 1}T09:30:00Z",
                "answeredAt": f"2026-11-0{n + 1}T09:30:05Z",
                "endedAt": f"2026-11-0{n + 1}T09:33:00Z",
                "notes": note,
                "recordingSid": ref,
                "recordingDurationSeconds": 175,
            },
        )
        assert call.code == 201, call.json()
    activity = await dialer.post(
        "/v1/prospect-activities",
        {
            "prospectId": ids[0],
            "type": "note",
            "occurredAt": "2026-11-05T10:00:00Z",
            "details": {"text": notes[0]},
        },
    )
    assert activity.code == 201, activity.json()
    dnc = await client.post(
        "/v1/do-not-call", {"entries": [{"phoneNumber": people[2]["phoneNumber"]}]}
    )
    assert dnc.code in (200, 201), dnc.json()
    staff = {
        "firstName": f"Bartholomew{tag}",
        "lastName": f"Okonkwo-Vance{tag}",
        "email": f"Bartholomew.Okonkwo{tag}@Departing-{tag}.example",
    }
    await store.users.create(ws.id, staff["email"], staff["firstName"], staff["lastName"])
    people.append(staff)
    now = store.clock.now()
    endpoint = await store.webhook_endpoints.create(
        ws.id, f"https://hooks.{tag.lower()}.example/in", None, None, "whsec_" + "a" * 32, now
    )
    page = await store.events.page(ws.id, Position(EPOCH, ""), now, 100)
    assert page.events
    await store.webhook_deliveries.add(ws.id, endpoint["id"], 0, page.events, now)
    held = make_ref(f"{tag}-held")
    refs.append(held)
    await store.provider_calls.hold_recording(
        ws.id, "CA" + uuid.uuid4().hex, held, 60, now + dt.timedelta(days=7)
    )
    return {"people": people, "notes": notes, "refs": refs}


async def records_of(store, workspace_id: str) -> dict[str, list[dict]]:
    """Every stored document that belongs to the workspace, by table or collection (the
    workspace's own record under "workspaces")."""
    found = {}
    for name in await store.collections():
        docs = [
            doc
            for doc in await store.documents(name)
            if doc.get("workspaceId") == workspace_id
            or (name == "workspaces" and doc.get("_id") == workspace_id)
            or str(doc.get("_id", "")).startswith(f"{workspace_id}:")
        ]
        if docs:
            found[name] = docs
    return found


async def steady(store, workspace_id: str) -> dict[str, list[dict]]:
    """The workspace's records, less what changes by itself (a key's last use)."""
    records = await records_of(store, workspace_id)
    for key in records.get("api_keys", []):
        key.pop("lastUsedAt", None)
    return records


async def refused(client: Client) -> bool:
    return (await client.get("/v1/users", check=False)).code == 401


# -- the tests ----------------------------------------------------------------------------------


async def test_deletes_every_record_and_recording_of_the_workspace_and_nothing_else(
    store, config, env, provider, api, api_b, dialer, dialer_b, ws_a, ws_b
):
    a = await seed(store, api, dialer, ws_a, "Aa")
    b = await seed(store, api_b, dialer_b, ws_b, "Bb")
    held_a = await records_of(store, ws_a.id)
    assert {"calls", "prospects", "events", "idempotency", "webhook_deliveries"} <= set(held_a)
    before_b = await steady(store, ws_b.id)
    forms_a = forms_of(a["people"], a["notes"])
    if store.embedded:
        assert_present(config.sqlite_path, forms_a)

    code, out, err = await command(env, *delete_argv(ws_a), "--json")

    assert code == 0, err
    assert f'"workspace": "{ws_a.id}"' in out and '"recordings": 4' in out
    # The API serves it no more: its key is refused (once the key cache lapses), everywhere.
    await until(lambda: refused(api), timeout=10, what="workspace A's key refused")
    assert await refused(dialer)
    assert await records_of(store, ws_a.id) == {}
    assert await store.workspaces.find(ws_a.id) is None
    # Its recordings are gone at the provider; the other workspace's are not.
    assert sorted(provider.stats.deleted) == sorted(a["refs"])
    assert all(provider.library.get(ref) is None for ref in a["refs"])
    assert all(provider.library.get(ref) is not None for ref in b["refs"])
    # The other workspace: every record as it was, and served.
    assert await steady(store, ws_b.id) == before_b
    assert (await api_b.get("/v1/calls")).json()["total"] == 3
    if store.embedded:  # the proof: not a byte of the deleted people in the file or its log
        assert_absent(config.sqlite_path, forms_a)
        assert_present(config.sqlite_path, forms_of(b["people"], b["notes"]))


async def test_a_wrong_name_or_an_unknown_id_deletes_nothing(
    store, env, provider, api, dialer, ws_a
):
    await seed(store, api, dialer, ws_a, "Cc")
    before = await steady(store, ws_a.id)

    code, _, err = await command(env, *delete_argv(ws_a, name=ws_a.name.lower()))
    assert code == 1
    assert "--confirm must be the workspace's current name" in err and "nothing was deleted" in err
    code, _, err = await command(env, "workspaces", "delete", str(uuid.uuid4()), "--confirm", "X")
    assert code == 1 and "no workspace" in err

    assert await steady(store, ws_a.id) == before
    assert (await api.get("/v1/calls")).code == 200
    assert provider.stats.deletes == 0


async def test_a_provider_failure_stops_it_and_running_it_again_completes_it(
    store, config, env, provider, api, dialer, ws_a
):
    seeded = await seed(store, api, dialer, ws_a, "Dd")
    provider.faults.set_delete("500", refs=seeded["refs"][2:3])

    code, _, err = await command(env, *delete_argv(ws_a))

    assert code == 1
    assert "the telephony provider did not delete a recording" in err
    assert "run the command again" in err
    await until(lambda: refused(api), timeout=10, what="workspace A's key refused")
    left = await records_of(store, ws_a.id)
    assert len(left["calls"]) == 3 and left["prospects"]  # no record deleted but the keys
    assert "api_keys" not in left
    assert await store.workspaces.get(ws_a.id) is None  # the request path no longer finds it
    [marked] = [w for w in await store.workspaces.list() if w["id"] == ws_a.id]
    assert marked["deletingAt"] is not None  # the operator sees it is being deleted

    provider.faults.clear()
    code, _, err = await command(env, *delete_argv(ws_a))

    assert code == 0, err
    assert await records_of(store, ws_a.id) == {}
    assert sorted(provider.stats.deleted) == sorted(seeded["refs"])
    # A recording confirmed gone in the first run is not asked for again.
    assert len(provider.stats.deletes_of(seeded["refs"][0])) == 1
    if store.embedded:
        assert_absent(config.sqlite_path, forms_of(seeded["people"], seeded["notes"]))


async def test_a_run_killed_part_way_is_completed_by_the_next(
    store, config, env, provider, api, dialer, ws_a
):
    seeded = await seed(store, api, dialer, ws_a, "Ee")
    provider.faults.set_delete("stall", refs=seeded["refs"][1:2], stall_seconds=60)
    process = await start(env, *delete_argv(ws_a))
    await wait_for(
        lambda: len(provider.stats.deletes_of(seeded["refs"][1])) == 1,
        what="the command's delete of the stalled recording",
    )
    process.send_signal(signal.SIGKILL)
    assert await asyncio.wait_for(process.wait(), 30) == -signal.SIGKILL
    provider.faults.clear()

    code, _, err = await command(env, *delete_argv(ws_a))

    assert code == 0, err
    assert await records_of(store, ws_a.id) == {}
    assert sorted(provider.stats.deleted) == sorted(seeded["refs"])
    if store.embedded:
        assert_absent(config.sqlite_path, forms_of(seeded["people"], seeded["notes"]))


async def test_recordings_without_a_configured_provider_stop_it(store, env, api, dialer, ws_a):
    await seed(store, api, dialer, ws_a, "Ff")
    without = {**env, "WSAPI_PROVIDER_URL": ""}

    code, _, err = await command(without, *delete_argv(ws_a))

    assert code == 1 and "no provider is configured" in err
    left = await records_of(store, ws_a.id)
    assert len(left["calls"]) == 3 and "api_keys" not in left  # stopped before any record


@pytest.mark.sqlite
async def test_a_run_killed_while_it_deletes_records_is_completed_by_the_next(
    store, config, env, provider, api, dialer, ws_a
):
    """Killed between two batches of its records (held there by the file's write lock, which
    the test takes once the events, the last table, are being deleted)."""
    seeded = await seed(store, api, dialer, ws_a, "Gg")
    many = 50_000  # events enough that their deletion takes many batches

    def add_events(conn: sqlite3.Connection, first: int, count: int) -> None:
        conn.executemany(
            "INSERT INTO events VALUES (?, ?, 'prospect.updated', ?, 0, ?)",
            (
                (str(uuid.uuid4()), ws_a.id, str(n), f'{{"note":"{seeded["notes"][0]}"}}')
                for n in range(first, first + count)
            ),
        )

    def events_left(conn: sqlite3.Connection) -> int:
        return conn.execute(
            "SELECT count(*) FROM events WHERE workspaceId = ?", (ws_a.id,)
        ).fetchone()[0]

    for first in range(0, many, 5_000):  # each write well within the database timeout
        await store.engine.write(add_events, first, 5_000)
    total = await store.engine.read(events_left)
    process = await start(env, *delete_argv(ws_a))
    lock = sqlite3.connect(
        config.sqlite_path, isolation_level=None, timeout=30, check_same_thread=False
    )

    turns = Turns(Path(config.sqlite_path))

    def hold_mid_events(deadline: float) -> bool:
        """The write lock taken (the next batch waits) and kept once the command is part way
        through the events. Looked at under the lock, so that no batch deletes the rest between
        the look and the hold; taken in turns with the command's writer (store/sqlite/turns.py:
        it lets a waiting writer in between two of its batches), every 2 ms."""
        while time.monotonic() < deadline:
            assert turns.begin(lock, deadline, 30_000), "the write lock stayed taken"
            if 0 < events_left(lock) < total:
                return True
            lock.execute("ROLLBACK")
            time.sleep(0.002)
        return False

    try:
        held = await asyncio.to_thread(hold_mid_events, time.monotonic() + 60)
        assert held, "the command did not start deleting the events within 60 s"
        assert await store.engine.read(events_left) > 0
        process.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(process.wait(), 30) == -signal.SIGKILL
    finally:
        if lock.in_transaction:
            lock.execute("ROLLBACK")
        lock.close()
        turns.close()

    code, _, err = await command(env, *delete_argv(ws_a))

    assert code == 0, err
    assert await records_of(store, ws_a.id) == {}
    assert_absent(config.sqlite_path, forms_of(seeded["people"], seeded["notes"]))
