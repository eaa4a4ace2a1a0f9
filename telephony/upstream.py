"""The API's client for the telephony provider's recording media.

Built once at start-up from configuration. `UpstreamClient.open` sends one request on a fresh
connection, judges the answer from its head alone (before the caller writes a byte), and hands
back an `UpstreamResponse` to iterate for the body.

Why not Tornado's `AsyncHTTPClient`: its ``streaming_callback`` cannot push back, so a slow
API client would make a whole recording pile up in memory. Here the socket is read by an
asyncio protocol that stops reading (``pause_reading``) once `buffer_bytes` wait unconsumed
and resumes when the consumer has drained half of them; TCP flow control then slows the
provider down. An asyncio protocol rather than Tornado's `HTTP1Connection` over an `IOStream`
because it hands each received ``bytes`` object on without copying it again: it measured
about half the CPU per byte, which is what bounds the relay's throughput. Memory per transfer
stays under `buffer_bytes` plus one read (1 MiB) plus the kernel's socket buffers, whatever
the recording's size or the client's speed.

Redirects are never followed. Every failure becomes `UpstreamNotFound`,
`UpstreamRangeNotSatisfiable` or `UpstreamError`, whose messages never name the provider's
host, path or credentials.
"""

from __future__ import annotations

import asyncio
import base64
import re
import ssl
from collections import deque
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from tornado import httputil

SAFE_REF = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
FIELD_VALUE = re.compile(r"^[\x20-\x7e]*$")
CONTENT_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")
UNSATISFIED_RANGE = re.compile(r"^bytes \*/(\d+)$")
HEAD_END = re.compile(rb"\r?\n\r?\n")
CHUNK_SIZE_LINE = re.compile(rb"^([0-9a-fA-F]{1,15})[ \t]*(;.*)?$")
MAX_HEAD_BYTES = 64 * 1024
MAX_LINE_BYTES = 4096
READ_SIZE = 1024 * 1024


class UpstreamNotFound(Exception):
    """The provider has no such recording (the API answers 404)."""


class UpstreamRangeNotSatisfiable(Exception):
    """The provider refused the range (the API answers 416)."""

    def __init__(self, complete_length: int | None):
        super().__init__("range not satisfiable")
        self.complete_length = complete_length


class UpstreamError(Exception):
    """The provider failed or misbehaved (the API answers 502, or aborts mid-body)."""


@dataclass(frozen=True)
class ContentRange:
    """A 206 response's ``Content-Range``; complete_length is None for ``/*``."""

    start: int
    end: int
    complete_length: int | None


