"""The webhook transport against real receivers (Tornado servers on loopback, one with TLS from
a test CA): statuses, Retry-After, redirects not followed, timeouts, the body cap, keep-alive,
and the address rules enforced both when a URL is checked and when a delivery connects."""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import socket
import ssl
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest
import tornado.httpserver
import tornado.iostream
import tornado.netutil
import tornado.web
import trustme

from webhooks.networks import parse_networks
from webhooks.transport import (
    HTTPS_ONLY,
    USER_AGENT,
    Outcome,
    Policy,
    Transport,
    check_url,
    parse_retry_after,
)

SECRET = "receiver-secret-7f3a9c"  # what a receiver says back; must never surface
BODY = b'{"id":"evt_1","type":"call.created"}'
HEADERS = {
    "Content-Type": "application/json",
    "webhook-id": "evt_1",
    "webhook-timestamp": "1700000000",
    "webhook-signature": "v1,c2lnbmF0dXJl",
}
LOCAL = Policy(allowed_networks=parse_networks("127.0.0.0/8"))
# A huge body the receiver streams until the client hangs up (or this much is sent).
ENDLESS_LIMIT = 256 * 1024 * 1024


@dataclasses.dataclass
class Receiver:
    """A Tornado server on one loopback address, counting TCP connections and requests."""

    host: str
    port: int = 0
    connections: int = 0
    requests: list[tuple[str, Any, bytes]] = dataclasses.field(default_factory=list)
    release: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    endless_sent: int = 0
    endless_closed: bool = False
    server: Any = None

    def url(self, path: str, scheme: str = "http") -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}{path}"

    def hits(self, path: str) -> int:
        return sum(1 for p, _, _ in self.requests if p == path)


class Hook(tornado.web.RequestHandler):
    """Answers by path: /ok, /status/<code>[?retry=<Retry-After>], /redirect?to=<url>, /slow,
    /secret (500 with a secret body and header), /cookie (sets one), /endless."""

    def initialize(self, receiver: Receiver) -> None:
        self.receiver = receiver

    async def post(self, path: str) -> None:
        receiver = self.receiver
        receiver.requests.append((f"/{path}", self.request.headers, self.request.body))
        if path == "ok":
            self.write("ok")
        elif path.startswith("status/"):
            self.set_status(int(path.split("/")[1]))
            if retry := self.get_query_argument("retry", None):
                self.set_header("Retry-After", retry)
            if self.get_status() not in (204, 304):
                self.write(f"nope {SECRET}")
        elif path == "redirect":
            self.redirect(self.get_query_argument("to"), status=302)
        elif path == "slow":
            await asyncio.wait_for(receiver.release.wait(), timeout=30)
        elif path == "secret":
            self.set_status(500)
            self.set_header("X-Receiver-Secret", SECRET)
            self.write(f"stack trace with {SECRET}")
        elif path == "cookie":
            self.set_cookie("session", SECRET)
        elif path == "endless":
            await self.endless()

    async def endless(self) -> None:
        receiver = self.receiver
        chunk = b"x" * 65536
        try:
            while receiver.endless_sent < ENDLESS_LIMIT:
                self.write(chunk)
                await self.flush()
                receiver.endless_sent += len(chunk)
        except tornado.iostream.StreamClosedError:
            receiver.endless_closed = True


async def start_receiver(host: str, ssl_options: ssl.SSLContext | None = None) -> Receiver:
    receiver = Receiver(host)
    app = tornado.web.Application([(r"/(.*)", Hook, {"receiver": receiver})])
    server = tornado.httpserver.HTTPServer(app, ssl_options=ssl_options)
    counted = server.handle_stream

    def handle_stream(stream: tornado.iostream.IOStream, address: Any) -> None:
        receiver.connections += 1
        counted(stream, address)

    server.handle_stream = handle_stream  # type: ignore[method-assign]
    [sock] = tornado.netutil.bind_sockets(0, host, family=socket.AF_UNSPEC)
    receiver.port = sock.getsockname()[1]
    server.add_sockets([sock])
    receiver.server = server
    return receiver


async def stop_receiver(receiver: Receiver) -> None:
    receiver.release.set()
    receiver.server.stop()
    await receiver.server.close_all_connections()


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.fixture
def receiver(io_loop) -> Receiver:
    receiver = io_loop.run_sync(lambda: start_receiver("127.0.0.1"))
    yield receiver
    io_loop.run_sync(lambda: stop_receiver(receiver))


