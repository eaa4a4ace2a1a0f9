"""Seed data for the bench server: one workspace with its users, a target list for contact
uploads, and (when the service has them) calls, recordings, one long activity timeline and a
deep events feed. Seeding is history (a bulk load): it records no events of its own."""

from __future__ import annotations

import datetime as dt
import itertools
import json

NOW = dt.datetime(2026, 11, 21, 9, 30)


async def seed(
    store,
    auth,
    *,
    users: int = 25,
    calls: int = 0,
    recordings: dict[str, int] | None = None,
    activities: int = 0,
    events: int = 0,
) -> dict:
    """Create the bench workspace; returns the ids and the API key the benchmarks need."""
    async with store.bulk_load(defer_indexes=False):
        info = await _seed(store, auth, users, calls, recordings, activities)
    if events:
        info.update(await seed_events(store, info["workspaceId"], events))
    return info


async def _seed(store, auth, users, calls, recordings, activities) -> dict:
    workspace = await store.workspaces.create("Bench Workspace", created_at=NOW)
    wid = workspace["id"]
    people = []
    for i in range(users):
        people.append(
            await store.users.create(
                wid,
                f"agent{i}@bench.example",
                f"Agent{i}",
                f"Bench{i}",
                NOW - dt.timedelta(days=300 - i),
            )
        )
    owner = people[0]["id"]
    target = await store.lists.create(wid, "Bench uploads", owner)
    _, key = await auth.create(wid, "bench key")
    info = {
        "workspaceId": wid,
        "key": key,
        "ownerUserId": owner,
        "listId": target["id"],
        "userIds": [p["id"] for p in people],
        "calleeId": await _prospect(store, wid, "callee-live"),  # of P8b's calls
    }
    if calls or recordings:
        info.update(
            await seed_calls(store, wid, [p["id"] for p in people], calls, recordings or {})
        )
    if activities:
        info.update(await seed_activities(store, wid, owner, activities))
    return info


async def seed_calls(
    store, wid: str, user_ids: list[str], calls: int, recordings: dict[str, int]
) -> dict:
    """`calls` finished calls spread over the last days (P3), plus one call per recording
    reference (P1, P2), whose recording the provider serves with the registered size."""
    from store.calls import DISPOSITIONS, call_document

    prospects = [await _prospect(store, wid, f"callee{i}") for i in range(20)]
    documents = []
    for i in range(calls):
        started = NOW - dt.timedelta(minutes=7 * i + 1)
        answered = i % 3 != 1
        documents.append(
            call_document(
                wid,
                user_id=user_ids[i % len(user_ids)],
                prospect_id=prospects[i % 20],
                direction="outbound" if i % 4 else "inbound",
                disposition=DISPOSITIONS[i % 6] if not answered else "connected",
                from_number="+14155550100",
                to_number=f"+1212555{i % 10_000:04d}",
                started_at=started,
                answered_at=started + dt.timedelta(seconds=9) if answered else None,
                ended_at=started + dt.timedelta(seconds=9 + (i * 37) % 600),
                notes="Follow up next week" if i % 5 == 0 else None,
                recording_ref=f"RE{i:032x}" if answered else None,
                recording_duration_seconds=(i * 37) % 600 if answered else None,
            )
        )
    by_ref = {}
    for n, ref in enumerate(recordings):
        started = NOW - dt.timedelta(days=1, minutes=n)
        doc = call_document(
            wid,
            user_id=user_ids[0],
            prospect_id=prospects[0],
            direction="outbound",
            disposition="connected",
            from_number="+14155550100",
            to_number="+12125550199",
            started_at=started,
            answered_at=started + dt.timedelta(seconds=5),
            ended_at=started + dt.timedelta(seconds=3600),
            recording_ref=ref,
            recording_duration_seconds=3600,
        )
        documents.append(doc)
        by_ref[ref] = doc["_id"]
    await store.calls.insert_documents(wid, documents)
    return {"calls": calls, "recordingCalls": by_ref}


async def seed_activities(store, wid: str, owner: str, activities: int) -> dict:
    """One prospect with an `activities`-long timeline (P6) and one with a short one (warm-up)."""
    from store.activities import activity_document

    long_id = await _prospect(store, wid, "long-timeline")
    short_id = await _prospect(store, wid, "short-timeline")
    kinds = (
        ("note", "Left a note: asked for pricing"),
        ("email", "Sent the follow-up email"),
        ("status_change", "Status changed to interested"),
    )
    for prospect_id, count in ((short_id, 10), (long_id, activities)):
        batch = []
        for i in range(count):
            kind, summary = kinds[i % 3]
            batch.append(
                activity_document(
                    wid,
                    prospect_id,
                    kind,
                    NOW - dt.timedelta(minutes=i),
                    summary,
                    {"channel": "bench", "sequence": i},
                    user_id=owner,
                )
            )
            if len(batch) == 10_000:
                await store.activities.insert_documents(wid, batch)
                batch = []
        if batch:
            await store.activities.insert_documents(wid, batch)
    return {
        "activities": activities,
        "activitiesPath": f"/v1/prospect-activities?prospectId={long_id}",
        "smallActivitiesPath": f"/v1/prospect-activities?prospectId={short_id}",
    }


async def _prospect(store, wid: str, name: str) -> str:
    """A prospect created the way a contact upload creates one; returns its id."""
    from store.prospects import prospect_document

    contact = store.prospects.parse_contact(
        {"firstName": name, "email": f"{name}@prospects.bench.example"}
    )
    doc = prospect_document(wid, contact, "e:" + contact.email, None, NOW)
    await store.prospects.insert_documents(wid, [doc])
    return doc["_id"]


async def seed_events(store, wid: str, count: int) -> dict:
    """`count` events written straight into the SQLite store's events table (P9: a feed a
    million events deep, built in seconds rather than by a million writes), one every 0.8 s
    up to a minute ago, of every type in turn, each carrying a call's record. Their ids and
    instants are made like recorded ones (store.events.EventClock's layout)."""
    from store.events import TYPES, id_at
    from store.sqlite.schema import ms

    now = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    first = now - dt.timedelta(minutes=1) - dt.timedelta(milliseconds=800 * count)
    data = json.dumps(
        {
            "id": "0d8f1c1e-5b7a-4c7e-9a43-3c3f7f0f2b11",
            "direction": "outbound",
            "disposition": "connected",
            "fromNumber": "+14155550100",
            "toNumber": "+12125550199",
            "notes": "Follow up next week",
            "createdAt": "2026-11-21T09:30:00.000Z",
            "updatedAt": "2026-11-21T09:34:00.000Z",
        },
        separators=(",", ":"),
    )
    kinds = itertools.cycle(TYPES)

    def rows(start: int, stop: int):
        for i in range(start, stop):
            at = first + dt.timedelta(milliseconds=800 * i)
            event_id = id_at(at)
            yield (event_id, wid, next(kinds), event_id, ms(at), data)

    def write(conn, start: int, stop: int) -> None:
        conn.executemany(
            'INSERT INTO events ("_id", workspaceId, type, resourceId, occurredAt, data) '
            "VALUES (?, ?, ?, ?, ?, ?)",
            rows(start, stop),
        )

    for start in range(0, count, 100_000):
        await store.engine.write(write, start, min(count, start + 100_000), timeout=600)
    deep = first + dt.timedelta(milliseconds=800 * (count - 200))  # the page before the last
    return {
        "events": count,
        "eventsDeepSince": deep.isoformat(timespec="milliseconds") + "Z",
    }
