"""GET /v1/api-key: the calling key's id, name, scopes and expiry, for any valid key."""

import datetime as dt

from schemas import Schemas
from tests.helpers import Client

RECORD = "/schemas/responses/api-key.json"


async def test_describes_the_calling_key_and_nothing_else(origin, api, auth, ws_a):
    response = await api.get("/v1/api-key")
    assert response.code == 200
    body = response.json()
    assert Schemas().errors(RECORD, body) == []
    assert body["apiKey"]["id"] == ws_a.key_id
    assert body["apiKey"]["name"] == "test key"
    assert body["apiKey"]["scopes"] == ["read", "write"]
    assert body["apiKey"]["expiresAt"] is None
    assert ws_a.key not in response.body.decode()  # never the key itself
    assert "RateLimit" in response.headers  # counted like every request

    record, key = await auth.create(
        ws_a.id, "dialer", frozenset({"ingest"}), expires_in=dt.timedelta(days=90)
    )
    described = (await Client(origin, key).get("/v1/api-key")).json()["apiKey"]
    assert described["id"] == record["id"] and described["scopes"] == ["ingest"]
    expires = dt.datetime.fromisoformat(described["expiresAt"].replace("Z", "+00:00"))
    assert expires.replace(tzinfo=None) == record["expiresAt"]
    assert Schemas().errors(RECORD, {"apiKey": described}) == []


async def test_a_revoked_or_expired_key_is_401_here_too(origin, auth, store, clock, config, ws_a):
    _, key = await auth.create(ws_a.id, "brief", expires_in=dt.timedelta(hours=1))
    client = Client(origin, key)
    assert (await client.get("/v1/api-key")).code == 200
    clock.advance(3600)
    assert (await client.get("/v1/api-key")).code == 401
    record, key = await auth.create(ws_a.id, "to revoke")
    client = Client(origin, key)
    assert (await client.get("/v1/api-key")).code == 200  # cached as active from here
    await store.keys.revoke(record["id"])
    response = await client.get("/v1/api-key")  # the record says revoked even while cached
    assert response.code == 401 and response.json()["code"] == "unauthorized"
