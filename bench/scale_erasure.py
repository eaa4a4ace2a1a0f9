"""Erasure at size, rows of `python -m bench.scale` (see its docstring): L26 one erasure request
(POST /v1/erasures) of a prospect with 5,000 activities and 500 recorded calls, on a copy of the
small file, until it is `completed` (its prospect deleted, its calls and every event about them
rewritten, its 500 recordings deleted at the simulated provider, the log truncated); L27 GET
/v1/users meanwhile, against idle."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import time
from pathlib import Path

from bench.common import Row, verdict
from bench.scale_api import Api
from bench.scale_data import working_copy
from bench.scale_lifecycle import call, idle_reads, read_rows, users_meanwhile
from bench.scale_writes import remove_file

CALLS, NOTES = 500, 4500  # the calls' own timeline entries make 5,000 activities
LIMIT = 120.0  # seconds the bench waits for the erasure before it reports the row failed
ACCOUNT, TOKEN = "AC" + "be" * 16, "bench-erasure-provider-token"
EMAIL = "erasure.bench@bench.example"


async def seed(path: Path, marker: dict) -> tuple[str, str]:
    """The person on the copy (before its API opens it): a prospect, its 500 recorded calls
    (with their timeline entries and events) and 4,500 notes; an admin key. The prospect's id
    and the key."""
    from server.config import load_config
    from server.services import open_services
    from store.activities import activity_document
    from store.calls import call_document
    from store.prospects import seeded_document
    from telephony.simulated_provider import make_ref

    environ = {k: v for k, v in os.environ.items() if k != "MONGODB_URI"}
    environ["WSAPI_SQLITE_PATH"] = str(path)
    store, auth = await open_services(load_config(environ=environ))
    try:
        workspace = marker["workspaces"][0]["id"]
        user = read_rows(
            path,
            "SELECT _id FROM users WHERE workspaceId = ? AND deletedAt IS NULL LIMIT 1",
            (workspace,),
        )[0][0]
        contact = store.prospects.parse_contact(
            {"firstName": "Erasmus", "email": EMAIL, "phoneNumber": "+14155550909"}
        )
        doc = seeded_document(workspace, contact, user)
        await store.prospects.insert_documents(workspace, [doc])
        start = dt.datetime(2026, 1, 5, 9, 0)
        calls = [
            call_document(
                workspace,
                user_id=user,
                prospect_id=doc["_id"],
                direction="outbound",
                disposition="connected",
                from_number="+12125550142",
                to_number="+14155550909",
                started_at=start + dt.timedelta(minutes=n),
                answered_at=start + dt.timedelta(minutes=n),
                ended_at=start + dt.timedelta(minutes=n, seconds=40),
                notes="talked about the renewal",
                recording_ref=make_ref(f"bench erasure {n}"),
                recording_duration_seconds=40,
            )
            for n in range(CALLS)
        ]
        await store.calls.insert_documents(workspace, calls)
        notes = [
            activity_document(
                workspace,
                doc["_id"],
                "note",
                start + dt.timedelta(seconds=n),
                "note",
                {"text": "x"},
            )
            for n in range(NOTES)
        ]
        await store.activities.insert_documents(workspace, notes)
        _, key = await auth.create(workspace, "bench erasure", frozenset({"read", "admin"}))
        return doc["_id"], key
    finally:
        await auth.usage.stop()
        await store.close()


async def bench_erasure(args, small_path: Path, small_marker: dict, workdir: Path) -> list[Row]:
    from telephony.simulated_provider import start_provider

    copy = working_copy(small_path, "erasure.sqlite")
    provider = await start_provider(account_id=ACCOUNT, auth_token=TOKEN)
    api = None
    try:
        _, admin_key = await seed(copy, small_marker)
        api = Api(
            copy,
            small_marker,
            workdir / "api-erasure.log",
            extra_env={
                "WSAPI_PROVIDER_URL": provider.base_url,
                "WSAPI_PROVIDER_ACCOUNT_ID": ACCOUNT,
                "WSAPI_PROVIDER_AUTH_TOKEN": TOKEN,
            },
        )
        await api.ready()
        idle = await idle_reads(api, 200)
        admin = {"Authorization": f"Bearer {admin_key}"}
        reads: list[float] = []
        started = time.monotonic()
        answer = await api.get(
            "/v1/erasures", method="POST", body=json.dumps({"email": EMAIL}).encode(), extra=admin
        )
        if answer.status != 202:
            raise RuntimeError(f"POST /v1/erasures: {answer.status} {answer.body[:300]!r}")
        location = json.loads(answer.body)["erasure"]["id"]
        done, erasure, next_look = None, {}, started
        while done is None and time.monotonic() - started < LIMIT:
            reads.append((await call(api, "/v1/users")).total)
            if time.monotonic() >= next_look:
                next_look = time.monotonic() + 0.1
                shown = await api.get(f"/v1/erasures/{location}", extra=admin)
                erasure = json.loads(shown.body)["erasure"]
                if erasure["status"] in ("completed", "failed"):
                    done = time.monotonic() - started
            await asyncio.sleep(0.01)
        counts = erasure.get("counts", {})
        failed = done is None or erasure.get("status") != "completed"
        return [
            Row(
                "L26",
                f"POST /v1/erasures of a prospect with {counts.get('activities', 0):,} activities "
                f"and {counts.get('calls', 0):,} recorded calls, until completed",
                f"{done:.1f} s ({counts.get('recordings', 0):,} recordings deleted, "
                f"{counts.get('events', 0):,} events rewritten)"
                if done is not None
                else f"not done in {LIMIT:.0f} s",
                "< 10 s",
                f"ERRORS ({erasure.get('status')})" if failed else verdict(done < 10),
                data={"seconds": done, "counts": counts},
            ),
            users_meanwhile("L27", "that erasure", reads, idle),
        ]
    finally:
        if api is not None:
            api.stop()
        await provider.stop()
        remove_file(copy)