@pytest.fixture
def other(io_loop) -> Receiver:
    """A second receiver: the target of redirects, which must never be reached."""
    receiver = io_loop.run_sync(lambda: start_receiver("127.0.0.1"))
    yield receiver
    io_loop.run_sync(lambda: stop_receiver(receiver))


@pytest.fixture
def receiver6(io_loop) -> Receiver:
    if not ipv6_loopback():
        pytest.skip("this machine has no IPv6 loopback (::1) to bind a receiver to")
    receiver = io_loop.run_sync(lambda: start_receiver("::1"))
    yield receiver
    io_loop.run_sync(lambda: stop_receiver(receiver))


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_receiver(io_loop, ca) -> Receiver:
    """An https receiver whose certificate (127.0.0.1, localhost, receiver.test) comes from a
    test CA that the system does not trust."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost", "receiver.test").configure_cert(context)
    receiver = io_loop.run_sync(lambda: start_receiver("127.0.0.1", context))
    yield receiver
    io_loop.run_sync(lambda: stop_receiver(receiver))


@pytest.fixture
def ca_file(ca, tmp_path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@asynccontextmanager
async def transport(policy: Policy, **kwargs: Any) -> AsyncIterator[Transport]:
    client = Transport(policy, **kwargs)
    try:
        yield client
    finally:
        await client.close()


async def post_once(policy: Policy, url: str, **kwargs: Any) -> Outcome:
    async with transport(policy, **kwargs) as client:
        return await client.post(url, BODY, HEADERS)


def answering(*answers: Sequence[str], calls: list[str] | None = None) -> Callable[[str, int], Any]:
    """A name lookup that answers `answers[i]` to its i-th call (the last one from then on)."""
    seen: list[str] = [] if calls is None else calls

    async def getaddrinfo(host: str, port: int) -> list[tuple[Any, ...]]:
        seen.append(host)
        addresses = answers[min(len(seen), len(answers)) - 1]
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (a, port, 0, 0))
            if ":" in a
            else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in addresses
        ]

    return getaddrinfo


async def unknown_name(host: str, port: int) -> list[tuple[Any, ...]]:
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


async def wait_for(condition: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


# ---- answers of the receiver ----


async def test_2xx_is_success_and_the_request_arrives_whole(receiver) -> None:
    outcome = await post_once(LOCAL, receiver.url("/ok"))
    assert outcome.status_code == 200 and outcome.error is None and outcome.retry_after is None
    assert outcome.duration_ms >= 0
    [(path, headers, body)] = receiver.requests
    assert path == "/ok" and body == BODY
    for name, value in HEADERS.items():
        assert headers[name] == value
    assert headers["User-Agent"] == USER_AGENT
    assert USER_AGENT.startswith("workspace-data-api-webhooks/")


async def test_the_user_agent_is_fixed(receiver) -> None:
    async with transport(LOCAL) as client:
        await client.post(receiver.url("/ok"), BODY, {**HEADERS, "user-agent": "spoof/1"})
    [(_, headers, _)] = receiver.requests
    assert headers["User-Agent"] == USER_AGENT


@pytest.mark.parametrize("code", [500, 502, 404, 410, 400])
async def test_non_2xx_is_an_http_error(receiver, code: int) -> None:
    outcome = await post_once(LOCAL, receiver.url(f"/status/{code}"))
    assert outcome == Outcome(code, outcome.duration_ms, f"http {code}", None)


@pytest.mark.parametrize("code", [200, 201, 202, 204])
async def test_every_2xx_is_success(receiver, code: int) -> None:
    outcome = await post_once(LOCAL, receiver.url(f"/status/{code}"))
    assert (outcome.status_code, outcome.error) == (code, None)


@pytest.mark.parametrize("code", [429, 503])
async def test_retry_after_seconds(receiver, code: int) -> None:
    outcome = await post_once(LOCAL, receiver.url(f"/status/{code}?retry=7"))
    assert (outcome.status_code, outcome.error, outcome.retry_after) == (code, f"http {code}", 7.0)


@pytest.mark.parametrize("code", [429, 503])
async def test_retry_after_http_date(receiver, code: int) -> None:
    when = urllib.parse.quote(email.utils.formatdate(time.time() + 120, usegmt=True))
    outcome = await post_once(LOCAL, receiver.url(f"/status/{code}?retry={when}"))
    assert outcome.status_code == code
    # HTTP-dates have whole seconds; the slack is for a slow machine, not a timing claim.
    assert outcome.retry_after is not None and 60 < outcome.retry_after <= 120


async def test_retry_after_only_on_429_and_503(receiver) -> None:
    outcome = await post_once(LOCAL, receiver.url("/status/500?retry=7"))
    assert outcome.retry_after is None
    outcome = await post_once(LOCAL, receiver.url("/status/429"))
    assert (outcome.status_code, outcome.retry_after) == (429, None)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("7", 7.0),
        (" 120 ", 120.0),
        ("0", 0.0),
        ("-1", None),
        ("1.5", None),
        ("soon", None),
        ("", None),
        ("99999999999", None),
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),  # in the past: retry now
        ("Sun, 06 Nov 1994 08:49:37 GMT", 0.0),
    ],
)
def test_parse_retry_after(value: str, expected: float | None) -> None:
    assert parse_retry_after(value) == expected


def test_parse_retry_after_date_is_relative_to_now() -> None:
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 90, usegmt=True)
    assert parse_retry_after(date, now=now) == 90.0
    assert parse_retry_after(email.utils.formatdate(now + 90), now=now) == 90.0  # "-0000" form


async def test_redirect_is_a_failure_and_never_followed(receiver, other) -> None:
    target = other.url("/ok")  # inside the allowed networks, so only "no redirects" stops it
    outcome = await post_once(LOCAL, receiver.url(f"/redirect?to={target}"))
    assert (outcome.status_code, outcome.error) == (302, "redirect not followed")
    assert other.connections == 0 and other.requests == []


async def test_slow_receiver_times_out(receiver) -> None:
    policy = dataclasses.replace(LOCAL, timeout=0.5)
    outcome = await post_once(policy, receiver.url("/slow"))
    assert (outcome.status_code, outcome.error) == (None, "timeout")
    assert receiver.hits("/slow") == 1


async def test_refused_port() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    outcome = await post_once(LOCAL, f"http://127.0.0.1:{port}/hook")
    assert (outcome.status_code, outcome.error) == (None, "connection refused")


async def test_unknown_name_is_a_dns_failure() -> None:
    outcome = await post_once(LOCAL, "https://hooks.invalid/x", getaddrinfo=unknown_name)
    assert (outcome.status_code, outcome.error) == (None, "dns lookup failed")


async def test_response_body_never_reaches_the_outcome(receiver) -> None:
    outcome = await post_once(LOCAL, receiver.url("/secret"))
    assert (outcome.status_code, outcome.error) == (500, "http 500")
    assert SECRET not in repr(outcome)
    outcome = await post_once(LOCAL, receiver.url("/status/429?retry=3"))
    assert SECRET not in repr(outcome)


async def test_response_body_is_capped(receiver) -> None:
    """The receiver streams a body far larger than any buffer on the way; the client reads
    max_response_bytes, hangs up, and the receiver's writes fail long before it is all sent."""
    async with transport(LOCAL) as client:
        outcome = await asyncio.wait_for(
            client.post(receiver.url("/endless"), BODY, HEADERS), timeout=30
        )
    assert (outcome.status_code, outcome.error) == (200, None)
    await wait_for(lambda: receiver.endless_closed)
    # What the kernel buffers on both sides of a loopback connection, not what was read.
    assert receiver.endless_sent < ENDLESS_LIMIT // 4


