"""The users' writes record their events in the same unit as the change, on both backends:
`user.created` and `user.updated` carry the user as GET /users/{id} shows it, `user.deleted`
`{"id", "deletedAt"}`; a write that changes nothing records nothing. On MongoDB a deletion whose
writer died after the change is recorded by the event sweep, and one that never landed is not
(the tombstone's marker is pulled, the user stays active)."""

from __future__ import annotations

import datetime as dt

import orjson
import pytest

from store.clock import utcnow
from store.events import EPOCH, Removed, encode
from store.paging import Position
from store.records import admin_user_record, user_document
from store.users import InvalidEmail, UserExists

WS = "ws-users"
LATER = dt.timedelta(hours=1)


async def feed(store) -> list[dict]:
    page = await store.events.page(WS, Position(EPOCH, ""), utcnow() + LATER, 100)
    return [orjson.loads(event.text) for event in page.events]


async def test_each_write_records_its_event_and_a_no_op_none(store):
    user = await store.users.create(WS, " Ann@Acme.example ", "Ann", "Lee")
    assert user["email"] == "Ann@Acme.example" and user["deletedAt"] is None
    changed, did = await store.users.update(WS, user["id"], {"lastName": "Lee-Ray"})
    assert did and changed["lastName"] == "Lee-Ray" and changed["updatedAt"] >= user["updatedAt"]
    same, did = await store.users.update(
        WS, user["id"], {"lastName": " Lee-Ray", "firstName": "Ann"}
    )
    assert not did and same == changed
    assert await store.users.delete(WS, user["id"])
    assert not await store.users.delete(WS, user["id"])  # deleted already: nothing recorded
    gone = await store.users.get(WS, user["id"])
    assert gone is not None and gone["deletedAt"] is not None
    assert await store.users.update(WS, user["id"], {"lastName": "X"}) is None
    events = await feed(store)
    assert [e["type"] for e in events] == ["user.created", "user.updated", "user.deleted"]
    assert events[0]["data"]["id"] == user["id"] and events[0]["data"]["lastName"] == "Lee"
    assert events[1]["data"]["lastName"] == "Lee-Ray"
    assert events[2]["data"] == {
        "id": user["id"],
        "deletedAt": orjson.loads(encode(gone))["deletedAt"],
    }


async def test_emails_are_checked_and_compared_case_insensitively(store):
    first = await store.users.create(WS, "ann@acme.example", "Ann", "Lee")
    other = await store.users.create(WS, "bo@acme.example", "Bo", "Day")
    await store.users.create("ws-else", "ANN@acme.example", "Ann", "Else")  # another workspace
    with pytest.raises(UserExists):
        await store.users.create(WS, " ANN@Acme.Example", "A", "L")
    with pytest.raises(UserExists):
        await store.users.update(WS, other["id"], {"email": "Ann@acme.example"})
    with pytest.raises(InvalidEmail):
        await store.users.create(WS, "ann at acme", "A", "L")
    own, did = await store.users.update(WS, first["id"], {"email": "ANN@acme.example"})
    assert did and own["email"] == "ANN@acme.example"
    assert await store.users.delete(WS, first["id"])
    again = await store.users.create(WS, "ann@acme.example", "Ann", "Again")  # free again
    assert again["id"] != first["id"]
    assert [e["type"] for e in await feed(store)].count("user.created") == 3


async def test_seeded_users_are_written_as_given_with_their_events(store):
    """Users.insert_documents (seeding): the documents as built, active, each with its
    `user.created`; no email check (the seed is trusted); refused whole when a document is
    another workspace's or deleted."""
    at = utcnow().replace(microsecond=0)
    documents = [
        user_document(WS, f"seed{i}@acme.example", f"Seed{i}", "One", at + i * LATER)
        for i in range(3)
    ]
    await store.users.insert_documents(WS, documents)
    users = await store.users.list_active(WS)
    assert [user["id"] for user in users] == [doc["_id"] for doc in documents]
    assert await store.users.get(WS, documents[1]["_id"]) == admin_user_record(documents[1])
    events = await feed(store)
    assert [e["type"] for e in events] == ["user.created"] * 3
    # One write: its events share an instant, in no order of the documents'.
    assert sorted(e["data"]["email"] for e in events) == [doc["email"] for doc in documents]
    other = user_document("ws-else", "else@acme.example", "Else", "One")
    gone = {**user_document(WS, "gone@acme.example", "Gone", "One"), "deletedAt": at}
    for refused in (other, gone):
        with pytest.raises(ValueError):
            await store.users.insert_documents(
                WS, [user_document(WS, "x@acme.example", "X", "Y"), refused]
            )
    assert len(await store.users.list_active(WS)) == 3  # nothing of a refused seed written
    assert len(await feed(store)) == 3


@pytest.mark.mongodb  # on SQLite the change and its event are one transaction
async def test_a_deletion_whose_writer_stopped_is_recorded_by_the_sweep(store):
    """MongoDB: the tombstone and the change landed, the events did not; the feed waits and
    the sweep records `user.deleted`. A tombstone whose change never landed records nothing."""
    kept = await store.users.create(WS, "kept@acme.example", "Kept", "One")
    dying = await store.users.create(WS, "dying@acme.example", "Dying", "One")
    writer = store.event_writer
    at = utcnow()
    await writer.bury(WS, writer.begin(), [Removed("user", kept["id"], at)])  # never changed
    await writer.bury(WS, writer.begin(), [Removed("user", dying["id"], at)])
    await store.db["users"].update_one(
        {"_id": dying["id"]}, {"$set": {"deletedAt": at, "updatedAt": at}}
    )
    assert [e["type"] for e in await feed(store)] == ["user.created", "user.created"]
    assert await store.events.recover(utcnow() + LATER) == 1
    assert await store.events.recover(utcnow() + LATER) == 0
    events = await feed(store)
    assert [e["type"] for e in events] == ["user.created", "user.created", "user.deleted"]
    assert events[2]["data"]["id"] == dying["id"]
    assert await store.users.is_active(WS, kept["id"])
