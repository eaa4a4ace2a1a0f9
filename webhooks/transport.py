"""The outbound HTTP client every webhook delivery goes through, on aiohttp: keep-alive pools,
TLS verification, one deadline per attempt, no redirects, no cookies, the response body capped
and dropped. The address rules (webhooks/networks.py) are enforced where the connection is
made: a resolver checks every address of the host and hands the connector only those, so the
socket goes to a checked address and DNS rebinding finds no second lookup to answer."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import email.utils
import errno
import ipaddress
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib import metadata
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from webhooks.networks import Address, Network, is_allowed, parse_networks, refusal

MAX_URL_LENGTH = 2048
# A host name's limits in DNS (RFC 1035 2.3.4): labels of 1 to 63 characters, 253 in all
# (without the optional trailing dot). The name lookup's IDNA codec raises on a name beyond them.
MAX_LABEL = 63
MAX_HOST_NAME = 253
# Bytes asked of the response stream at a time while it is drained.
_CHUNK = 16384
# URLs whose parse and literal-address check a transport keeps (then it starts afresh).
_TARGETS_KEPT = 1024
# Delta-seconds longer than this many digits (about 300 years) is nonsense, not a delay.
_RETRY_AFTER_DIGITS = 10

HTTPS_ONLY = "the URL must use https (http only inside webhook_allowed_networks)"

AddrInfo = tuple[int, int, int, str, tuple[Any, ...]]
# The name lookup, injectable for tests: (host, port) -> getaddrinfo's 5-tuples.
GetAddrInfo = Callable[[str, int], Awaitable[Sequence[AddrInfo]]]


def _user_agent() -> str:
    try:
        version = metadata.version("workspace-data-api")
    except metadata.PackageNotFoundError:
        version = "1"
    return f"workspace-data-api-webhooks/{version}"


USER_AGENT = _user_agent()


@dataclasses.dataclass(frozen=True)
class Policy:
    """What deliveries may reach and how long they may take."""

    # The operator's webhook_allowed_networks (CIDR strings are parsed too).
    allowed_networks: tuple[Network, ...] = ()
    # Seconds for a whole attempt: connect, send, and the response's status and headers.
    timeout: float = 15.0
    # The response body is read up to this many bytes and dropped; never stored.
    max_response_bytes: int = 65536
    # An extra CA bundle, trusted besides the system's (a receiver with a private CA).
    ca_file: str | None = None

    def __post_init__(self) -> None:
        networks = parse_networks(str(net) for net in self.allowed_networks)
        object.__setattr__(self, "allowed_networks", networks)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One attempt's result. `error` is a short fixed phrase: never the receiver's body, the
    URL, the headers or a resolved address."""

    status_code: int | None  # None when no HTTP response arrived
    duration_ms: int
    error: str | None  # None exactly when the receiver answered 2xx
    retry_after: float | None  # seconds, from Retry-After on a 429 or 503


# Phrases of attempts this service refused to make (the outbound policy, an unusable URL).
REFUSED_PREFIXES = ("address not allowed", "http only inside", "invalid url")


def outcome_kind(outcome: Outcome) -> str:
    """The attempt's outcome for the metrics: delivered, timeout, refused (never sent: the
    policy or the URL) or failed (any other answer or network error)."""
    if outcome.error is None:
        return "delivered"
    if outcome.error == "timeout":
        return "timeout"
    if outcome.error.startswith(REFUSED_PREFIXES):
        return "refused"
    return "failed"


class AddressRefused(Exception):
    """The policy refuses an address the host resolved to (or the literal address).
    `rule` names the rule; None means plain http outside webhook_allowed_networks."""

    def __init__(self, rule: str | None) -> None:
        super().__init__(rule or "http outside webhook_allowed_networks")
        self.rule = rule


class _InvalidURL(Exception):
    """A URL that breaks a rule of its own (no lookup needed); the message is the reason."""


async def system_getaddrinfo(host: str, port: int) -> Sequence[AddrInfo]:
    """The loop's getaddrinfo (a worker thread): every address of every family."""
    return await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)


async def check_url(url: str, policy: Policy, getaddrinfo: GetAddrInfo | None = None) -> str | None:
    """None when `url` may be an endpoint's URL, else the reason for the client: it names
    the rule, never an address the host resolved to."""
    try:
        target = _parse_url(url)
    except _InvalidURL as exc:
        return str(exc)
    host = target.raw_host
    assert host is not None
    literal = _literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            async with asyncio.timeout(policy.timeout):
                addresses = _addresses(
                    await (getaddrinfo or system_getaddrinfo)(host, _port(target))
                )
        except (OSError, TimeoutError, UnicodeError):
            # UnicodeError: the IDNA codec refusing a name that _parse_url let through.
            addresses = []
        if not addresses:
            return "the host does not resolve"
    try:
        _check(addresses, target.scheme, policy.allowed_networks)
    except AddressRefused as exc:
        if exc.rule is None:
            return HTTPS_ONLY
        subject = "the host is" if literal is not None else "the host resolves to"
        return f"{subject} a non-public address: {exc.rule}"
    return None