async def test_keep_alive_reuses_one_connection(receiver) -> None:
    async with transport(LOCAL) as client:
        outcomes = [await client.post(receiver.url("/ok"), BODY, HEADERS) for _ in range(10)]
    assert [o.status_code for o in outcomes] == [200] * 10
    assert receiver.hits("/ok") == 10
    assert receiver.connections == 1


async def test_a_capped_body_does_not_poison_the_pool(receiver) -> None:
    """A connection left mid-body is closed, not pooled: the next attempt gets a fresh one and
    its own answer. (A body that arrived whole may leave its connection in the pool.)"""
    async with transport(LOCAL) as client:
        first = await asyncio.wait_for(
            client.post(receiver.url("/endless"), BODY, HEADERS), timeout=30
        )
        second = await client.post(receiver.url("/ok"), BODY, HEADERS)
    assert (first.status_code, second.status_code, second.error) == (200, 200, None)
    assert receiver.connections == 2
    async with transport(dataclasses.replace(LOCAL, max_response_bytes=1)) as client:
        third = await client.post(receiver.url("/secret"), BODY, HEADERS)
        fourth = await client.post(receiver.url("/ok"), BODY, HEADERS)
    assert (third.status_code, fourth.status_code, fourth.error) == (500, 200, None)


async def test_no_cookies_are_kept(receiver) -> None:
    # A name, not an address: cookie jars refuse cookies from bare IP hosts anyway.
    url = f"http://receiver.internal:{receiver.port}"
    async with transport(LOCAL, getaddrinfo=answering(["127.0.0.1"])) as client:
        await client.post(f"{url}/cookie", BODY, HEADERS)
        await client.post(f"{url}/ok", BODY, HEADERS)
    assert [p for p, _, _ in receiver.requests] == ["/cookie", "/ok"]
    assert [h.get("Cookie") for _, h, _ in receiver.requests] == [None, None]