class _ResponseReader(asyncio.Protocol):
    """Parses one HTTP/1.1 response off the socket: the head into a future, the body into a
    queue that holds at most about `high_water` bytes before reading pauses."""

    def __init__(self, method: str, high_water: int):
        self.loop = asyncio.get_running_loop()
        self.head: asyncio.Future[tuple[int, httputil.HTTPHeaders]] = self.loop.create_future()
        self.method = method
        self.high_water = high_water
        self.transport: asyncio.Transport | None = None
        self.queue: deque[bytes] = deque()
        self.queued = 0
        self.paused = False
        self.outcome: str | None = None  # "end" or "broken" once the body is over
        self.waiter: asyncio.Future[bool] | None = None  # the consumer waits here for data
        self._buffer = bytearray()  # unparsed head or chunked framing
        self._mode = "head"
        self._remaining = 0

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if hasattr(transport, "max_size"):
            # asyncio's plain socket transport reads 256 KiB per recv by default; 1 MiB reads
            # halve the Python overhead per byte (measured). Other transports keep theirs.
            transport.max_size = READ_SIZE

    def data_received(self, data: bytes) -> None:
        if self._mode == "length" and not self._buffer:
            # The common case, a Content-Length body: pass the bytes on as they are.
            if len(data) > self._remaining:
                data = data[: self._remaining]
            self._remaining -= len(data)
            self._emit(data)
            if self._remaining == 0:
                self._finish("end")
            return
        self._buffer += data
        try:
            self._parse()
        except (httputil.HTTPInputError, ValueError):
            self._finish("broken")

    def eof_received(self) -> bool:
        return False  # let the transport close; connection_lost decides what EOF meant

    def connection_lost(self, exc: Exception | None) -> None:
        # Only a body delimited by the connection closing may end with the connection, and
        # only cleanly: a reset there is a truncation like any other.
        self._finish("end" if self._mode == "close" and exc is None else "broken")

    # parsing

    def _parse(self) -> None:
        buffer = self._buffer
        while True:
            mode = self._mode
            if mode == "head":
                match = HEAD_END.search(buffer)
                if match is None:
                    if len(buffer) > MAX_HEAD_BYTES:
                        raise httputil.HTTPInputError("response head too large")
                    return
                text = bytes(buffer[: match.start()]).decode("latin-1")
                del buffer[: match.end()]
                first, _, rest = text.partition("\n")
                start = httputil.parse_response_start_line(first.strip())
                headers = httputil.HTTPHeaders.parse(rest)
                if 100 <= start.code < 200:
                    continue  # an interim answer; the real one follows
                if not self.head.done():
                    self.head.set_result((start.code, headers))
                self._begin_body(start.code, headers)
            elif mode in ("length", "chunk-data"):
                if not buffer:
                    return
                piece = bytes(buffer[: self._remaining])
                del buffer[: len(piece)]
                self._remaining -= len(piece)
                self._emit(piece)
                if self._remaining == 0:
                    if mode == "length":
                        self._finish("end")
                    else:
                        self._mode = "chunk-crlf"
            elif mode == "close":
                if buffer:
                    self._emit(bytes(buffer))
                    buffer.clear()
                return
            elif mode == "chunk-crlf":
                if len(buffer) < 2:
                    return
                if buffer[:2] != b"\r\n":
                    raise httputil.HTTPInputError("chunk not followed by CRLF")
                del buffer[:2]
                self._mode = "chunk-size"
            elif mode in ("chunk-size", "trailer"):
                end = buffer.find(b"\n")
                if end < 0:
                    if len(buffer) > MAX_LINE_BYTES:
                        raise httputil.HTTPInputError("chunk framing line too long")
                    return
                line = bytes(buffer[:end]).strip()
                del buffer[: end + 1]
                if mode == "trailer":
                    if not line:
                        self._finish("end")
                    continue
                size = CHUNK_SIZE_LINE.match(line)
                if size is None:
                    raise httputil.HTTPInputError("invalid chunk size")
                self._remaining = int(size.group(1), 16)
                self._mode = "chunk-data" if self._remaining else "trailer"
            else:  # "done": nothing after the message matters
                buffer.clear()
                return

    def _begin_body(self, code: int, headers: httputil.HTTPHeaders) -> None:
        if self.method == "HEAD" or code not in (200, 206):
            # No body to relay (error answers are never read past their head).
            self._finish("end")
        elif "chunked" in headers.get("Transfer-Encoding", "").lower():
            self._mode = "chunk-size"
        elif "Content-Length" in headers:
            length = headers["Content-Length"]
            if not length.isdigit():
                raise httputil.HTTPInputError("invalid Content-Length")
            self._mode, self._remaining = "length", int(length)
            if self._remaining == 0:
                self._finish("end")
        else:
            self._mode = "close"

    def _emit(self, data: bytes) -> None:
        if not data:
            return
        self.queue.append(data)
        self.queued += len(data)
        if self.queued >= self.high_water and not self.paused and self.transport is not None:
            self.transport.pause_reading()
            self.paused = True
        self._wake(True)

    def _finish(self, outcome: str) -> None:
        if self.outcome is None:
            self.outcome = outcome
        self._mode = "done"
        if not self.head.done():
            self.head.set_exception(UpstreamError("the provider closed the connection early"))
        if outcome == "broken" and self.transport is not None:
            self.transport.abort()
        self._wake(True)

    def _wake(self, value: bool) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(value)

    # consumer side

    def take(self) -> bytes | None:
        """The next body piece, or None when nothing is queued."""
        if not self.queue:
            return None
        data = self.queue.popleft()
        self.queued -= len(data)
        if self.paused and self.queued <= self.high_water // 2 and self.transport is not None:
            self.transport.resume_reading()
            self.paused = False
        return data