class Transport:
    """POSTs webhook bodies. One session per scheme (https, and http for the allowed
    networks), created on first use on the running loop; `close()` releases the pools."""

    def __init__(self, policy: Policy, getaddrinfo: GetAddrInfo | None = None) -> None:
        self._policy = policy
        self._getaddrinfo = getaddrinfo or system_getaddrinfo
        self._sessions: dict[str, aiohttp.ClientSession] = {}
        self._ssl: ssl.SSLContext | None = None
        self._closed = False
        # URLs that passed the checks that need no lookup (their verdict depends on the URL
        # and the policy alone); a host name is still resolved and checked per new connection.
        self._targets: dict[str, URL] = {}

    @property
    def timeout(self) -> float:
        """The longest an attempt takes (seconds)."""
        return self._policy.timeout

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> Outcome:
        """One attempt. Every failure of the URL, the network or the receiver is an Outcome;
        only misuse (posting after close) raises."""
        if self._closed:
            raise RuntimeError("the transport is closed")
        started = time.monotonic()
        status: int | None = None
        retry_after: float | None = None
        error: str | None = None
        try:
            target = self._targets.get(url)
            if target is None:
                target = _parse_url(url)
                assert target.raw_host is not None
                literal = _literal(target.raw_host)
                if literal is not None:  # aiohttp connects to literals without the resolver
                    _check([literal], target.scheme, self._policy.allowed_networks)
                if len(self._targets) >= _TARGETS_KEPT:
                    self._targets.clear()
                self._targets[url] = target
            sent = {k: v for k, v in headers.items() if k.lower() != "user-agent"}
            sent["User-Agent"] = USER_AGENT
            session = self._session(target.scheme)
            async with session.post(
                target, data=body, headers=sent, allow_redirects=False
            ) as response:
                status = response.status
                if status in (429, 503):
                    retry_after = parse_retry_after(response.headers.get("Retry-After"))
                await self._drain(response)
        except _InvalidURL as exc:
            error = f"invalid url: {exc}"
        except AddressRefused as exc:
            error = (
                "http only inside webhook_allowed_networks"
                if exc.rule is None
                else f"address not allowed: {exc.rule}"
            )
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            error = describe(exc)
        if status is not None and error is None and not 200 <= status < 300:
            error = "redirect not followed" if 300 <= status < 400 else f"http {status}"
        duration_ms = round((time.monotonic() - started) * 1000)
        return Outcome(status, duration_ms, error, retry_after)

    async def close(self) -> None:
        self._closed = True
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            await session.close()

    def _session(self, scheme: str) -> aiohttp.ClientSession:
        session = self._sessions.get(scheme)
        if session is None:
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
                if self._policy.ca_file:
                    self._ssl.load_verify_locations(cafile=self._policy.ca_file)
            connector = aiohttp.TCPConnector(
                resolver=CheckedResolver(self._policy, self._getaddrinfo, scheme),
                # Every new connection resolves and checks afresh; pooled ones need no lookup.
                use_dns_cache=False,
                # No cap, in total or per host: the dispatcher bounds the attempts in flight
                # (per endpoint and per process), and a cap per host would let the slow
                # endpoints of one host hold the connections its other endpoints need.
                limit=0,
                limit_per_host=0,
                ssl=self._ssl,
            )
            session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                timeout=aiohttp.ClientTimeout(total=self._policy.timeout),
                # The body is dropped unread: never inflate it (a small gzip can be huge).
                auto_decompress=False,
                # Proxy variables would route around the address checks.
                trust_env=False,
            )
            self._sessions[scheme] = session
        return session

    async def _drain(self, response: aiohttp.ClientResponse) -> None:
        """Read at most max_response_bytes and drop them; a longer (or stalled) body closes
        the connection instead of returning it to the pool."""
        remaining = self._policy.max_response_bytes
        try:
            while remaining > 0:
                chunk = await response.content.read(min(_CHUNK, remaining))
                if not chunk:
                    return
                remaining -= len(chunk)
            if not response.content.at_eof():
                response.close()
        except (TimeoutError, aiohttp.ClientError, OSError):
            # The status and headers have arrived; the body is not the receiver's answer.
            response.close()


