"""Writes made idempotent on an Idempotency-Key (store/idempotency.py), on every backend: the
response is stored by the write itself, what the write creates takes ids derived from the
key's seed, a retry of the same request finds what an earlier attempt wrote, and claims are
taken over (keeping their seed) when their lock lapses or their process is gone."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from handlers.idempotency import LOCK, TTL
from store import idempotency
from store.clock import utcnow
from store.idempotency import IdempotentWrite, Replayed, StoredResponse


def once_for(workspace_id: str, key: str, seed: str, fingerprint: str = "print") -> IdempotentWrite:
    def render(result) -> StoredResponse:
        members = getattr(result, "members", None)
        value = {"members": members} if members is not None else {"id": result["id"]}
        return StoredResponse(201, json.dumps(value), "application/json")

    return IdempotentWrite(workspace_id, key, fingerprint, seed, utcnow() + TTL, render)


async def claim(store, workspace_id: str, key: str, now: dt.datetime | None = None):
    state = await store.idempotency.begin(workspace_id, key, "print", now or utcnow(), LOCK, TTL)
    assert state.claimed
    return state


async def lists_named(store, workspace_id: str, name: str) -> list[dict]:
    return [
        doc
        for doc in await store.documents("lists")
        if doc["workspaceId"] == workspace_id and doc["name"] == name
    ]


async def test_a_write_stores_its_response_and_derives_its_id_from_the_key(store, ws_a):
    state = await claim(store, ws_a.id, "k-1")
    once = once_for(ws_a.id, "k-1", state.seed)
    owner = ws_a.users[0]["id"]
    created = await store.lists.create(ws_a.id, "Derived", owner, once=once)
    assert once.stored and created["id"] == once.record_id("list")
    again = await store.idempotency.begin(ws_a.id, "k-1", "print", utcnow(), LOCK, TTL)
    assert not again.claimed and again.response == once.response
    assert json.loads(again.response.body) == {"id": created["id"]}


async def test_a_retry_after_a_crash_finds_what_the_first_attempt_wrote(store, ws_a):
    """The first attempt wrote and stored its response; a second attempt of the same request
    (its claim taken over, the same seed) writes nothing: on SQLite it finds the stored
    response (Replayed), on MongoDB the list under the derived id, answered as before."""
    owner = ws_a.users[0]["id"]
    state = await claim(store, ws_a.id, "k-2")
    first = await store.lists.create(
        ws_a.id, "Once", owner, once=once_for(ws_a.id, "k-2", state.seed)
    )
    retry = once_for(ws_a.id, "k-2", state.seed)
    try:
        second = await store.lists.create(ws_a.id, "Once", owner, once=retry)
    except Replayed as exc:
        assert store.backend == "sqlite"
        assert json.loads(exc.response.body) == {"id": first["id"]}
    else:
        assert store.backend == "mongodb" and second == first
    assert len(await lists_named(store, ws_a.id, "Once")) == 1


async def test_an_upload_retried_with_the_seed_says_created_as_the_first_attempt_did(store, ws_a):
    """Prospects created under an Idempotency-Key have derived ids: an attempt of the same
    request after a crash (the same seed; another key here, so that SQLite's stored response
    does not stop it first) reports them as created, with the same reasons."""
    owner = ws_a.users[0]["id"]
    listing = await store.lists.create(ws_a.id, "Upload", owner)
    await store.prospects.add_to_list(
        ws_a.id, listing, [{"email": "amy@example.com", "linkedinUrl": "linkedin.com/in/amy-1"}]
    )
    contacts = [
        {"email": "new@example.com", "firstName": "New"},
        {"email": "amy@example.com", "linkedinUrl": "linkedin.com/in/amy-2"},
        {"email": "new@example.com"},
    ]
    seed = idempotency.new_seed()
    first = await store.prospects.add_to_list(
        ws_a.id, listing, contacts, once=once_for(ws_a.id, "u-1", seed)
    )
    again = await store.prospects.add_to_list(
        ws_a.id, listing, contacts, once=once_for(ws_a.id, "u-2", seed)
    )
    assert [r["outcome"] for r in first.results] == ["created", "created", "reused"]
    assert first.results[1]["reason"] == "linkedin_conflict"
    assert again.results == first.results and again.members == first.members == 3
    other = await store.prospects.add_to_list(ws_a.id, listing, contacts)  # no key: reused
    assert [r["outcome"] for r in other.results] == ["reused"] * 3


async def test_a_claim_is_taken_over_with_its_seed_when_its_lock_lapses(store, ws_a):
    then = utcnow() - 2 * LOCK
    state = await claim(store, ws_a.id, "k-3", then)
    busy = await store.idempotency.begin(ws_a.id, "k-3", "print", then + LOCK / 2, LOCK, TTL)
    assert not busy.claimed and busy.response is None  # in progress: 409
    taken = await claim(store, ws_a.id, "k-3")
    assert taken.seed == state.seed
    other = await store.idempotency.begin(ws_a.id, "k-3", "other body", utcnow(), LOCK, TTL)
    assert not other.claimed and other.fingerprint == "print"  # another request: 422


async def test_a_claim_of_a_process_that_is_gone_is_taken_over_at_once(store, ws_a, monkeypatch):
    dead = idempotency.this_process().rsplit("|", 2)[0] + "|4194305|1"  # above pid_max
    monkeypatch.setattr(idempotency, "_holder", (idempotency.os.getpid(), dead))
    state = await claim(store, ws_a.id, "k-4")
    monkeypatch.undo()
    assert idempotency.this_process() != dead and not idempotency.holder_alive(dead)
    taken = await claim(store, ws_a.id, "k-4")  # its lock has not lapsed
    assert taken.seed == state.seed
    busy = await store.idempotency.begin(ws_a.id, "k-4", "print", utcnow(), LOCK, TTL)
    assert not busy.claimed  # held by this live process now


async def test_an_expired_record_is_claimed_anew_with_a_new_seed(store, ws_a):
    old = await claim(store, ws_a.id, "k-5", utcnow() - 2 * TTL)
    fresh = await claim(store, ws_a.id, "k-5")
    assert fresh.seed != old.seed


@pytest.mark.parametrize("holder", ["", "elsewhere|boot|12|34", "garbage"])
def test_holders_it_cannot_judge_count_as_alive(holder):
    assert idempotency.holder_alive(holder)
    assert idempotency.holder_alive(idempotency.this_process())