class UpstreamResponse:
    """An upstream answer whose head was accepted (200 or 206). Iterate it for the body
    pieces; an `UpstreamError` during iteration means the body broke off. Always close it
    (``async with`` or `close`); closing early stops the upstream transfer at once."""

    def __init__(
        self,
        status: int,
        headers: httputil.HTTPHeaders,
        content_range: ContentRange | None,
        expected_bytes: int | None,
        reader: _ResponseReader,
        idle_timeout: float,
    ):
        self.status = status
        self.headers = headers
        self.content_range = content_range
        self.etag: str | None = headers.get("ETag")
        length = headers.get("Content-Length")
        self.content_length: int | None = int(length) if length is not None else None
        self._expected = expected_bytes
        self._received = 0
        self._reader = reader
        self._idle_timeout = idle_timeout

    @property
    def complete_length(self) -> int | None:
        """The recording's full size in bytes, when the provider told it."""
        if self.content_range is not None:
            return self.content_range.complete_length
        return self.content_length

    def __aiter__(self) -> UpstreamResponse:
        return self

    async def __anext__(self) -> bytes:
        reader = self._reader
        while True:
            data = reader.take()
            if data is not None:
                self._received += len(data)
                return data
            if reader.outcome is not None:
                self.close()
                if reader.outcome == "end" and self._expected in (None, self._received):
                    raise StopAsyncIteration
                raise UpstreamError("the provider broke off the body")
            # Only time spent waiting on the provider counts here, never time spent
            # waiting for our own client to drain what it was given.
            reader.waiter = reader.loop.create_future()
            timer = reader.loop.call_later(self._idle_timeout, _expire, reader.waiter)
            try:
                arrived = await reader.waiter
            finally:
                timer.cancel()
                reader.waiter = None
            if not arrived:
                self.close()
                raise UpstreamError("the provider stalled in the middle of the body")

    def close(self) -> None:
        """Drop the upstream connection now (idempotent)."""
        if self._reader.transport is not None:
            self._reader.transport.abort()

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> UpstreamResponse:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


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

    @classmethod
    def from_config(cls, config) -> UpstreamClient | None:
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
        if not SAFE_REF.match(ref):
            raise UpstreamNotFound("malformed recording reference")
        if range_header is None:
            if_range = None  # meaningless without a range
        lines = [
            f"{method} {self._prefix}/Recordings/{ref}.mp3 HTTP/1.1",
            f"Host: {self._host_header}",
            f"Authorization: {self._authorization}",
            "Accept: audio/mpeg",
            "Connection: close",
            "User-Agent: workspace-data-api",
        ]
        for name, value in (("Range", range_header), ("If-Range", if_range)):
            if value is not None:
                if not FIELD_VALUE.match(value):
                    raise ValueError(f"unsafe {name} value")
                lines.append(f"{name}: {value}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

        reader = _ResponseReader(method, self._buffer_bytes)
        await self._connect(reader)
        assert reader.transport is not None
        try:
            reader.transport.write(request)
            code, headers = await asyncio.wait_for(reader.head, self._header_timeout)
            return self._judge(method, code, headers, range_header, if_range, reader)
        except BaseException as exc:
            reader.transport.abort()
            if isinstance(exc, TimeoutError):
                raise UpstreamError("the provider sent no response in time") from None
            raise

    async def content_length(self, ref: str) -> int | None:
        """The recording's size from a HEAD request (None when the provider doesn't say)."""
        async with await self.open(ref, method="HEAD") as response:
            return response.complete_length

    async def _connect(self, reader: _ResponseReader) -> None:
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(
                loop.create_connection(
                    lambda: reader,
                    self._host,
                    self._port,
                    ssl=self._tls,
                    server_hostname=self._host if self._tls else None,
                ),
                self._connect_timeout,
            )
        except TimeoutError:
            raise UpstreamError("connecting to the provider timed out") from None
        except OSError as exc:
            raise UpstreamError(
                f"connecting to the provider failed ({type(exc).__name__})"
            ) from None

    def _judge(
        self,
        method: str,
        code: int,
        headers: httputil.HTTPHeaders,
        range_header: str | None,
        if_range: str | None,
        reader: _ResponseReader,
    ) -> UpstreamResponse:
        if code in (404, 410):
            raise UpstreamNotFound("the provider has no such recording")
        if code == 416 and range_header is not None:
            match = UNSATISFIED_RANGE.match(headers.get("Content-Range", ""))
            raise UpstreamRangeNotSatisfiable(int(match.group(1)) if match else None)
        if 300 <= code < 400:
            raise UpstreamError(f"the provider answered {code}; redirects are not followed")
        if code not in (200, 206):
            raise UpstreamError(f"the provider answered {code}")
        media_type = headers.get("Content-Type", "").split(";")[0].strip().lower()
        if not media_type.startswith("audio/"):
            raise UpstreamError("the provider answered with a non-audio content type")
        length = headers.get("Content-Length")
        content_length = int(length) if length is not None and length.isdigit() else None
        if length is not None and content_length is None:
            raise UpstreamError("the provider sent an invalid Content-Length")
        content_range = None
        expected = 0 if method == "HEAD" else content_length
        if code == 206:
            match = CONTENT_RANGE.match(headers.get("Content-Range", ""))
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
        return UpstreamResponse(code, headers, content_range, expected, reader, self._idle_timeout)
