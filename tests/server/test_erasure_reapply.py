"""`workspace-api erasures reapply` after a restore, on the embedded store, with the real
commands: a backup taken before an erasure brings the person back when it is restored (the
values are in the file again); the restore keeps the erasure requests of the file it replaced,
and the reapply erases the person again: the same 0-byte proof as the erasure itself."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import subprocess
import sys

import pytest

from server.config import load_config
from server.erasure_work import ErasureWork
from server.services import open_services
from store.erasures import identifier_hashes
from store.prospects import seeded_document
from telephony.simulated_provider import make_ref, start_provider
from telephony.upstream import UpstreamClient
from tests.erased_bytes import assert_absent, assert_present, stored_forms
from tests.helpers import TEST_SECRET, make_workspace, test_environ

ACCOUNT_ID = "AC" + "a7" * 16
AUTH_TOKEN = "reapply-provider-token-3c"
EMAIL, PHONE = "Philippa.Quenneville@Restored.example", "+14155550166"
FIRST, LAST, NOTES = "Philippa", "Quenneville", "asked about the zeppelin tour"
REF = make_ref("philippa's call")


async def cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    """The command, run in a thread: the simulated provider answers on this event loop."""
    return await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "server.cli", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.sqlite
async def test_backup_erasure_restore_reapply_leaves_no_byte_of_the_person(tmp_path):
    provider = await start_provider(account_id=ACCOUNT_ID, auth_token=AUTH_TOKEN)
    database = tmp_path / "store.sqlite3"
    env = {
        **test_environ(),
        "MONGODB_URI": "",
        "WSAPI_SQLITE_PATH": str(database),
        "WSAPI_SECRET": TEST_SECRET,
        "WSAPI_PROVIDER_URL": provider.base_url,
        "WSAPI_PROVIDER_ACCOUNT_ID": ACCOUNT_ID,
        "WSAPI_PROVIDER_AUTH_TOKEN": AUTH_TOKEN,
    }
    config = load_config(environ=env)
    forms = stored_forms(emails=[EMAIL], phones=[PHONE], names=[FIRST, LAST, NOTES])
    store, auth = await open_services(config)
    try:
        ws = await make_workspace(store, auth, "Reapply")
        contact = store.prospects.parse_contact(
            {"firstName": FIRST, "lastName": LAST, "email": EMAIL, "phoneNumber": PHONE}
        )
        doc = seeded_document(ws.id, contact, ws.users[0]["id"])
        await store.prospects.insert_documents(ws.id, [doc])
        started = dt.datetime(2026, 11, 2, 9, 30, tzinfo=dt.UTC)
        await store.calls.create(
            ws.id,
            user_id=ws.users[0]["id"],
            prospect_id=doc["_id"],
            direction="outbound",
            disposition="connected",
            from_number="+12125550142",
            to_number=PHONE,
            started_at=started,
            answered_at=started,
            ended_at=started + dt.timedelta(minutes=2),
            notes=NOTES,
            recording_ref=REF,
            recording_duration_seconds=120,
        )
        backup = tmp_path / "before.sqlite3"
        taken = await cli(env, "backup", "--to", str(backup), "--json")
        assert taken.returncode == 0, taken.stderr

        hashes = identifier_hashes(
            auth.subkey("erasures"), email=EMAIL.lower(), phone=PHONE, prospect_id=None
        )
        erasure = await store.erasures.create(ws.id, hashes, [doc["_id"]], store.clock.now())
        upstream = UpstreamClient.from_config(config)
        assert await ErasureWork(store, upstream).drain() == 1
        assert (await store.erasures.get(ws.id, erasure["id"]))["status"] == "completed"
        assert_absent(database, forms)
        assert provider.stats.deleted == [REF]
    finally:
        await auth.usage.stop()
        await store.close()

    restored = await cli(env, "restore", "--from", str(backup), "--json")
    assert restored.returncode == 0, restored.stderr
    assert json.loads(restored.stdout)["erasuresKept"] == 1
    assert_present(database, forms)  # the backup brought the person back

    reapplied = await cli(env, "erasures", "reapply", "--json")
    assert reapplied.returncode == 0, reapplied.stderr
    assert json.loads(reapplied.stdout) == {"reopened": 1, "ran": 1, "stillOpen": 0}
    assert_absent(database, forms)

    store, auth = await open_services(config)
    try:
        again = await store.erasures.get(ws.id, erasure["id"])
        assert again["status"] == "completed" and again["counts"]["prospects"] == 1
        assert await store.prospects.lookup(ws.id, prospect_id=doc["_id"]) == []
        second = await cli(env, "erasures", "reapply", "--json")  # nothing came back: nothing to do
        assert json.loads(second.stdout)["reopened"] == 0
    finally:
        await auth.usage.stop()
        await store.close()
        await provider.stop()


@pytest.mark.server_db
async def test_reapply_erases_again_what_a_mongodb_restore_brought_back(store, ws_a):
    """On MongoDB a restore is `mongorestore` without the `erasures` collection: the restored
    prospect and call (put back here as they were stored before the erasure) are found by the
    reopen and erased again by the worker; a second reopen finds nothing."""
    contact = store.prospects.parse_contact({"firstName": FIRST, "email": EMAIL})
    doc = seeded_document(ws_a.id, contact, ws_a.users[0]["id"])
    await store.prospects.insert_documents(ws_a.id, [doc])
    started = dt.datetime(2026, 11, 2, 9, 30, tzinfo=dt.UTC)
    made = await store.calls.create(
        ws_a.id,
        user_id=ws_a.users[0]["id"],
        prospect_id=doc["_id"],
        direction="outbound",
        disposition="connected",
        from_number="+12125550142",
        to_number=PHONE,
        started_at=started,
        answered_at=started,
        ended_at=started + dt.timedelta(minutes=2),
        notes=NOTES,
    )
    before = {
        "prospects": await store.db["prospects"].find_one({"_id": doc["_id"]}),
        "calls": await store.db["calls"].find_one({"_id": made["id"]}),
    }
    erasure = await store.erasures.create(ws_a.id, {}, [doc["_id"]], store.clock.now())
    work = ErasureWork(store, None)
    assert await work.drain() == 1
    assert await store.erasures.reopen_undone(store.clock.now()) == 0  # nothing came back
    for name, saved in before.items():  # the restore
        await store.db[name].replace_one({"_id": saved["_id"]}, saved)
    assert (await store.calls.get(ws_a.id, made["id"]))["notes"] == NOTES
    assert await store.erasures.reopen_undone(store.clock.now()) == 1
    assert await work.drain() == 1
    again = await store.erasures.get(ws_a.id, erasure["id"])
    assert again["status"] == "completed" and again["counts"]["calls"] == 1
    assert await store.prospects.lookup(ws_a.id, prospect_id=doc["_id"]) == []
    call = await store.calls.get(ws_a.id, made["id"])
    assert call["notes"] is None and call["toNumber"] is None and "erasedAt" in call
    assert await store.erasures.reopen_undone(store.clock.now()) == 0
