"""Hostile input: oversized, non-JSON and malformed bodies, other methods, slow and broken
clients. Every answer is a problem document (checked by the client on every response); never a
500, never a traceback, never a hung connection."""

import asyncio
import json
import re

import pytest

from handlers.base import APIHandler
from server.app import collect_handlers
from server.config import load_config
from tests.helpers import Client, test_environ, wait_for

pytestmark = pytest.mark.long

TIMEOUT = 1.0  # idle (= header) and body timeouts of this module's server
MIB = 1024 * 1024


@pytest.fixture
def config():
    return load_config(
        environ=test_environ(
            shared=True,
            WSAPI_IDLE_TIMEOUT_SECONDS=str(TIMEOUT),
            WSAPI_BODY_TIMEOUT_SECONDS=str(TIMEOUT),
        )
    )


@pytest.fixture
def a_list(io_loop, store, ws_a):
    return io_loop.run_sync(lambda: store.lists.create(ws_a.id, "L", ws_a.users[0]["id"]))


class Raw:
    """A hand-driven HTTP/1.1 connection, for what a well-behaved client library won't send."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, origin: str) -> "Raw":
        host, port = origin.removeprefix("http://").split(":")
        return cls(*await asyncio.open_connection(host, int(port)))

    async def send(self, data: bytes) -> None:
        try:
            self.writer.write(data)
            await self.writer.drain()
        except ConnectionError:
            pass  # the server may hang up while we are still sending: that is the point

    async def response(self) -> tuple[int, dict, bytes]:
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), 10)
        lines = head.decode("latin1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:] if x)}
        body = await asyncio.wait_for(self.reader.readexactly(int(headers["content-length"])), 10)
        return status, headers, body

    async def closed(self, reset_ok: bool = False) -> None:
        """Waits (30 s at most) for the server to close the connection, reading and dropping
        anything it sends. A reset (the server closing on data it has not read) fails unless
        `reset_ok`."""
        try:
            while await asyncio.wait_for(self.reader.read(65536), 30):
                pass
        except ConnectionResetError:
            if not reset_ok:
                raise
        finally:
            self.close()

    async def open_while(self, origin: str) -> bool:
        """Whether this connection is still open once another connection's request has been
        answered: the server waits on it rather than dropping it at once."""
        assert (await Client(origin, None).get("/healthz")).code == 200
        await asyncio.sleep(0)  # a close that had arrived would be read now
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


def head(method: str, path: str, key: str | None, **headers) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: test"]
    if key:
        lines.append(f"Authorization: Bearer {key}")
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def assert_problem(status, headers, body, expected_status, code):
    assert status == expected_status, body
    assert headers["content-type"] == "application/problem+json"
    problem = json.loads(body)
    assert problem["code"] == code and problem["status"] == expected_status
    assert problem["requestId"] == headers["x-request-id"]


# --- 413 -----------------------------------------------------------------------------------


def test_the_default_body_limit_is_one_mebibyte(config):
    assert config.max_body_bytes == MIB


BODY_TARGETS = {
    "create list": ("POST", "/v1/lists", True),
    "contact upload": ("POST", "/v1/lists/{list}/contacts", True),
    "no body schema": ("GET", "/v1/users", True),
    "unauthenticated": ("POST", "/v1/lists", False),
}


@pytest.mark.parametrize("size", [MIB + 1, 10 * MIB, 200 * MIB], ids=["1MiB+1", "10MiB", "200MiB"])
@pytest.mark.parametrize("target", BODY_TARGETS.values(), ids=BODY_TARGETS.keys())
async def test_an_oversized_body_is_a_json_413(origin, ws_a, a_list, target, size):
    """Answered as soon as the headers announce the size; the client, still sending, can read
    the reply (no TCP reset), and the connection is closed after a short linger."""
    method, path, with_key = target
    raw = await Raw.open(origin)
    await raw.send(
        head(
            method,
            path.format(list=a_list["id"]),
            with_key and ws_a.key,
            Content_Type="application/json",
            Content_Length=size,
        )
    )
    sender = asyncio.ensure_future(raw.send(b" " * min(size - 1, 2 * MIB)))  # some of it
    assert_problem(*await raw.response(), 413, "payload_too_large")
    await raw.closed()
    await sender


async def test_after_a_413_for_a_body_sent_whole_the_connection_stays_usable(origin, ws_a):
    raw = await Raw.open(origin)
    await raw.send(
        head("POST", "/v1/lists", ws_a.key, Content_Type="application/json", Content_Length=MIB + 1)
        + b" " * (MIB + 1)
    )
    assert_problem(*await raw.response(), 413, "payload_too_large")
    await raw.send(head("GET", "/v1/users", ws_a.key))
    status, _, _ = await raw.response()
    assert status == 200
    raw.close()


async def test_an_oversized_body_announced_with_expect_100_continue_is_refused_at_once(
    origin, ws_a
):
    raw = await Raw.open(origin)
    await raw.send(
        head(
            "POST",
            "/v1/lists",
            ws_a.key,
            Content_Type="application/json",
            Content_Length=10 * MIB,
            Expect="100-continue",
        )
    )
    assert_problem(*await raw.response(), 413, "payload_too_large")  # not "100 Continue"
    raw.close()


async def test_an_oversized_chunked_body_is_a_json_413(origin, ws_a):
    raw = await Raw.open(origin)
    await raw.send(
        head(
            "POST",
            "/v1/lists",
            ws_a.key,
            Content_Type="application/json",
            Transfer_Encoding="chunked",
        )
    )
    chunk = b" " * 65536
    sender = asyncio.ensure_future(raw.send((b"10000\r\n" + chunk + b"\r\n") * 40))  # 2.5 MiB
    assert_problem(*await raw.response(), 413, "payload_too_large")
    await raw.closed()
    await sender


async def test_a_body_of_exactly_the_limit_is_accepted(api, ws_a, config):
    body = json.dumps({"name": "padded", "ownerUserId": ws_a.users[0]["id"]}).encode()
    body += b" " * (config.max_body_bytes - len(body))
    response = await api.fetch(
        "/v1/lists", "POST", body=body, headers={"Content-Type": "application/json"}
    )
    assert response.code == 201


async def test_a_small_chunked_body_is_read_normally(origin, ws_a):
    body = json.dumps({"name": "chunked", "ownerUserId": ws_a.users[0]["id"]}).encode()
    raw = await Raw.open(origin)
    await raw.send(
        head(
            "POST",
            "/v1/lists",
            ws_a.key,
            Content_Type="application/json",
            Transfer_Encoding="chunked",
        )
        + f"{len(body):x}\r\n".encode()
        + body
        + b"\r\n0\r\n\r\n"
    )
    status, _, response = await raw.response()
    assert status == 201, response
    raw.close()


# --- 415 and 400 -----------------------------------------------------------------------------

NOT_JSON = [
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/json; charset=latin-1",
    "application/jsonx",
    "application/xml",
    None,
]


@pytest.mark.parametrize("content_type", NOT_JSON)
@pytest.mark.parametrize("path", ["/v1/lists", "/v1/lists/{list}/contacts"])
async def test_a_body_that_is_not_json_is_415(api, a_list, path, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    body = (
        b'--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--\r\n'
        if (content_type or "").startswith("multipart")
        else b'{"a": 1}'
    )
    response = await api.fetch(path.format(list=a_list["id"]), "POST", body=body, headers=headers)
    assert response.code == 415 and response.json()["code"] == "unsupported_media_type"


MALFORMED = {
    "truncated": b'{"name": "x"',
    "not json": b"name=x",
    "trailing garbage": b'{"name": "x"} x',
    "single quotes": b"{'name': 'x'}",
    "NaN": b'{"name": NaN}',
    "Infinity": b'{"name": -Infinity}',
    "huge integer": b'{"name": ' + b"9" * 5000 + b"}",
    "int beyond int64": b'{"name": 9223372036854775808}',
    "float overflow": b'{"name": 1e999}',
    "duplicate key": b'{"name": "a", "name": "b"}',
    "dollar key": b'{"$where": "1"}',
    "nested dollar key": b'{"contacts": [{"$set": {"a": 1}}]}',
    "dotted operator": b'{"name": {"$gt": ""}}',
    "NUL in key": b'{"na\\u0000me": "x"}',
    "deep nesting": b"[" * 100_000 + b"]" * 100_000,
    "deep objects": b'{"a":' * 5000 + b"1" + b"}" * 5000,
    "invalid utf-8": b'{"name": "\xff\xfe"}',
    "lone surrogate": b'{"name": "\\ud800"}',
    "empty": b"",
    "whitespace": b"   ",
    "BOM": b'\xef\xbb\xbf{"name": "x"}',
    "null": b"null",
    "string": b'"x"',
    "number": b"5",
}


@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
@pytest.mark.parametrize("path", ["/v1/lists", "/v1/lists/{list}/contacts"])
async def test_malformed_json_is_400(api, a_list, path, body):
    response = await api.fetch(
        path.format(list=a_list["id"]),
        "POST",
        body=body,
        headers={"Content-Type": "application/json"},
    )
    assert response.code == 400, response
    assert response.json()["code"] == "invalid_request"


WRONG_TYPES = {
    "/v1/lists": [
        {"name": 5, "ownerUserId": "OWNER"},
        {"name": "x", "ownerUserId": 5},
        {"name": ["x"], "ownerUserId": "OWNER"},
        {"name": None, "ownerUserId": None},
        {"name": True, "ownerUserId": "OWNER"},
        {"name": {"a": 1}, "ownerUserId": 1.5},
        {"name": "x", "ownerUserId": "OWNER", "workspaceId": "OWNER"},
    ],
    "/v1/lists/{list}/contacts": [
        {"contacts": "x"},
        {"contacts": {}},
        {"contacts": [1]},
        {"contacts": [None]},
        {"contacts": [[]]},
        {"contacts": [{"email": 5}]},
        {"contacts": [{"email": ["a@b.example"]}]},
        {"contacts": [{"firstName": {"x": 1}}]},
        {"contacts": [{}]},
        {"contacts": []},
        {"contacts": [{"email": "a@b.example"}] * 101},
        {"contacts": [{"email": "a@b.example", "workspaceId": "w"}]},
    ],
}


@pytest.mark.parametrize("path,body", [(p, b) for p, bodies in WRONG_TYPES.items() for b in bodies])
async def test_wrong_value_types_are_400(api, ws_a, a_list, path, body):
    text = json.dumps(body).replace("OWNER", ws_a.users[0]["id"])
    response = await api.fetch(
        path.format(list=a_list["id"]),
        "POST",
        body=text.encode(),
        headers={"Content-Type": "application/json"},
    )
    assert response.code == 400, response
    assert response.json()["errors"]


BAD_QUERIES = [
    "page=0",
    "page=-1",
    "page=abc",
    "page=1.5",
    "page=99999999999999999999999",
    "page=1e3",
    "page=%FF",
    "page=%",
    "pageSize=51",
    "pageSize=",
    "page=1&page=2",
    "workspaceId=x",
    "%00=1",
    "page=NaN",
    "pageSize=Infinity",
]


@pytest.mark.parametrize("query", BAD_QUERIES)
@pytest.mark.parametrize("path", ["/v1/lists", "/v1/calls", "/v1/prospects"])
async def test_bad_query_parameters_are_400(api, path, query):
    response = await api.get(f"{path}?{query}")
    assert response.code == 400, response


ODD_PATHS = {
    "/v1/lists/%00": 404,
    "/v1/lists/..%2Fusers": 404,
    "/v1/lists/" + "a" * 5000: 404,
    "/v1/calls/%FF/recording": 400,  # not UTF-8: Tornado refuses to decode it
    "/v1/lists/x/contacts/..": 404,
    "/v1//users": 404,
    "/V1/USERS": 404,
}


@pytest.mark.parametrize("path,status", ODD_PATHS.items(), ids=[p[:40] for p in ODD_PATHS])
async def test_odd_paths_are_problems_not_errors(api, path, status):
    response = await api.get(path)
    assert response.code == status, response


# --- 405 -------------------------------------------------------------------------------------


def sample(pattern: str) -> str:
    return re.sub(r"\([^)]*\)", "00000000-0000-4000-8000-000000000000", pattern)


ROUTES = [(route[0], route[1]) for route in collect_handlers()[:-1]]


@pytest.mark.parametrize("pattern,handler", ROUTES, ids=[r[0] for r in ROUTES])
async def test_every_route_answers_other_methods_with_405_and_allow(api, pattern, handler):
    allowed = handler.allowed_methods()
    url = sample(pattern).replace("(.+)", "x")
    for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        if method in allowed:
            continue
        response = await api.fetch(
            url,
            method,
            body=b"{}" if method in ("POST", "PUT", "PATCH") else None,
            headers={"Content-Type": "application/json"},
        )
        assert response.code == 405, (method, response)
        assert response.headers["Allow"] == ", ".join(allowed)


def test_every_api_route_is_an_api_handler():
    for pattern, handler in ROUTES:
        if pattern.startswith("/v1/"):
            assert issubclass(handler, APIHandler), pattern


# --- slow and broken clients -------------------------------------------------------------------


async def test_requests_in_flight_are_counted_until_answered_or_abandoned(
    origin, api, ws_a, http_server, store, monkeypatch
):
    """The count a graceful shutdown waits for (server.gate) returns to zero after answered,
    cut-off and abandoned requests alike."""
    gate = http_server.request_callback
    release = asyncio.Event()
    original = store.users.list_active

    async def slow(*args):
        await release.wait()
        return await original(*args)

    monkeypatch.setattr(store.users, "list_active", slow)
    raw = await Raw.open(origin)
    await raw.send(head("GET", "/v1/users", ws_a.key))
    await wait_for(lambda: gate.inflight == 1, what="the request was counted")
    raw.writer.transport.abort()  # the client gives up while the handler waits
    await wait_for(lambda: gate.inflight == 0, what="the abandoned request left the count")
    release.set()
    assert (await api.get("/v1/users")).code == 200
    assert (await api.post("/v1/lists", {"name": "x" * 300})).code == 400
    raw = await Raw.open(origin)
    await raw.send(head("POST", "/v1/lists", ws_a.key, Content_Length=10 * MIB))
    assert_problem(*await raw.response(), 413, "payload_too_large")
    raw.close()
    await wait_for(lambda: gate.inflight == 0, what="the refused request left the count")


async def test_half_a_request_line_is_disconnected_after_the_header_timeout(origin):
    raw = await Raw.open(origin)
    await raw.send(b"GET /v1/us")
    assert await raw.open_while(origin)
    await raw.closed()  # by the header timeout: nothing else would end it


async def test_headers_dripped_slowly_are_cut_off_at_the_header_timeout(origin):
    """The timeout covers the whole header, so a client that sends a line now and then cannot
    hold the connection (slowloris)."""
    raw = await Raw.open(origin)

    async def drip():
        await raw.send(b"GET /v1/users HTTP/1.1\r\nHost: test\r\n")
        for line in range(50):  # 5 s of a header line now and then
            await asyncio.sleep(0.1)
            if raw.writer.is_closing():
                return line
            await raw.send(b"X-Slow: 1\r\n")
        return 50

    dripping = asyncio.ensure_future(drip())
    assert await raw.open_while(origin)
    await raw.closed(reset_ok=True)
    assert await dripping < 50  # cut off while it was still dripping


async def test_a_body_that_stops_arriving_is_disconnected_after_the_body_timeout(origin, ws_a):
    raw = await Raw.open(origin)
    await raw.send(
        head("POST", "/v1/lists", ws_a.key, Content_Type="application/json", Content_Length=100)
        + b'{"name":'
    )
    assert await raw.open_while(origin)
    await raw.closed()  # by the body timeout: nothing else would end it


async def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout(origin, ws_a):
    raw = await Raw.open(origin)
    await raw.send(head("GET", "/v1/users", ws_a.key))
    status, headers, _ = await raw.response()
    assert status == 200 and headers.get("connection", "") != "close"
    assert await raw.open_while(origin)
    await raw.closed()  # by the idle timeout: nothing else would end it


async def test_oversized_headers_close_the_connection_and_the_server_carries_on(origin, api):
    raw = await Raw.open(origin)
    await raw.send(head("GET", "/v1/users", None, X_Big="x" * 64 * 1024))
    await raw.closed(reset_ok=True)
    assert (await api.get("/v1/users")).code == 200


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\0" * 50,
        b"GET\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
        b"GET /v1/users HTTP/1.1\r\nNo colon here\r\n\r\n",
        b"POST /v1/lists HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        b"POST /v1/lists HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
    ],
)
async def test_broken_http_gets_no_500_and_the_server_carries_on(origin, api, garbage):
    raw = await Raw.open(origin)
    await raw.send(garbage)
    data = await asyncio.wait_for(raw.reader.read(65536), TIMEOUT + 5)
    assert not data.startswith(b"HTTP/1.1 5") and b"Traceback" not in data
    raw.close()
    assert (await api.get("/v1/users")).code == 200


# --- what the OpenAPI document says a parameter or field may be, and what the code accepts ------

PAGE_MAX = 2**63 - 1


def test_the_page_maximum_is_documented():
    from schemas import Schemas

    page = Schemas().documents["/schemas/parameters/page.json"]
    assert (page["minimum"], page["maximum"]) == (1, PAGE_MAX)


@pytest.mark.parametrize("page", [PAGE_MAX + 1, 3975129222100889370624, 10**60, -(10**60), 0])
async def test_every_page_outside_the_documented_range_is_400_with_a_pointer(api, page):
    response = await api.get(f"/v1/lists?page={page}")
    assert response.code == 400, response
    error = response.json()["errors"][0]
    assert error["pointer"] == "#/query/page" and error["parameter"] == "page"
    assert error["detail"].startswith(("must be at most", "must be at least")), error


async def test_the_largest_documented_page_is_an_empty_page(api):
    body = (await api.get(f"/v1/lists?page={PAGE_MAX}")).json()
    assert body["lists"] == [] and body["hasMore"] is False and body["page"] == PAGE_MAX


def all_patterns(value):
    if isinstance(value, dict):
        for key, child in value.items():
            if key == "pattern":
                yield child
            else:
                yield from all_patterns(child)
    elif isinstance(value, list):
        for child in value:
            yield from all_patterns(child)


def test_blank_means_the_same_in_the_schemas_and_in_the_code():
    """ "Blank" is defined once (schemas.NON_BLANK): exactly the characters str.strip() trims,
    spelled without \\s or \\S, which mean different sets in ECMA-262 and in Python."""
    from schemas import NON_BLANK, Schemas

    patterns = [p for doc in Schemas().documents.values() for p in all_patterns(doc)]
    assert patterns.count(NON_BLANK) >= 3  # query parameters; contacts use the keyword below
    contact = "/schemas/requests/contact.json"
    assert Schemas().errors(contact, {"firstName": "\u001e \u3000"})  # blank: refused
    assert Schemas().errors(contact, {"firstName": "\ufeffAda"}) == []
    assert not [p for p in patterns if "\\s" in p.lower()], "\\s/\\S differ between dialects"
    for code in [*range(0x3100), 0xFEFF]:
        blank = re.search(NON_BLANK, chr(code)) is None
        assert blank == chr(code).isspace() == (chr(code).strip() == ""), hex(code)


@pytest.mark.parametrize("value", ["\u001e", " \u001c\u001f ", "\u0085", "\u3000\t"])
async def test_a_contact_of_only_whitespace_is_400_blank(api, a_list, value):
    response = await api.post(
        f"/v1/lists/{a_list['id']}/contacts", json_body={"contacts": [{"firstName": value}]}
    )
    assert response.code == 400, response
    assert "non-blank" in response.json()["errors"][0]["detail"]


async def test_a_contact_of_a_byte_order_mark_is_not_blank(api, a_list):
    """U+FEFF is whitespace to ECMA-262 \\s, not to Python: by the one definition, not blank."""
    response = await api.post(
        f"/v1/lists/{a_list['id']}/contacts", json_body={"contacts": [{"firstName": "\ufeff"}]}
    )
    assert response.code == 200, response


# --- no answer from Tornado itself: problem+json with X-Request-Id, bodies never forms ----------


@pytest.mark.parametrize("fields", [101, 1001, 1500])  # 1500: near the 16 KiB head limit
async def test_too_many_query_fields_is_a_problem_with_a_pointer(api, anon, fields):
    query = "&".join(f"f{i}=1" for i in range(fields))
    response = await api.get(f"/v1/lists?{query}")  # problem+json, X-Request-Id: checked there
    assert response.code == 400, response
    assert response.json()["errors"] == [
        {"pointer": "#/query", "detail": "must have at most 100 fields"}
    ]
    assert "RateLimit" in response.headers  # counted, like every request with a key
    assert (await anon.get(f"/v1/lists?{query}")).code == 401
    assert (await anon.get(f"/nowhere?{query}")).code == 404
    assert (await api.get("/v1/lists?" + "&".join(["pageSize=50"] * 100))).code == 400  # twice


FORMS = {
    "multipart": (
        "multipart/form-data; boundary=XyZ",
        b'--XyZ\r\nContent-Disposition: form-data; name="name"\r\n\r\nL\r\n--XyZ--\r\n',
    ),
    "broken multipart": ("multipart/form-data; boundary=XyZ", b"--XyZ\r\nno headers"),
    "multipart without boundary": ("multipart/form-data", b"name=L"),
    "form": ("application/x-www-form-urlencoded", b"name=L&ownerUserId=x"),
    "form with many fields": (
        "application/x-www-form-urlencoded",
        "&".join(f"f{i}=1" for i in range(5000)).encode(),
    ),
}


@pytest.mark.parametrize("content_type,body", FORMS.values(), ids=FORMS.keys())
async def test_form_bodies_are_never_parsed(api, anon, content_type, body):
    """Without a key 401, with one 415 (and counted); never Tornado's own 400."""
    headers = {"Content-Type": content_type}
    response = await anon.fetch("/v1/lists", "POST", body=body, headers=headers)
    assert response.code == 401, response
    response = await api.fetch("/v1/lists", "POST", body=body, headers=headers)
    assert response.code == 415, response
    assert "RateLimit" in response.headers
    response = await api.fetch("/v1/users", "PUT", body=body, headers=headers)
    assert response.code == 405, response
    response = await anon.fetch("/v1/nowhere", "POST", body=body, headers=headers)
    assert response.code == 404, response
