"""Authentication: only a valid, unrevoked key in `Authorization: Bearer` gets in."""

import datetime as dt

import jwt
import pytest

from tests.helpers import TEST_SECRET


def forged(claims: dict, secret: str = TEST_SECRET) -> str:
    return jwt.encode(claims, secret, algorithm="HS256")


BAD_HEADERS = {
    "missing": None,
    "empty": "",
    "basic scheme": "Basic dXNlcjpwYXNz",
    "bearer without token": "Bearer",
    "garbage token": "Bearer not-a-key",
    "token with spaces": "Bearer abc def",
    "wrong secret": "Bearer " + forged({"kid": "k", "wid": "w", "iat": 1}, "other-secret" * 4),
    "missing claims": "Bearer " + forged({"kid": "k"}),
    "unknown key id": "Bearer "
    + forged(
        {
            "kid": "00000000-0000-4000-8000-000000000000",
            "wid": "00000000-0000-4000-8000-000000000001",
            "iat": 1,
        }
    ),
    "none algorithm": "Bearer "
    + jwt.encode({"kid": "k", "wid": "w", "iat": 1}, None, algorithm="none"),
}


@pytest.mark.parametrize("header", BAD_HEADERS.values(), ids=BAD_HEADERS.keys())
@pytest.mark.parametrize("path", ["/v1/users", "/v1/lists"])
async def test_bad_credentials_are_401_with_challenge(anon, header, path):
    headers = {} if header is None else {"Authorization": header}
    response = await anon.get(path, headers=headers)
    assert response.code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["code"] == "unauthorized"


async def test_valid_key_is_accepted_case_insensitive_scheme(anon, ws_a):
    response = await anon.get("/v1/users", headers={"Authorization": f"bearer {ws_a.key}"})
    assert response.code == 200


@pytest.mark.parametrize("param", ["api_key", "access_token", "key", "token"])
async def test_key_in_query_string_is_not_accepted(anon, ws_a, param):
    response = await anon.get(f"/v1/users?{param}={ws_a.key}")
    assert response.code == 401


async def test_key_for_a_deleted_workspace_id_claim_cannot_cross_workspaces(anon, ws_a, ws_b):
    # A correctly signed token whose key id belongs to A but claims B's workspace is refused.
    token = forged({"kid": ws_a.key_id, "wid": ws_b.id, "iat": 1})
    response = await anon.get("/v1/users", headers={"Authorization": f"Bearer {token}"})
    assert response.code == 401


async def test_revoked_key_is_refused_within_cache_period(api, store, clock, config, ws_a):
    assert (await api.get("/v1/users")).code == 200  # now cached as active
    await store.keys.revoke(ws_a.key_id)
    clock.advance(config.key_cache_seconds + 0.001)
    assert config.key_cache_seconds <= 5
    response = await api.get("/v1/users")
    assert response.code == 401


async def test_revoked_key_with_cold_cache_is_refused_at_once(api, store, ws_a):
    await store.keys.revoke(ws_a.key_id)
    assert (await api.get("/v1/users")).code == 401


async def test_verification_costs_one_lookup_per_cache_period(api, store, clock, monkeypatch):
    calls = []
    original = store.keys.find_active

    async def counting(*args):
        calls.append(args)
        return await original(*args)

    monkeypatch.setattr(store.keys, "find_active", counting)
    for _ in range(5):
        assert (await api.get("/v1/users")).code == 200
    assert len(calls) == 1
    clock.advance(10)
    assert (await api.get("/v1/users")).code == 200
    assert len(calls) == 2


async def test_request_id_is_echoed_when_sane_and_generated_otherwise(api):
    response = await api.get("/v1/users", headers={"X-Request-Id": "abc-123"})
    assert response.headers["X-Request-Id"] == "abc-123"
    response = await api.get("/v1/users", headers={"X-Request-Id": "bad id\twith junk"})
    assert response.headers["X-Request-Id"] != "bad id\twith junk"
    assert len(response.headers["X-Request-Id"]) == 32


async def test_problem_carries_the_request_id(anon):
    response = await anon.get("/v1/users", headers={"X-Request-Id": "trace-1"})
    assert response.json()["requestId"] == "trace-1"


async def test_unknown_path_is_json_404(api, anon):
    for client in (api, anon):
        response = await client.get("/v1/nope")
        assert response.code == 404
        assert response.json()["code"] == "not_found"


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
async def test_other_methods_are_405_with_allow(api, method):
    response = await api.fetch("/v1/lists", method, body=b"{}" if method != "DELETE" else None)
    assert response.code == 405
    assert response.headers["Allow"] == "GET, HEAD, POST"
    response = await api.fetch("/v1/prospects", method, body=b"{}" if method != "DELETE" else None)
    assert response.headers["Allow"] == "GET, HEAD"


async def test_an_expired_key_is_401_and_says_it_expired(anon, auth, clock, ws_a):
    """Expiry is measured on the injected clock: no sleeping."""
    _, key = await auth.create(ws_a.id, "for a week", expires_in=dt.timedelta(days=7))
    headers = {"Authorization": f"Bearer {key}"}
    assert (await anon.get("/v1/users", headers=headers)).code == 200
    clock.advance(7 * 86_400 - 1)
    assert (await anon.get("/v1/users", headers=headers)).code == 200
    clock.advance(1)
    response = await anon.get("/v1/users", headers=headers)
    assert response.code == 401
    problem = response.json()
    assert problem["code"] == "unauthorized"
    assert "expired" in problem["detail"]
    assert ws_a.key_id not in problem["detail"] and "test key" not in problem["detail"]
    assert response.headers["WWW-Authenticate"] == (
        'Bearer realm="workspace-api", error="invalid_token", '
        'error_description="The API key expired"'
    )
    # Another key of the workspace is untouched, and an unknown key still says nothing of expiry.
    assert (
        await anon.get("/v1/users", headers={"Authorization": f"Bearer {ws_a.key}"})
    ).code == 200
    unknown = await anon.get("/v1/users", headers={"Authorization": f"Bearer {ws_a.key}x"})
    assert unknown.code == 401 and "expired" not in unknown.json()["detail"]


async def test_a_cached_key_is_refused_the_moment_it_expires(anon, auth, clock, config, ws_a):
    """The cache holds the key's expiry, not a verdict: it is compared on every request."""
    assert config.key_cache_seconds >= 1
    _, key = await auth.create(ws_a.id, "short", expires_in=dt.timedelta(milliseconds=500))
    headers = {"Authorization": f"Bearer {key}"}
    assert (await anon.get("/v1/users", headers=headers)).code == 200  # cached from here on
    clock.advance(0.5)  # within the cache period
    response = await anon.get("/v1/users", headers=headers)
    assert response.code == 401 and "expired" in response.json()["detail"]


async def test_expiry_is_kept_in_the_key_record(auth, store, ws_a):
    record, _ = await auth.create(ws_a.id, "dated", expires_in=dt.timedelta(days=30))
    assert record["expiresAt"] - record["createdAt"] == pytest.approx(
        dt.timedelta(days=30), abs=dt.timedelta(seconds=5)
    )
    [listed] = [k for k in await store.keys.list(ws_a.id) if k["id"] == record["id"]]
    assert listed["expiresAt"] == record["expiresAt"]
    active = await store.keys.find_active(ws_a.id, record["id"])
    assert active is not None and active.expires_at == record["expiresAt"]