# ---- TLS ----


async def test_tls_unknown_ca_fails_verification(tls_receiver) -> None:
    outcome = await post_once(LOCAL, tls_receiver.url("/ok", "https"))
    assert (outcome.status_code, outcome.error) == (None, "tls certificate verify failed")
    assert tls_receiver.requests == []


async def test_tls_with_the_ca_file(tls_receiver, ca_file) -> None:
    policy = dataclasses.replace(LOCAL, ca_file=ca_file)
    outcome = await post_once(policy, tls_receiver.url("/ok", "https"))
    assert (outcome.status_code, outcome.error) == (200, None)


async def test_tls_verifies_the_url_host_while_connecting_to_the_checked_address(
    tls_receiver, ca_file
) -> None:
    """The socket goes to the address the lookup answered; the certificate must still name
    the URL's host."""
    policy = dataclasses.replace(LOCAL, ca_file=ca_file)
    lookup = answering(["127.0.0.1"])
    good = await post_once(
        policy, f"https://receiver.test:{tls_receiver.port}/ok", getaddrinfo=lookup
    )
    assert (good.status_code, good.error) == (200, None)
    wrong = await post_once(
        policy, f"https://impostor.test:{tls_receiver.port}/ok", getaddrinfo=lookup
    )
    assert (wrong.status_code, wrong.error) == (None, "tls certificate verify failed")
    assert tls_receiver.hits("/ok") == 1


# ---- outbound safety ----

# (URL template, rule): {port} is the 127.0.0.1 receiver's, so a connection would be seen.
REFUSED_URLS = [
    ("https://127.0.0.1:{port}/ok", "loopback"),
    ("https://127.1.2.3:{port}/ok", "loopback"),
    ("https://localhost:{port}/ok", "loopback"),
    ("https://[::ffff:127.0.0.1]:{port}/ok", "loopback (IPv4-mapped)"),
    ("https://0.0.0.0:{port}/ok", "unspecified"),
    ("https://10.1.2.3/ok", "private (RFC 1918)"),
    ("https://172.16.0.1/ok", "private (RFC 1918)"),
    ("https://192.168.0.1/ok", "private (RFC 1918)"),
    ("https://169.254.169.254/latest/meta-data/", "link-local (includes cloud metadata)"),
    (
        "http://[::ffff:169.254.169.254]/latest/meta-data/",
        "link-local (includes cloud metadata) (IPv4-mapped)",
    ),
    ("https://100.64.0.1/ok", "shared address space (CGNAT, RFC 6598)"),
    ("https://[fc00::1]/ok", "unique-local"),
    ("https://[fe80::1]/ok", "link-local"),
    ("https://224.0.0.1/ok", "multicast"),
    ("https://240.0.0.1/ok", "reserved"),
    ("https://[64:ff9b::7f00:1]/ok", "loopback (NAT64)"),
    ("https://[2002:7f00:1::]/ok", "loopback (6to4)"),
]


@pytest.mark.parametrize(("template", "rule"), REFUSED_URLS)
async def test_non_public_addresses_are_refused_by_default(
    receiver, template: str, rule: str
) -> None:
    url = template.format(port=receiver.port)
    reason = await check_url(url, Policy())
    assert reason is not None and reason.endswith(f"non-public address: {rule}")
    outcome = await post_once(Policy(), url)
    assert outcome == Outcome(None, outcome.duration_ms, f"address not allowed: {rule}", None)
    assert receiver.connections == 0


