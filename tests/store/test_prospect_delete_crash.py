"""A prospect's delete on MongoDB that stops half-way (the process dies after the tombstone is
written, before its lists are counted and its timeline deleted) is finished without the
client: the lists' counts heal on the next read, the event sweep records `prospect.deleted`
from the buried removal, and the tombstone sweep deletes the timeline. (On SQLite the delete is
one transaction: tests/handlers/test_prospect_changes.py.)"""

import datetime as dt

import pytest

from store.mongo.prospect_changes import PURGE, ProspectChanges
from tests.helpers import make_workspace

pytestmark = pytest.mark.mongodb


async def timeline(store, workspace_id: str, prospect_id: str) -> list[dict]:
    return [
        a async for batch in store.activities.timeline(workspace_id, prospect_id) for a in batch
    ]


class Killed(Exception):
    """Where the process died."""


async def test_a_delete_cut_short_after_the_tombstone_is_finished(store, auth, clock, monkeypatch):
    ws = await make_workspace(store, auth, "Crash")
    listing = await store.lists.create(ws.id, "Leads", ws.users[0]["id"])
    contacts = [{"email": "ada@x.io"}, {"email": "bob@x.io"}]
    upload = await store.prospects.add_to_list(ws.id, listing, contacts)
    ada = upload.results[0]["prospectId"]
    assert len(await timeline(store, ws.id, ada)) == 1  # its list_added

    async def die(*args, **kwargs):
        raise Killed

    with monkeypatch.context() as patched:
        patched.setattr(ProspectChanges, "_purge", die)
        with pytest.raises(Killed):
            await store.prospects.delete(ws.id, ada)

    # Gone from every read at once; the list's count heals on its next read.
    assert await store.prospects.lookup(ws.id, prospect_id=ada) == []
    assert (await store.lists.get(ws.id, listing["id"]))["prospectsCount"] == 1
    [doc] = [d for d in await store.documents("prospects") if d["_id"] == ada]
    assert doc[PURGE] == [listing["id"]] and "email" not in doc
    # The event sweep records the deletion from the buried removal.
    clock.advance(1)
    await store.events.recover(clock.now())
    deleted = [e for e in await store.documents("events") if e["type"] == "prospect.deleted"]
    assert [e["resourceId"] for e in deleted] == [ada]
    # The tombstone sweep finishes the rest: the timeline goes, the purge mark too.
    clock.advance(120)
    await store.sweep_tombstones(clock.now() - dt.timedelta(days=30))
    assert await timeline(store, ws.id, ada) == []
    [doc] = [d for d in await store.documents("prospects") if d["_id"] == ada]
    assert PURGE not in doc and doc["deletedAt"] is not None
    # Deleting again is 204's answer (deleted already), and records nothing twice.
    assert await store.prospects.delete(ws.id, ada) is False
    await store.events.recover(clock.now() + dt.timedelta(seconds=1))
    deleted = [e for e in await store.documents("events") if e["type"] == "prospect.deleted"]
    assert len(deleted) == 1
