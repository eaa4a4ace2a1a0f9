"""GET /healthz and GET /readyz: no key, no rate limit; readiness follows the database."""

import logging
import re

import jwt
import pytest

from server.app import http_server as make_http_server
from server.app import make_app
from server.auth import KeyService
from store.database import open_store
from tests.helpers import TEST_SECRET, Client


async def test_liveness_needs_no_key(anon):
    response = await anon.get("/healthz")
    assert response.code == 200 and response.json() == {"status": "ok"}
    assert response.headers["Cache-Control"] == "no-store"


async def test_readiness_is_200_when_the_database_answers(anon):
    response = await anon.get("/readyz")
    assert response.code == 200 and response.json() == {"status": "ready"}


async def test_readiness_is_503_until_the_indexes_exist(anon, api, store):
    store.indexes_ready = False
    for client, path in ((anon, "/readyz"), (api, "/v1/users")):
        response = await client.get(path)
        assert response.code == 503 and response.headers["Retry-After"] == "5"
        assert response.json()["code"] == "service_unavailable"
    assert (await anon.get("/healthz")).code == 200
    await store.ensure_indexes()
    assert (await anon.get("/readyz")).code == 200
    assert (await api.get("/v1/users")).code == 200


async def test_readiness_follows_the_database_and_recovers(anon, store, monkeypatch):
    answers = iter(["the database is not reachable", "the database is damaged", None])

    async def readiness(timeout):
        return next(answers)

    monkeypatch.setattr(store, "readiness", readiness)
    responses = [await anon.get("/readyz") for _ in range(3)]
    assert [r.code for r in responses] == [503, 503, 200]
    assert responses[1].json()["detail"] == "the database is damaged"


async def test_readiness_is_503_while_shutting_down(anon, app):
    app.settings["draining"] = True
    response = await anon.get("/readyz")
    assert response.code == 503 and "shutting down" in response.json()["detail"]


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
async def test_other_methods_are_405(anon, path, method):
    response = await anon.fetch(
        path,
        method,
        body=None if method == "DELETE" else b"{}",
        headers={"Content-Type": "application/json"},
    )
    assert response.code == 405 and response.headers["Allow"] == "GET, HEAD"


def closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens there once the socket is closed


async def test_an_unreachable_database_gives_503_within_the_timeout(
    config, http_server_port, caplog
):
    """A real PyMongo client pointed at a closed port: requests get a 503 with Retry-After once
    db_timeout_seconds ends the driver's wait (its reason says so), never a hang or a 500;
    /readyz says so too. Each 503's log line carries the driver's reason (its error class and
    message), never the URI or its credentials."""
    caplog.set_level(logging.WARNING, logger="workspace_api")
    port = closed_port()
    config = config.replace(
        db_timeout_seconds=0.5, mongodb_uri=f"mongodb://ann:pa55word@127.0.0.1:{port}"
    )
    store = open_store(config.mongodb_uri, config.database, config.db_timeout_seconds)
    store.indexes_ready = True  # as if the database went away after start-up
    auth = KeyService(TEST_SECRET, store.keys)
    server = make_http_server(make_app(config, store, auth), config)
    server.add_socket(http_server_port[0])
    try:
        key = jwt.encode({"kid": "k", "wid": "w", "iat": 1}, TEST_SECRET, algorithm="HS256")
        client = Client(f"http://127.0.0.1:{http_server_port[1]}", key)
        for path in ("/v1/users", "/v1/lists", "/readyz"):
            response = await client.get(path)
            assert response.code == 503, response
            assert response.headers["Retry-After"] == "5"
            assert response.json()["code"] == "service_unavailable"
        assert (await client.get("/healthz")).code == 200
    finally:
        server.stop()
        await server.close_all_connections()
        await store.close()
    lines = [r.getMessage() for r in caplog.records if "database unavailable" in r.getMessage()]
    assert len(lines) == 2  # /v1/users and /v1/lists (readiness answers without a log line)
    for line in lines:
        assert "MongoDB did not answer in time (ServerSelectionTimeoutError: " in line
        # The driver gave up on the configured timeout (0.5 s), not on its own 30 s default.
        assert "connectTimeoutMS: 500.0ms" in line, line
        assert re.search(r"Timeout: 0\.\d+s\)", line), line
        assert f"127.0.0.1:{port}" in line and "[Errno 111]" in line
        assert "pa55word" not in line and "ann" not in line and "mongodb://" not in line
        assert "Topology Description" not in line
