"""The service's log: one JSON object per line; an access line for every request with request id,
workspace id, method, path, status and duration; and never an API key, the signing secret or a
provider credential, URL or host, whatever clients send (a whole representative run is captured
with the production set-up and scanned)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import uuid

import pytest

from server.config import load_config
from server.logs import REDACTED, JSONFormatter, secrets_of, setup_logging
from telephony.simulated_provider import make_ref, start_provider
from telephony.upstream import UpstreamClient
from tests.helpers import TEST_SECRET, add_call, test_environ

PROVIDER_HOST = "127.0.0.5"  # used by nothing else, so any mention of it is a leak
ACCOUNT_ID = "AC" + "3b" * 16
AUTH_TOKEN = "provider-token-e1f2a3b4c5"
REF = make_ref("logged call")
MISSING = make_ref("missing logged call")


@pytest.fixture
def provider(io_loop):
    server = io_loop.run_sync(
        lambda: start_provider(PROVIDER_HOST, 0, account_id=ACCOUNT_ID, auth_token=AUTH_TOKEN)
    )
    server.library.mark_missing(MISSING)
    yield server
    io_loop.run_sync(server.stop)


@pytest.fixture
def config(provider):
    return load_config(
        environ=test_environ(
            shared=True,
            WSAPI_PROVIDER_URL=provider.base_url,
            WSAPI_PROVIDER_ACCOUNT_ID=ACCOUNT_ID,
            WSAPI_PROVIDER_AUTH_TOKEN=AUTH_TOKEN,
        )
    )


@pytest.fixture
def app_services(config):
    return {
        "upstream": UpstreamClient(
            config.provider_url,
            ACCOUNT_ID,
            AUTH_TOKEN,
            connect_timeout=1,
            header_timeout=0.5,
            idle_timeout=0.5,
        )
    }


@pytest.fixture
def log_output(config):
    """The production logging set-up (server.logs.setup_logging), at debug level, into a buffer;
    the previous configuration is restored afterwards."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.getLogger("tornado.access").disabled
    buffer = io.StringIO()
    setup_logging("debug", secrets_of(config), buffer)
    raw: list[logging.LogRecord] = []
    recorder = logging.Handler()
    recorder.emit = raw.append
    root.addHandler(recorder)
    yield buffer, raw
    root.handlers[:], level, logging.getLogger("tornado.access").disabled = saved
    root.setLevel(level)


async def raw_request(origin: str, data: bytes) -> bytes:
    host, port = origin.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(data)
    try:
        return await asyncio.wait_for(reader.read(65536), 5)
    finally:
        writer.close()


async def representative_run(api, anon, origin, store, ws_a, ws_b, provider, auth):
    """Successful and failing requests of every kind; returns (request id, expected fields)."""
    key = ws_a.key
    recorded = await add_call(store, ws_a, REF)
    missing = await add_call(store, ws_a, MISSING)
    _, revoked = await auth.create(ws_a.id, "to revoke")
    await store.keys.revoke((await store.keys.list(ws_a.id))[-1]["id"])
    owner = ws_a.users[0]["id"]
    seen = []

    async def call(client, path, method="GET", **kwargs):
        response = await client.fetch(path, method, **kwargs)
        # Attributed to a workspace exactly when counted against its rate limit.
        seen.append(
            (
                response.headers["X-Request-Id"],
                method,
                path.split("?")[0],
                response.code,
                "RateLimit" in response.headers,
            )
        )
        return response

    created = await call(
        api, "/v1/lists", "POST", json_body={"name": "Logged", "ownerUserId": owner}
    )
    list_id = created.json()["list"]["id"]
    await call(
        api,
        f"/v1/lists/{list_id}/contacts",
        "POST",
        json_body={
            "contacts": [
                {"email": "ann@example.com", "phoneNumber": "+14155550100", "firstName": "Ann"}
            ]
        },
    )
    for path in (
        "/v1/users",
        "/v1/lists",
        "/v1/calls",
        "/v1/prospects",
        "/v1/prospect-activities?email=ann@example.com",
        "/v1/reporting/dialer-metrics?from=2026-11-01&to=2026-11-30",
        f"/v1/calls/{recorded}/recording",
        f"/v1/calls/{missing}/recording",
        f"/v1/lists/{uuid.uuid4()}",
        "/v1/lists?pageSize=7",
        "/v1/nope",
    ):
        await call(api, path)
    await call(api, f"/v1/calls/{recorded}/recording", headers={"Range": "bytes=0-99"})
    await call(api, f"/v1/calls/{recorded}/recording", "HEAD")
    provider.faults.set("500")
    await call(api, f"/v1/calls/{recorded}/recording")
    provider.faults.set("redirect")
    await call(api, f"/v1/calls/{recorded}/recording")
    provider.faults.clear()
    await call(api, "/v1/lists", "POST", body=key.encode(), headers={"Content-Type": "text/plain"})
    await call(
        api,
        "/v1/lists",
        "POST",
        body=b'{"name": "' + key.encode() + b'"',
        headers={"Content-Type": "application/json"},
    )
    await call(
        api,
        "/v1/lists",
        "POST",
        body=b" " * (2 * 1024 * 1024),
        headers={"Content-Type": "application/json"},
    )
    # Keys where they do not belong: all refused, none written down.
    await call(anon, f"/v1/users?api_key={key}")
    await call(anon, f"/v1/lists/{key}")
    await call(anon, "/v1/users", headers={"Authorization": f"Bearer {revoked}"})
    await call(anon, "/v1/users", headers={"Authorization": f"Bearer {key}x"})
    await call(anon, "/v1/users", headers={"Authorization": f"Basic {key}"})
    await call(anon, "/v1/users", headers={"Authorization": key})
    await call(anon, "/v1/users", headers={"X-Request-Id": key, "Authorization": "Bearer x"})
    await call(anon, f"/{key}")
    await call(api_for(ws_b, api), "/v1/users")
    # Malformed HTTP that makes Tornado itself quote the offending header, key and all.
    await raw_request(
        origin,
        f"GET /v1/users HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\x01\r\n\r\n".encode(),
    )
    return seen