async def test_ipv6_loopback_is_refused_by_default_and_allowed_when_opened(receiver6) -> None:
    url = receiver6.url("/ok")
    assert await check_url(url, Policy()) == "the host is a non-public address: loopback"
    assert (await post_once(Policy(), url)).error == "address not allowed: loopback"
    assert receiver6.connections == 0
    opened = Policy(allowed_networks=parse_networks("::1/128"))
    assert await check_url(url, opened) is None
    outcome = await post_once(opened, url)
    assert (outcome.status_code, outcome.error) == (200, None)


async def test_a_name_that_resolves_to_loopback_is_refused_without_naming_the_address(
    receiver,
) -> None:
    url = f"https://hooks.example.com:{receiver.port}/ok"
    for answer, rule in [
        (["127.0.0.1"], "loopback"),
        (["93.184.216.34", "127.0.0.1"], "loopback"),  # every address must pass
        (["169.254.169.254"], "link-local (includes cloud metadata)"),
        (["::ffff:10.0.0.7"], "private (RFC 1918) (IPv4-mapped)"),
    ]:
        reason = await check_url(url, Policy(), getaddrinfo=answering(answer))
        assert reason == f"the host resolves to a non-public address: {rule}"
        assert not any(address in reason for address in answer)
        outcome = await post_once(Policy(), url, getaddrinfo=answering(answer))
        assert outcome.error == f"address not allowed: {rule}"
        assert not any(address in repr(outcome) for address in answer)
    assert receiver.connections == 0


async def test_dns_rebinding_is_refused_at_delivery(receiver) -> None:
    """Public when the endpoint is checked, loopback when the delivery looks it up again: the
    delivery refuses and never connects."""
    calls: list[str] = []
    lookup = answering(["93.184.216.34"], ["127.0.0.1"], calls=calls)
    url = f"https://rebind.example.com:{receiver.port}/ok"
    assert await check_url(url, Policy(), getaddrinfo=lookup) is None
    outcome = await post_once(Policy(), url, getaddrinfo=lookup)
    assert outcome.error == "address not allowed: loopback"
    assert calls == ["rebind.example.com", "rebind.example.com"]
    assert receiver.connections == 0


async def test_delivery_connects_to_the_address_it_checked(receiver) -> None:
    """One lookup per new connection, and the connection goes to its answer: a name that
    resolves inside the allowed networks reaches the receiver over http."""
    calls: list[str] = []
    lookup = answering(["127.0.0.1"], calls=calls)
    url = f"http://receiver.internal:{receiver.port}/ok"
    assert await check_url(url, LOCAL, getaddrinfo=lookup) is None
    async with transport(LOCAL, getaddrinfo=lookup) as client:
        outcomes = [await client.post(url, BODY, HEADERS) for _ in range(3)]
    assert [o.error for o in outcomes] == [None] * 3
    assert receiver.connections == 1 and receiver.hits("/ok") == 3
    assert calls == ["receiver.internal", "receiver.internal"]  # check_url's, then the pool's


async def test_every_new_connection_looks_the_host_up_again(receiver) -> None:
    """No answer is remembered past its connection: once the first connection is gone, the
    next delivery resolves afresh and is judged on the new answer."""
    calls: list[str] = []
    lookup = answering(["127.0.0.1"], ["10.0.0.1"], calls=calls)
    url = f"http://receiver.internal:{receiver.port}"
    async with transport(LOCAL, getaddrinfo=lookup) as client:
        first = await asyncio.wait_for(client.post(f"{url}/endless", BODY, HEADERS), timeout=30)
        second = await client.post(f"{url}/ok", BODY, HEADERS)
    assert (first.status_code, first.error) == (200, None)
    assert second.error == "address not allowed: private (RFC 1918)"
    assert len(calls) == 2 and receiver.connections == 1


async def test_allowed_networks_open_http_to_local_receivers(receiver) -> None:
    url = receiver.url("/ok")
    assert await check_url(url, LOCAL) is None
    outcome = await post_once(LOCAL, url)
    assert (outcome.status_code, outcome.error) == (200, None)


