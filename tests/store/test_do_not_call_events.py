"""The do-not-call list's events on both backends: `do_not_call.added` and
`do_not_call.removed` carry the entry, and on MongoDB a removal whose writer stopped after the
delete is recorded by the event sweep from the tombstone, with the entry as its data, and the
prospects it changed with it."""

from __future__ import annotations

import datetime as dt

import orjson
import pytest

from store.clock import utcnow
from store.events import EPOCH
from store.paging import Position

WS = "ws-dnc"


async def feed(store) -> list[dict]:
    page = await store.events.page(WS, Position(EPOCH, ""), utcnow() + dt.timedelta(hours=1), 100)
    return [orjson.loads(event.text) for event in page.events]


async def test_a_removal_whose_writer_stopped_is_recorded_by_the_sweep(store, monkeypatch):
    prospect = await store.prospects.create(WS, {"phoneNumber": "+14155550101"})
    added = await store.do_not_call.add(WS, [{"phoneNumber": "4155550101"}], "CRM")
    entry = added[0]["entry"]
    if store.backend == "mongodb":

        async def stopped(*args, **kwargs):
            raise RuntimeError("the writer stopped")

        monkeypatch.setattr(store.event_writer, "publish", stopped)
        with pytest.raises(RuntimeError):
            await store.do_not_call.remove(WS, entry["id"])
        monkeypatch.undo()
        assert [e["type"] for e in await feed(store)][-1] == "prospect.updated"  # waits
        assert await store.events.recover(utcnow() + dt.timedelta(hours=1)) == 2
        assert await store.events.recover(utcnow() + dt.timedelta(hours=1)) == 0
    else:  # one transaction: nothing to recover
        assert await store.do_not_call.remove(WS, entry["id"])
        assert await store.events.recover(utcnow() + dt.timedelta(hours=1)) == 0
    events = await feed(store)
    kinds = [(e["type"], e["data"]["id"]) for e in events]
    assert kinds[:3] == [
        ("prospect.created", prospect["id"]),
        ("do_not_call.added", entry["id"]),
        ("prospect.updated", prospect["id"]),
    ]
    assert sorted(kinds[3:]) == [
        ("do_not_call.removed", entry["id"]),
        ("prospect.updated", prospect["id"]),
    ]
    removal = next(e for e in events if e["type"] == "do_not_call.removed")
    stamp = entry["createdAt"].isoformat(timespec="milliseconds") + "Z"
    assert removal["data"] == {**entry, "createdAt": stamp}
    last = [e for e in events if e["type"] == "prospect.updated"][-1]["data"]
    assert (last["doNotCall"], last["doNotCallReason"]) == (False, None)
    assert await store.do_not_call.remove(WS, entry["id"]) is False