class CheckedResolver(AbstractResolver):
    """aiohttp's resolver for one scheme: looks the host up, checks every address (all must
    pass, as at check_url), and returns them as numeric addresses to connect to."""

    def __init__(self, policy: Policy, getaddrinfo: GetAddrInfo, scheme: str) -> None:
        self._policy = policy
        self._getaddrinfo = getaddrinfo
        self._scheme = scheme

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        try:
            infos = await self._getaddrinfo(host, port)  # OSError becomes "dns lookup failed"
        except UnicodeError:  # the IDNA codec refusing the name: no such host, like NONAME
            raise socket.gaierror(socket.EAI_NONAME, "not a valid host name") from None
        addresses = _addresses(infos)
        if not addresses:
            raise socket.gaierror(socket.EAI_NONAME, "no address")
        _check(addresses, self._scheme, self._policy.allowed_networks)
        numeric = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV
        return [
            ResolveResult(
                hostname=host,
                host=str(address),
                port=port,
                family=socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                proto=socket.IPPROTO_TCP,
                flags=numeric,
            )
            for address in addresses
            if family in (0, socket.AF_INET6 if address.version == 6 else socket.AF_INET)
        ]

    async def close(self) -> None:
        pass


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a Retry-After value: delta-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value) if len(value) <= _RETRY_AFTER_DIGITS else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000": the date is in UTC all the same
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def describe(exc: BaseException) -> str:
    """A fixed phrase for a failed attempt; exception texts may name the host, so none is used."""
    if isinstance(exc, TimeoutError):  # aiohttp's timeouts are TimeoutErrors too
        return "timeout"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return "tls certificate verify failed"
    if isinstance(exc, aiohttp.ClientSSLError):
        return "tls error"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return "dns lookup failed"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "server disconnected"
    if isinstance(exc, aiohttp.InvalidURL):
        return "invalid url"
    if isinstance(exc, aiohttp.ClientResponseError):
        return "invalid http response"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return _errno_phrase(exc.os_error.errno, "connection failed")
    if isinstance(exc, OSError):  # ClientOSError included
        return _errno_phrase(exc.errno, "connection failed")
    return "request failed"


_ERRNO_PHRASES = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.EPIPE: "connection reset",
    errno.ENETUNREACH: "network unreachable",
    errno.EHOSTUNREACH: "host unreachable",
    errno.EADDRNOTAVAIL: "address not available",
}


def _errno_phrase(number: int | None, default: str) -> str:
    return _ERRNO_PHRASES.get(number or 0, default)


def _parse_url(url: str) -> URL:
    """The URL as aiohttp will use it, or _InvalidURL naming the broken rule."""
    if len(url) > MAX_URL_LENGTH:
        raise _InvalidURL(f"the URL must be at most {MAX_URL_LENGTH} characters")
    if any(ch <= " " or ch == "\x7f" for ch in url):
        raise _InvalidURL("the URL must not contain spaces or control characters")
    try:
        target = URL(url)
        target.port  # noqa: B018 (an out-of-range port raises here)
    except ValueError:
        raise _InvalidURL("the URL is not valid") from None
    if not target.scheme:
        raise _InvalidURL("the URL must be absolute (https://host/...)")
    if target.scheme not in ("http", "https"):
        raise _InvalidURL(HTTPS_ONLY)
    if (
        target.raw_user is not None
        or target.raw_password is not None
        or "@" in (target.raw_authority or "")
    ):
        raise _InvalidURL("the URL must not carry credentials")
    if "#" in url:
        raise _InvalidURL("the URL must not have a fragment")
    if not target.raw_host:
        raise _InvalidURL("the URL must have a host")
    if not 0 < _port(target) < 65536:
        raise _InvalidURL("the URL's port must be between 1 and 65535")
    if reason := _host_name_rule(target.raw_host):
        raise _InvalidURL(reason)
    # aiohttp takes a host with a colon, or of digits and dots, for an address and connects
    # to it without the resolver: such a host must be an address this module can judge.
    if (":" in target.raw_host or target.raw_host.replace(".", "").isdigit()) and _literal(
        target.raw_host
    ) is None:
        raise _InvalidURL("the URL's host is not a valid address")
    return target


def _host_name_rule(host: str) -> str | None:
    """The DNS rule a host name breaks (an address in brackets is not a name), or None."""
    if host.startswith("[") or ":" in host:
        return None
    name = host[:-1] if host.endswith(".") else host
    if len(name) > MAX_HOST_NAME:
        return f"the URL's host name must be at most {MAX_HOST_NAME} characters"
    if any(not 0 < len(label) <= MAX_LABEL for label in name.split(".")):
        return (
            f"each label of the URL's host name (between dots) must be 1 to {MAX_LABEL} "
            "characters long"
        )
    return None


def _port(target: URL) -> int:
    port = target.port
    return (443 if target.scheme == "https" else 80) if port is None else port


def _literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _addresses(infos: Sequence[AddrInfo]) -> list[Address]:
    """The distinct addresses of getaddrinfo's answer, in its order (IPv6 scope ids kept)."""
    found: list[Address] = []
    for family, _type, _proto, _name, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        text = str(sockaddr[0])
        if family == socket.AF_INET6 and len(sockaddr) > 3 and sockaddr[3] and "%" not in text:
            text = f"{text}%{sockaddr[3]}"
        address = ipaddress.ip_address(text)
        if address not in found:
            found.append(address)
    return found


def _check(addresses: Sequence[Address], scheme: str, allowed: tuple[Network, ...]) -> None:
    """Raise AddressRefused unless every address may be contacted with this scheme."""
    for address in addresses:
        rule = refusal(address, allowed)
        if rule is not None:
            raise AddressRefused(rule)
    if scheme != "https" and not all(is_allowed(address, allowed) for address in addresses):
        raise AddressRefused(None)