async def test_http_only_inside_the_allowed_networks() -> None:
    public = answering(["93.184.216.34"])
    mixed = answering(["127.0.0.1", "93.184.216.34"])
    assert await check_url("http://hooks.example.com/x", LOCAL, getaddrinfo=public) == HTTPS_ONLY
    assert await check_url("http://hooks.example.com/x", Policy(), getaddrinfo=public) == (
        HTTPS_ONLY
    )
    assert await check_url("http://hooks.example.com/x", LOCAL, getaddrinfo=mixed) == HTTPS_ONLY
    assert await check_url("http://8.8.8.8/x", LOCAL) == HTTPS_ONLY
    assert await check_url("https://hooks.example.com/x", LOCAL, getaddrinfo=public) is None
    # At delivery the refusal comes from the lookup, before any connection to the address.
    for lookup in (public, mixed):
        outcome = await post_once(LOCAL, "http://hooks.example.com/x", getaddrinfo=lookup)
        assert outcome.error == "http only inside webhook_allowed_networks"
    outcome = await post_once(LOCAL, "http://8.8.8.8/x")
    assert outcome.error == "http only inside webhook_allowed_networks"


async def test_an_allowed_network_does_not_open_others(receiver) -> None:
    policy = Policy(allowed_networks=parse_networks("10.0.0.0/8"))
    outcome = await post_once(policy, receiver.url("/ok"))
    assert outcome.error == "address not allowed: loopback"
    assert receiver.connections == 0


async def test_policy_parses_cidr_strings() -> None:
    policy = Policy(allowed_networks=("127.0.0.0/8",))  # type: ignore[arg-type]
    assert policy == LOCAL
    with pytest.raises(ValueError, match="nonsense"):
        Policy(allowed_networks=("nonsense",))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://hooks.example.com/x", None),
        ("https://hooks.example.com:8443/x?token=abc", None),
        ("https://8.8.8.8/x", None),
        ("https://[2606:4700::1111]/x", None),
        ("HTTPS://Hooks.Example.COM/x", None),
        ("http://hooks.example.com/x", HTTPS_ONLY),
        ("ftp://hooks.example.com/x", HTTPS_ONLY),
        ("javascript:alert(1)", HTTPS_ONLY),
        ("hooks.example.com/x", "the URL must be absolute (https://host/...)"),
        ("//hooks.example.com/x", "the URL must be absolute (https://host/...)"),
        ("https://user:pw@hooks.example.com/x", "the URL must not carry credentials"),
        ("https://user@hooks.example.com/x", "the URL must not carry credentials"),
        ("https://hooks.example.com/x#frag", "the URL must not have a fragment"),
        ("https://hooks.example.com/x#", "the URL must not have a fragment"),
        ("https:///x", "the URL must have a host"),
        ("https://hooks.example.com/a b", "the URL must not contain spaces or control characters"),
        (
            "https://hooks.example.com/\r\nX: y",
            "the URL must not contain spaces or control characters",
        ),
        ("https://hooks.example.com:0/x", "the URL's port must be between 1 and 65535"),
        ("https://hooks.example.com:70000/x", "the URL is not valid"),
        ("https://[::1/x", "the URL is not valid"),
        # Legacy IPv4 spellings that socket APIs map onto 127.0.0.1:
        ("https://127.1/x", "the URL's host is not a valid address"),
        ("https://2130706433/x", "the URL's host is not a valid address"),
        ("https://0177.0.0.1/x", "the URL's host is not a valid address"),
        ("https://hooks.example.com/" + "a" * 2048, "the URL must be at most 2048 characters"),
    ],
)
async def test_check_url_rules(url: str, reason: str | None) -> None:
    assert await check_url(url, Policy(), getaddrinfo=answering(["93.184.216.34"])) == reason


async def test_check_url_unresolvable_host() -> None:
    reason = await check_url("https://hooks.invalid/x", Policy(), getaddrinfo=unknown_name)
    assert reason == "the host does not resolve"
    assert await check_url("https://empty.example/x", Policy(), getaddrinfo=answering([])) == (
        "the host does not resolve"
    )


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("https://user:pw@127.0.0.1/x", "invalid url: the URL must not carry credentials"),
        ("ftp://127.0.0.1/x", "invalid url: " + HTTPS_ONLY),
        ("https://127.1/x", "invalid url: the URL's host is not a valid address"),
    ],
)
async def test_post_applies_the_url_rules(url: str, error: str) -> None:
    outcome = await post_once(LOCAL, url)
    assert (outcome.status_code, outcome.error) == (None, error)


async def test_post_after_close_is_a_mistake(receiver) -> None:
    client = Transport(LOCAL)
    assert (await client.post(receiver.url("/ok"), BODY, HEADERS)).error is None
    await client.close()
    with pytest.raises(RuntimeError):
        await client.post(receiver.url("/ok"), BODY, HEADERS)
    await client.close()  # twice is harmless
