"""The API's client for the telephony provider's recording media.

Built once at start-up from configuration. `UpstreamClient.open` sends one request, judges the
answer from its head alone (before the caller writes a byte), and hands back an
`UpstreamResponse` (telephony/response.py) whose body the caller borrows piece by piece.

Why not Tornado's `AsyncHTTPClient`: its ``streaming_callback`` cannot push back, so a slow
API client would make a whole recording pile up in memory. Here each connection is an asyncio
buffered protocol (telephony/connection.py) that lends its few buffers to the caller and stops
reading while all of them are lent out; on Linux the rest of a large body moves socket to
socket with splice(2) (telephony/splice.py). Responses are parsed by telephony/http1.py.

Connections are kept alive: a response read to its end leaves its connection in a small pool
for the next request (a seek then costs no TCP handshake). A request that finds its pooled
connection closed by the provider is sent once more on a new connection.

`UpstreamClient.delete_recording` deletes a recording at the provider (the recording retention
sweep uses it). Redirects are never followed. Every failure becomes `UpstreamNotFound`,
`UpstreamRangeNotSatisfiable` or `UpstreamError` (telephony/errors.py), whose messages never
name the provider's host, path or credentials.
"""

from __future__ import annotations

import asyncio
import base64
import re
import ssl
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

from tornado import httputil

from telephony import http1
from telephony.connection import SLOT_BYTES, Connection
from telephony.errors import UpstreamError, UpstreamNotFound, UpstreamRangeNotSatisfiable
from telephony.response import ContentRange, UpstreamResponse

SAFE_REF = re.compile(r"[A-Za-z0-9_-]{1,128}")
FIELD_VALUE = re.compile(r"[\x20-\x7e]*")
# At most 18 digits: int64 sizes, never a string too long for int() to convert.
CONTENT_RANGE = re.compile(r"bytes ([0-9]{1,18})-([0-9]{1,18})/([0-9]{1,18}|\*)")
UNSATISFIED_RANGE = re.compile(r"bytes \*/([0-9]{1,18})")
MAX_IDLE = 8  # idle keep-alive connections kept per client
IDLE_SECONDS = 15.0  # an idle connection older than this is not reused

T = TypeVar("T")


