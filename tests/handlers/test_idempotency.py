"""Idempotency-Key on POST /v1/lists and POST /v1/lists/{listId}/contacts: replay, conflicts,
in-flight duplicates, per-workspace keys, expiry of 5xx claims, and header validation."""

import asyncio

import pytest


@pytest.fixture
def owner(ws_a):
    return ws_a.users[0]["id"]


async def create(api, body, key=None, **kwargs):
    headers = {"Idempotency-Key": key} if key is not None else {}
    return await api.post("/v1/lists", body, headers=headers, **kwargs)


async def lists_named(api, name):
    return [
        x for x in (await api.get("/v1/lists?pageSize=100")).json()["lists"] if x["name"] == name
    ]


async def test_a_retry_replays_the_first_response_and_writes_nothing(api, owner):
    first = await create(api, {"name": "Once", "ownerUserId": owner}, "key-1")
    assert first.code == 201 and "Idempotent-Replayed" not in first.headers
    again = await create(api, {"ownerUserId": owner, "name": "Once"}, "key-1")  # same body
    assert again.code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.body == first.body and again.headers["Location"] == first.headers["Location"]
    assert len(await lists_named(api, "Once")) == 1


async def test_contact_uploads_replay_too(api, store, ws_a, owner):
    listing = (await create(api, {"name": "Up", "ownerUserId": owner})).json()["list"]
    path = f"/v1/lists/{listing['id']}/contacts"
    body = {"contacts": [{"email": "idem@example.com"}]}
    first = await api.post(path, body, headers={"Idempotency-Key": "u-1"})
    second = await api.post(path, body, headers={"Idempotency-Key": "u-1"})
    assert first.code == second.code == 200 and second.body == first.body
    assert second.headers["Idempotent-Replayed"] == "true"
    assert first.json()["results"][0]["outcome"] == "created"  # the replay says so too
    assert second.json()["results"][0]["outcome"] == "created"


async def test_the_same_key_with_another_body_or_path_is_422(api, owner):
    await create(api, {"name": "A", "ownerUserId": owner}, "key-2")
    other = await create(api, {"name": "B", "ownerUserId": owner}, "key-2")
    assert other.code == 422 and other.json()["code"] == "idempotency_key_reused"
    listing = (await create(api, {"name": "C", "ownerUserId": owner})).json()["list"]
    moved = await api.post(
        f"/v1/lists/{listing['id']}/contacts",
        {"contacts": [{"email": "x@example.com"}]},
        headers={"Idempotency-Key": "key-2"},
    )
    assert moved.code == 422 and moved.json()["code"] == "idempotency_key_reused"
    assert await lists_named(api, "B") == []


async def test_client_errors_are_stored_and_replayed(api, ws_a):
    deleted = ws_a.deleted_user["id"]
    first = await create(api, {"name": "Bad owner", "ownerUserId": deleted}, "key-3")
    again = await create(api, {"name": "Bad owner", "ownerUserId": deleted}, "key-3")
    assert first.code == again.code == 422 and again.headers["Idempotent-Replayed"] == "true"
    replayed, original = again.json(), first.json()
    assert replayed.pop("requestId") == again.headers["X-Request-Id"]  # names this request
    original.pop("requestId")
    assert replayed == original


async def test_two_concurrent_requests_with_one_key_create_one_list(api, owner, store, monkeypatch):
    slow = store.lists.create

    async def create_slowly(*args, **kwargs):
        await asyncio.sleep(0.3)
        return await slow(*args, **kwargs)

    monkeypatch.setattr(store.lists, "create", create_slowly)
    body = {"name": "Race", "ownerUserId": owner}
    responses = await asyncio.gather(create(api, body, "key-4"), create(api, body, "key-4"))
    assert sorted(r.code for r in responses) == [201, 409]
    busy = next(r for r in responses if r.code == 409)
    assert busy.json()["code"] == "idempotency_key_in_use" and busy.headers["Retry-After"]
    assert len(await lists_named(api, "Race")) == 1
    replay = await create(api, body, "key-4")
    assert replay.code == 201 and replay.headers["Idempotent-Replayed"] == "true"


async def test_keys_belong_to_the_workspace(api, api_b, owner, ws_b):
    await create(api, {"name": "Mine", "ownerUserId": owner}, "shared-key")
    theirs = await create(
        api_b, {"name": "Theirs", "ownerUserId": ws_b.users[0]["id"]}, "shared-key"
    )
    assert theirs.code == 201 and "Idempotent-Replayed" not in theirs.headers


async def test_a_5xx_leaves_the_key_free_for_the_retry(api, owner, store, monkeypatch):
    from store.errors import StoreUnavailable

    real = store.lists.create

    async def down(*args, **kwargs):
        raise StoreUnavailable("database away")

    monkeypatch.setattr(store.lists, "create", down)
    failed = await create(api, {"name": "Later", "ownerUserId": owner}, "key-5")
    assert failed.code == 503
    monkeypatch.setattr(store.lists, "create", real)
    retry = await create(api, {"name": "Later", "ownerUserId": owner}, "key-5")
    assert retry.code == 201 and "Idempotent-Replayed" not in retry.headers


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9", "tab\there"])
async def test_malformed_keys_are_400(api, owner, key):
    response = await api.post(
        "/v1/lists", {"name": "K", "ownerUserId": owner}, headers={"Idempotency-Key": key}
    )
    assert response.code == 400, key
    assert response.json()["errors"][0]["pointer"] == "#/headers/Idempotency-Key"
    assert await lists_named(api, "K") == []


async def test_replays_count_against_the_rate_limit(api, owner):
    body = {"name": "Counted", "ownerUserId": owner}
    first = await create(api, body, "key-6")
    again = await create(api, body, "key-6")
    left_before = int(first.headers["RateLimit"].split("r=")[1].split(";")[0])
    left_after = int(again.headers["RateLimit"].split("r=")[1].split(";")[0])
    assert left_after == left_before - 1


@pytest.mark.parametrize("swept", [False, True])
async def test_an_expired_key_runs_anew(api, owner, store, ws_a, swept):
    """A key whose record is past its 24 hours runs the request again, whether the record is
    still there (it is taken over) or the expiry sweep has deleted it; then it replays anew."""
    from handlers.idempotency import JSON_TYPE, LOCK, TTL, fingerprint
    from store.clock import utcnow

    body = {"name": "Anew", "ownerUserId": owner}
    # The record the same request left two days ago, with the response it got then.
    then = utcnow() - 2 * TTL
    mark = fingerprint("POST", "/v1/lists", body)
    assert (await store.idempotency.begin(ws_a.id, "key-7", mark, then, LOCK, TTL)).claimed
    stale = '{"list": {"id": "stale"}}'
    await store.idempotency.complete(ws_a.id, "key-7", 201, stale, JSON_TYPE, "/v1/lists/stale")
    if swept:
        assert await store.sweep_expired(utcnow()) == 1
        assert await store.documents("idempotency") == []
    fresh = await create(api, body, "key-7")
    assert fresh.code == 201 and "Idempotent-Replayed" not in fresh.headers
    assert fresh.json()["list"]["id"] != "stale"
    again = await create(api, body, "key-7")
    assert again.headers["Idempotent-Replayed"] == "true" and again.body == fresh.body
    assert len(await lists_named(api, "Anew")) == 1
