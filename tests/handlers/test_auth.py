"""Authentication: only a valid, unrevoked key in `Authorization: Bearer` gets in."""

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
    response = await api.fetch("/v1/users", method, body=b"{}" if method != "DELETE" else None)
    assert response.headers["Allow"] == "GET, HEAD"