class UpstreamClient:
    """Fetches recording media from the provider with the service's own credentials.

    The request URL is the configured base URL plus the provider's fixed path for a stored
    recording reference, nothing else; the reference must be a plain token.
    """

    def __init__(
        self,
        base_url: str,
        account_id: str,
        auth_token: str,
        *,
        connect_timeout: float = 5.0,
        header_timeout: float = 10.0,
        idle_timeout: float = 30.0,
        buffer_bytes: int = 2 * 1024 * 1024,
    ):
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("the provider base URL must be an absolute http(s) URL")
        self._tls = ssl.create_default_context() if parts.scheme == "https" else None
        self._host = parts.hostname
        default_port = 443 if self._tls else 80
        self._port = parts.port or default_port
        self._host_header = parts.netloc.rpartition("@")[2]
        self._prefix = f"{parts.path.rstrip('/')}/2010-04-01/Accounts/{quote(account_id, safe='')}"
        token = base64.b64encode(f"{account_id}:{auth_token}".encode()).decode()
        self._authorization = f"Basic {token}"
        self._connect_timeout = connect_timeout
        self._header_timeout = header_timeout
        self._idle_timeout = idle_timeout
        self._buffer_bytes = buffer_bytes
        self._slot_bytes = max(16 * 1024, min(SLOT_BYTES, buffer_bytes // 2))
        self._idle: list[Connection] = []

    @classmethod
    def from_config(cls, config: Any) -> UpstreamClient | None:
        """The client for the configured provider, or None when no provider_url is set."""
        if not config.provider_url:
            return None
        return cls(
            config.provider_url,
            config.provider_account_id,
            config.provider_auth_token,
            connect_timeout=config.provider_connect_timeout,
            header_timeout=config.provider_header_timeout,
        )

    def __repr__(self) -> str:
        return "<UpstreamClient>"  # never the host or the credentials

    async def open(
        self,
        ref: str,
        *,
        method: str = "GET",
        range_header: str | None = None,
        if_range: str | None = None,
    ) -> UpstreamResponse:
        """Ask for recording `ref` (optionally one byte range) and judge the answer's head.

        Returns a 200 or 206 response ready to stream; raises `UpstreamNotFound`,
        `UpstreamRangeNotSatisfiable` or `UpstreamError`. A 200 to a range request is a
        contradiction unless `if_range` was sent (then it means the validator changed).
        """
        if not SAFE_REF.fullmatch(ref):
            raise UpstreamNotFound("malformed recording reference")
        if range_header is None:
            if_range = None  # meaningless without a range
        lines = [
            f"{method} {self._prefix}/Recordings/{ref}.mp3 HTTP/1.1",
            f"Host: {self._host_header}",
            f"Authorization: {self._authorization}",
            "Accept: audio/mpeg",
            "User-Agent: workspace-data-api",
        ]
        for name, value in (("Range", range_header), ("If-Range", if_range)):
            if value is not None:
                if not FIELD_VALUE.fullmatch(value):
                    raise ValueError(f"unsafe {name} value")
                lines.append(f"{name}: {value}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

        def judge(
            code: int, headers: httputil.HTTPHeaders, connection: Connection
        ) -> UpstreamResponse:
            return self._judge(method, code, headers, range_header, if_range, connection)

        return await self._exchange(method, request, judge)

    async def delete_recording(self, ref: str) -> None:
        """Delete recording `ref` at the provider (Twilio's ``DELETE .../Recordings/{Sid}.json``).

        Returns when the provider confirms the recording is gone: 204, or 404 (already gone).
        Any other answer, a timeout or a connection failure raises `UpstreamError`, so the
        caller keeps its reference and tries again later; a malformed ref raises
        `UpstreamNotFound`, as `open` does. Nothing raised names the ref, host or credentials.
        """
        if not SAFE_REF.fullmatch(ref):
            raise UpstreamNotFound("malformed recording reference")
        lines = [
            f"DELETE {self._prefix}/Recordings/{ref}.json HTTP/1.1",
            f"Host: {self._host_header}",
            f"Authorization: {self._authorization}",
            "Accept: application/json",
            "User-Agent: workspace-data-api",
            "Content-Length: 0",
        ]
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

        def judge(code: int, headers: httputil.HTTPHeaders, connection: Connection) -> None:
            # The answer's body (if any) is never read: the status says it all, and the
            # connection is not kept (Connection reads no body but a 200's or a 206's).
            connection.abort()
            if code in (204, 404):
                return
            if 300 <= code < 400:
                raise UpstreamError(f"the provider answered {code}; redirects are not followed")
            raise UpstreamError(f"the provider answered {code} to a delete")

        await self._exchange("DELETE", request, judge)

    async def _exchange(
        self,
        method: str,
        request: bytes,
        judge: Callable[[int, httputil.HTTPHeaders, Connection], T],
    ) -> T:
        """Send `request` and hand the answer's head to `judge`. A kept-alive connection that
        the provider closed as the request went out is replaced once by a new one (every
        request sent here, GET, HEAD and DELETE, is idempotent)."""
        for attempt in ("reused", "fresh"):
            connection = self._idle_connection() if attempt == "reused" else None
            if connection is None:
                attempt = "fresh"
                connection = await self._connect()
            x = connection.begin(method)
            assert connection.transport is not None
            try:
                connection.transport.write(request)
                async with asyncio.timeout(self._header_timeout):
                    code, headers = await x.head
                return judge(code, headers, connection)
            except BaseException as exc:
                connection.abort()
                if isinstance(exc, TimeoutError):
                    raise UpstreamError("the provider sent no response in time") from None
                if attempt == "reused" and isinstance(exc, UpstreamError) and x.received == 0:
                    # The provider closed the idle connection as the request went out: ask
                    # again once on a new connection.
                    continue
                raise
        raise AssertionError("unreachable")

    async def content_length(self, ref: str) -> int | None:
        """The recording's size from a HEAD request (None when the provider doesn't say)."""
        async with await self.open(ref, method="HEAD") as response:
            return response.complete_length

    def _idle_connection(self) -> Connection | None:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()  # the most recently used: least likely to be closed
            if not connection.closed and now - connection.idle_since < IDLE_SECONDS:
                return connection
            connection.abort()
        return None

    def _release(self, connection: Connection) -> None:
        """Keep a connection whose last response was read to its end for the next request."""
        if len(self._idle) >= MAX_IDLE or connection.closed:
            connection.abort()
            return
        connection.idle()
        connection.idle_since = time.monotonic()
        self._idle.append(connection)

    def _lost(self, connection: Connection) -> None:
        if connection in self._idle:
            self._idle.remove(connection)

    async def _connect(self) -> Connection:
        loop = asyncio.get_running_loop()
        # asyncio.timeout, never wait_for: on Python 3.11 wait_for returns the result, dropping
        # a cancellation that lands as the connection completes (the client left just then).
        try:
            async with asyncio.timeout(self._connect_timeout):
                _, connection = await loop.create_connection(
                    lambda: Connection(self._buffer_bytes, self._slot_bytes, self._lost),
                    self._host,
                    self._port,
                    ssl=self._tls,
                    server_hostname=self._host if self._tls else None,
                )
        except TimeoutError:
            raise UpstreamError("connecting to the provider timed out") from None
        except OSError as exc:
            raise UpstreamError(
                f"connecting to the provider failed ({type(exc).__name__})"
            ) from None
        return connection

    def _judge(
        self,
        method: str,
        code: int,
        headers: httputil.HTTPHeaders,
        range_header: str | None,
        if_range: str | None,
        connection: Connection,
    ) -> UpstreamResponse:
        if code in (404, 410):
            raise UpstreamNotFound("the provider has no such recording")
        if code == 416 and range_header is not None:
            match = UNSATISFIED_RANGE.fullmatch(headers.get("Content-Range", ""))
            raise UpstreamRangeNotSatisfiable(int(match.group(1)) if match else None)
        if 300 <= code < 400:
            raise UpstreamError(f"the provider answered {code}; redirects are not followed")
        if code not in (200, 206):
            raise UpstreamError(f"the provider answered {code}")
        media_type = headers.get("Content-Type", "").split(";")[0].strip().lower()
        if not media_type.startswith("audio/"):
            raise UpstreamError("the provider answered with a non-audio content type")
        try:
            content_length = http1.content_length(headers.get("Content-Length"))
        except http1.ParseError:
            raise UpstreamError("the provider sent an invalid Content-Length") from None
        content_range = None
        expected = 0 if method == "HEAD" else content_length
        if code == 206:
            match = CONTENT_RANGE.fullmatch(headers.get("Content-Range", ""))
            if range_header is None or match is None:
                raise UpstreamError("the provider sent a partial answer that was not asked for")
            first, last, total = match.groups()
            content_range = ContentRange(
                int(first), int(last), None if total == "*" else int(total)
            )
            size = content_range.end - content_range.start + 1
            if method != "HEAD":
                expected = size
            complete = content_range.complete_length
            if (
                size <= 0
                or (complete is not None and complete <= content_range.end)
                or (content_length is not None and content_length != size)
            ):
                raise UpstreamError("the provider sent an inconsistent partial answer")
        elif range_header is not None and if_range is None:
            raise UpstreamError("the provider ignored the requested range")
        return UpstreamResponse(
            code,
            headers,
            content_range,
            content_length,
            expected,
            connection,
            self._idle_timeout,
            self._release,
        )