def api_for(workspace, api):
    from tests.helpers import Client

    return Client(api.origin, workspace.key)


async def test_a_whole_run_logs_no_key_secret_or_provider_credential(
    api, anon, origin, store, auth, ws_a, ws_b, provider, config, log_output
):
    buffer, raw = log_output
    seen = await representative_run(api, anon, origin, store, ws_a, ws_b, provider, auth)
    text = buffer.getvalue()
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) >= len(seen)

    forbidden = {
        "API key A": ws_a.key,
        "API key B": ws_b.key,
        "secret": TEST_SECRET,
        "provider token": AUTH_TOKEN,
        "provider account": ACCOUNT_ID,
        "provider URL": config.provider_url,
        "provider host": PROVIDER_HOST,
    }
    for what, value in forbidden.items():
        assert value not in text, f"the log contains the {what}"
        for part in value.split("."):  # nor any piece of a key (JWT header/claims/signature)
            if len(part) > 20 and what.startswith("API key"):
                assert part not in text, f"the log contains part of the {what}"
    # Our own code never logs them even before redaction; only Tornado's complaint about the
    # malformed request quotes the raw headers, and the formatter scrubs that line.
    for record in raw:
        message = record.getMessage() + str(getattr(record, "fields", ""))
        for what, value in forbidden.items():
            if record.name == "tornado.general" and what.startswith("API key"):
                continue
            assert value not in message, f"{record.name} logged the {what}: {message[:200]}"
    assert any(
        REDACTED in line.get("message", "") for line in lines if line["logger"] == "tornado.general"
    )

    access = {line["requestId"]: line for line in lines if line["logger"] == "workspace_api.access"}
    for request_id, method, path, status, authenticated in seen:
        line = access[request_id]
        assert (line["method"], line["status"]) == (method, status)
        assert line["path"] == path or REDACTED in line["path"]
        assert isinstance(line["durationMs"], float | int) and line["durationMs"] >= 0
        assert (line["workspaceId"] is not None) == authenticated, line
        assert line["ts"].endswith("Z") and line["level"] == "INFO"


def test_every_line_is_one_json_object_and_exceptions_stay_inside_it():
    formatter = JSONFormatter(["s3cret-value"])
    try:
        raise ValueError("boom with s3cret-value\nand a second line")
    except ValueError:
        import sys

        record = logging.LogRecord(
            "workspace_api",
            logging.ERROR,
            __file__,
            1,
            "failed: %s",
            ("Bearer abc.def",),
            sys.exc_info(),
        )
    line = formatter.format(record)
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["message"] == f"failed: Bearer {REDACTED}"
    assert "ValueError" in parsed["exception"] and "s3cret-value" not in line


@pytest.mark.parametrize(
    "text,clean",
    [
        ("Authorization: Bearer abc.DEF-ghi_123=", f"Authorization: Bearer {REDACTED}"),
        ("authorization: basic dXNlcjpwYXNz", f"authorization: basic {REDACTED}"),
        ("key eyJhbGciOiJIUzI1NiJ9.eyJraWQiOiJrIn0.c2lnbmF0dXJl here", f"key {REDACTED} here"),
        (
            "mongodb://admin:hunter2@db.internal:27017/x",
            f"mongodb://{REDACTED}@db.internal:27017/x",
        ),
        ("https://AC1:tok@api.example/2010", f"https://{REDACTED}@api.example/2010"),
        ("nothing to hide /v1/lists/5f0c", "nothing to hide /v1/lists/5f0c"),
        ("id Xq3vTb-9kLmN_0pQrS7tUvWxYz1A2B3C4D5E6F7G8H9 end", f"id {REDACTED} end"),  # a signature
        (
            "a " + "3f2a" * 16 + " " + str(uuid.UUID(int=7)) + " " + "snake_case_" * 5,
            "a " + "3f2a" * 16 + " " + str(uuid.UUID(int=7)) + " " + "snake_case_" * 5,
        ),
        # A run of exactly 40 is one; 39 is not. Beside characters outside ASCII (a lone
        # surrogate too: the JSON fallback keeps it), the run is still found.
        ("k " + "Ab" * 20 + " k", f"k {REDACTED} k"),
        ("k " + "Ab" * 19 + "A k", "k " + "Ab" * 19 + "A k"),
        ("café" + "Xy0-" * 10 + "é", f"café{REDACTED}é"),
        ("\ud800 " + "xY_9" * 10, f"\ud800 {REDACTED}"),
    ],
)
def test_redaction_patterns(text, clean):
    assert JSONFormatter().redact(text) == clean


@pytest.mark.parametrize("form", ["{}", "trace.{}", "{}:1", "req-{}-2"])
async def test_a_key_signature_sent_as_request_id_is_echoed_but_never_logged(
    api, anon, ws_a, log_output, form
):
    """A well-formed request id (1-128 characters) that carries the signature part of a key.
    (A whole key is longer than 128 characters, so it is never taken as a request id.)"""
    signature = ws_a.key.split(".")[2]
    given = form.format(signature)
    for client in (api, anon):
        response = await client.get("/v1/users", headers={"X-Request-Id": given})
        assert response.headers["X-Request-Id"] == given
        if response.code >= 400:
            assert response.json()["requestId"] == given
    text = log_output[0].getvalue()
    access = [json.loads(line) for line in text.splitlines() if '"workspace_api.access"' in line]
    assert len(access) == 2 and all(REDACTED in line["requestId"] for line in access), access
    assert signature not in text


KEYLESS_ODDITIES = [
    ("GET", "/reference/static/console.js%00.css"),
    ("HEAD", "/reference/static/console.js%00.css"),
    ("GET", "/reference/static/..%00/console.js"),
    ("HEAD", "/reference/static/..%00/x/y"),
    ("GET", "/reference/static/%00"),
    ("GET", "/reference/static/..%2F..%2Fserver%2Fapp.py"),
    ("GET", "/reference/static/%FF"),
    ("GET", "/reference%00"),
    ("GET", "/v1/lists/%00"),
    ("GET", "/v1/calls/%00/recording"),
    ("GET", "/%00%FF%C0%AE"),
    ("OPTIONS", "/v1/users"),
    ("GET", "/v1/users?" + "&".join(["a=%00"] * 1200)),
    ("GET", "/openapi.json?%00=%FF"),
    ("GET", "/healthz?x=1"),
    ("DELETE", "/reference/static/console.js%00"),
]


async def test_nothing_sent_without_a_key_writes_a_traceback(anon, origin, log_output):
    """Odd paths, bytes, bodies and framing from a client without a key: every answer is a
    problem or a closed connection, and no log line carries an error or a traceback."""
    for method, path in KEYLESS_ODDITIES:
        response = await anon.fetch(path, method)  # problem+json with X-Request-Id: checked
        assert 400 <= response.code < 500, (path, response)
    for content_type, body in [
        ("multipart/form-data; boundary=B", b"--B\r\nbroken"),
        ("application/x-www-form-urlencoded", b"a=1&" * 3000),
        ("application/json", b"\x00\xff{"),
        ("text/plain", b""),
    ]:
        for path in ("/v1/lists", "/reference/static/console.js", "/nowhere"):
            response = await anon.fetch(
                path, "POST", body=body, headers={"Content-Type": content_type}
            )
            assert response.code in (401, 404, 405), (path, response)
    for data in [
        b"GET /reference/static/console.js\x00 HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /v1/users HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\x00b\r\n\r\n",
        b"POST /v1/lists HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, x\r\n\r\n",
        b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n",
    ]:
        await raw_request(origin, data)
    text = log_output[0].getvalue()
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) >= len(KEYLESS_ODDITIES)
    for line in lines:
        assert line["level"] in ("DEBUG", "INFO"), line
        assert "exception" not in line and "Traceback" not in json.dumps(line), line


def test_secrets_of_configuration():
    config = load_config(
        environ=test_environ(
            WSAPI_PROVIDER_URL="https://api.provider.example:8443/base",
            WSAPI_PROVIDER_ACCOUNT_ID="AC123456",
            WSAPI_PROVIDER_AUTH_TOKEN="tok-123456",
        )
    )
    assert set(secrets_of(config)) == {
        TEST_SECRET,
        "tok-123456",
        "AC123456",
        "https://api.provider.example:8443/base",
        "api.provider.example:8443",
    }
