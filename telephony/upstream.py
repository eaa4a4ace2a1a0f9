"""The API's client for the telephony provider's recording media.

Built once at start-up from configuration. `UpstreamClient.open` sends one request, judges the
answer from its head alone (before the caller writes a byte), and hands back an
`UpstreamResponse` whose body the caller borrows piece by piece.

Why not Tornado's `AsyncHTTPClient`: its ``streaming_callback`` cannot push back, so a slow
API client would make a whole recording pile up in memory. Here the socket is read by an
asyncio buffered protocol that receives a Content-Length body straight into a few buffers of
256 KiB (as nginx does with ``proxy_buffer_size 256k``), lends them to the caller without a
copy, and stops reading while all of them are lent out; TCP flow control then slows the
provider down. Memory per transfer stays under `buffer_bytes` plus the kernel's socket
buffers (and, while splicing, a 1 MiB pipe), whatever the recording's size or the client's
speed; an idle kept-alive connection holds no buffers.

Copying through user space costs two copies per byte whatever the buffers (reused 256 KiB
buffers measured no cheaper than a fresh 1 MiB ``bytes`` per read, 0.56-0.61 CPU seconds per
GiB). So on Linux, once the first piece has gone out, the rest of a large plain-TCP body
moves socket to socket with splice(2) (`UpstreamResponse.splice_to`): no byte enters this
process, 0.26-0.31 s/GiB against nginx's 0.36-0.41 with 256 KiB buffers in the same runs
(docs/performance.md, P1).

Connections are kept alive: a response read to its end leaves its connection in a small pool
for the next request (a seek then costs no TCP handshake). A request that finds its pooled
connection closed by the provider is sent once more on a new connection.

Redirects are never followed. Every failure becomes `UpstreamNotFound`,
`UpstreamRangeNotSatisfiable` or `UpstreamError`, whose messages never name the provider's
host, path or credentials.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import os
import re
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol
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
SLOT_BYTES = 256 * 1024  # one receive moves up to this much (as nginx's proxy buffer)
PARSE_READ = 64 * 1024  # reads of heads and of chunked or close-delimited bodies
SPLICE_MIN = 256 * 1024  # bodies with less than this left are not worth a pipe
PIPE_BYTES = 1024 * 1024  # the splice pipe's capacity (Linux's default pipe-max-size)
F_SETPIPE_SZ = 1031
F_GETPIPE_SZ = 1032
SPLICE_FLAGS = getattr(os, "SPLICE_F_MOVE", 1) | getattr(os, "SPLICE_F_NONBLOCK", 2)
MAX_IDLE = 8  # idle keep-alive connections kept per client
IDLE_SECONDS = 15.0  # an idle connection older than this is not reused


class UpstreamNotFound(Exception):
    """The provider has no such recording (the API answers 404)."""


class UpstreamRangeNotSatisfiable(Exception):
    """The provider refused the range (the API answers 416)."""

    def __init__(self, complete_length: int | None):
        super().__init__("range not satisfiable")
        self.complete_length = complete_length


class UpstreamError(Exception):
    """The provider failed or misbehaved (the API answers 502, or aborts mid-body)."""


class DownstreamClosed(Exception):
    """The socket a body was spliced to failed or was closed (the client went away)."""


@dataclass(frozen=True)
class ContentRange:
    """A 206 response's ``Content-Range``; complete_length is None for ``/*``."""

    start: int
    end: int
    complete_length: int | None


class _Exchange:
    """The state of one request/response on a connection."""

    def __init__(self, method: str, loop: asyncio.AbstractEventLoop):
        self.method = method
        self.head: asyncio.Future[tuple[int, httputil.HTTPHeaders]] = loop.create_future()
        self.queue: deque[tuple[int, bytes | memoryview]] = deque()  # (slot or -1, piece)
        self.queued = 0  # bytes queued outside slots (chunked or close-delimited bodies)
        self.outcome: str | None = None  # "end" or "broken" once the body is over
        self.received = 0  # bytes of this response seen on the socket (head included)
        self.reusable = False  # the connection may carry another request after this one
        self.waiter: asyncio.Future[bool] | None = None  # the consumer waits here for data


class _Connection(asyncio.BufferedProtocol):
    """One HTTP/1.1 connection to the provider, parsing one response at a time.

    A Content-Length body, the common case, is received straight into a few fixed buffers
    ("slots") that the consumer borrows and hands back, so no byte is copied or allocated in
    this process between the two sockets and the same warm memory is reused for a whole
    transfer. Reading pauses while every slot is lent out (or, for other framings, while
    `high_water` bytes wait), so TCP flow control slows the provider down to the consumer's
    pace. Once a response is complete the connection can carry the next request.
    """

    def __init__(
        self, high_water: int, slot_bytes: int, on_lost: Callable[[_Connection], None]
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.high_water = high_water
        count = max(2, high_water // slot_bytes)
        self._slot_bytes = slot_bytes
        # Allocated when first lent, dropped when the connection goes idle (see `idle`).
        self._slots: list[memoryview | None] = [None] * count
        self._free = list(range(count))  # a stack: the most recently used slot is warmest
        self._lent = -1  # the slot handed to the transport by get_buffer
        self._scratch = memoryview(bytearray(PARSE_READ))
        self._on_lost = on_lost
        self.transport: asyncio.Transport | None = None
        self.paused = False
        self.closed = False
        self.idle_since = 0.0
        self.x: _Exchange | None = None
        self._buffer = bytearray()  # unparsed head or chunked framing
        self._mode = "done"
        self._remaining = 0

    def begin(self, method: str) -> _Exchange:
        """Start a new exchange on this (fresh or idle) connection."""
        self.x = _Exchange(method, self.loop)
        self._buffer.clear()
        self._mode = "head"
        self._remaining = 0
        self._free = list(range(len(self._slots)))
        self._resume()
        return self.x

    # asyncio.BufferedProtocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._mode == "length" and not self._buffer and self._free:
            # Straight into a slot, and never past the body's end.
            self._lent = slot = self._free[-1]
            view = self._slots[slot]
            if view is None:
                view = self._slots[slot] = memoryview(bytearray(self._slot_bytes))
            return view[: self._remaining]
        self._lent = -1
        return self._scratch

    def buffer_updated(self, nbytes: int) -> None:
        x = self.x
        if x is None or self._mode == "done":
            self._fail(x)  # bytes nobody asked for: this connection cannot be trusted
            return
        x.received += nbytes
        if self._lent >= 0:
            slot = self._free.pop()
            self._remaining -= nbytes
            self._emit(slot, self._slots[slot][:nbytes])  # type: ignore[index]
            if self._remaining == 0:
                self._end(True)
            return
        self._buffer += self._scratch[:nbytes]
        try:
            self._parse()
        except (httputil.HTTPInputError, ValueError):
            self._finish("broken")

    def eof_received(self) -> bool:
        return False  # let the transport close; connection_lost decides what EOF meant

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._on_lost(self)
        if self.x is not None and self.x.outcome is None:
            # Only a body delimited by the connection closing may end with the connection,
            # and only cleanly: a reset there is a truncation like any other.
            self._finish("end" if self._mode == "close" and exc is None else "broken")

    # parsing

    def _parse(self) -> None:
        buffer = self._buffer
        x = self.x
        assert x is not None
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
                x.reusable = (
                    start.version == "HTTP/1.1"
                    and "close" not in headers.get("Connection", "").lower()
                )
                if not x.head.done():
                    x.head.set_result((start.code, headers))
                self._begin_body(start.code, headers)
            elif mode in ("length", "chunk-data"):
                if not buffer:
                    return
                piece = bytes(buffer[: self._remaining])
                del buffer[: len(piece)]
                self._remaining -= len(piece)
                self._emit(-1, piece)
                if self._remaining == 0:
                    if mode == "length":
                        self._end(True)
                    else:
                        self._mode = "chunk-crlf"
            elif mode == "close":
                if buffer:
                    self._emit(-1, bytes(buffer))
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
                        self._end(True)
                    continue
                size = CHUNK_SIZE_LINE.match(line)
                if size is None:
                    raise httputil.HTTPInputError("invalid chunk size")
                self._remaining = int(size.group(1), 16)
                self._mode = "chunk-data" if self._remaining else "trailer"
            else:  # "done": bytes after the message
                if buffer:
                    self._fail(x)
                return

    def _begin_body(self, code: int, headers: httputil.HTTPHeaders) -> None:
        assert self.x is not None
        if code not in (200, 206):
            # Error answers are never read past their head, so the connection is not reused.
            self._end(False)
        elif self.x.method == "HEAD":
            self._end(True)
        elif "chunked" in headers.get("Transfer-Encoding", "").lower():
            self._mode = "chunk-size"
        elif "Content-Length" in headers:
            length = headers["Content-Length"]
            if not length.isdigit():
                raise httputil.HTTPInputError("invalid Content-Length")
            self._mode, self._remaining = "length", int(length)
            if self._remaining == 0:
                self._end(True)
        else:
            self._mode = "close"
            self.x.reusable = False

    def _emit(self, slot: int, data: bytes | memoryview) -> None:
        if not data:
            return
        x = self.x
        assert x is not None
        x.queue.append((slot, data))
        if slot < 0:
            x.queued += len(data)
        if (not self._free or x.queued >= self.high_water) and not self.paused:
            self._pause()
        self._wake(True)

    def _end(self, complete: bool) -> None:
        """The response is over (its body fully read, or deliberately not read)."""
        assert self.x is not None
        if not complete or self._buffer:
            self.x.reusable = False
        self._finish("end")

    def _finish(self, outcome: str) -> None:
        x = self.x
        assert x is not None
        if x.outcome is None:
            x.outcome = outcome
        self._mode = "done"
        if not x.head.done():
            x.head.set_exception(UpstreamError("the provider closed the connection early"))
        if outcome == "broken":
            x.reusable = False
            self.abort()
        self._wake(True)

    def _fail(self, x: _Exchange | None) -> None:
        if x is not None:
            x.reusable = False
        self.abort()

    def _wake(self, value: bool) -> None:
        x = self.x
        if x is not None and x.waiter is not None and not x.waiter.done():
            x.waiter.set_result(value)

    def _pause(self) -> None:
        if self.transport is not None and not self.paused:
            self.transport.pause_reading()
            self.paused = True

    def _resume(self) -> None:
        if self.paused and self.transport is not None and not self.closed:
            self.transport.resume_reading()
            self.paused = False

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def idle(self) -> None:
        """Between exchanges: no memory held but the socket's (the slots go; a write that
        still references one keeps it alive until it has been sent)."""
        self.x = None
        self._slots = [None] * len(self._slots)
        self._resume()  # an idle connection reads, to notice when the provider closes it

    # consumer side

    def take(self) -> tuple[int, bytes | memoryview] | None:
        """The next body piece (with its slot, -1 for none), or None when nothing is queued."""
        x = self.x
        if x is None or not x.queue:
            return None
        slot, data = x.queue.popleft()
        if slot < 0:
            x.queued -= len(data)
        return slot, data

    def give_back(self, slots: list[int]) -> None:
        """The consumer is done with these slots: they may be received into again."""
        for slot in slots:
            if slot >= 0:
                self._free.append(slot)
        x = self.x
        if (
            self.paused
            and x is not None
            and x.outcome is None
            and len(self._free) * 2 >= len(self._slots)
            and x.queued <= self.high_water // 2
        ):
            self._resume()


class UpstreamResponse:
    """An upstream answer whose head was accepted (200 or 206). Iterate it for the body
    pieces (``bytes``), or borrow them without a copy with `next_pieces`; an `UpstreamError`
    means the body broke off. Always close it (``async with`` or `close`); closing early stops
    the upstream transfer at once, and closing after a complete body keeps the connection for
    the next request."""

    def __init__(
        self,
        status: int,
        headers: httputil.HTTPHeaders,
        content_range: ContentRange | None,
        expected_bytes: int | None,
        connection: _Connection,
        idle_timeout: float,
        release: Callable[[_Connection], None],
    ) -> None:
        self.status = status
        self.headers = headers
        self.content_range = content_range
        self.etag: str | None = headers.get("ETag")
        length = headers.get("Content-Length")
        self.content_length: int | None = int(length) if length is not None else None
        self._expected = expected_bytes
        self._received = 0
        self._connection = connection
        assert connection.x is not None  # a response is made by its connection's exchange
        self._exchange = connection.x
        self._idle_timeout = idle_timeout
        self._release = release
        self._lent: list[int] = []
        self._closed = False
        self._splicer: _Splicer | None = None

    @property
    def complete_length(self) -> int | None:
        """The recording's full size in bytes, when the provider told it."""
        if self.content_range is not None:
            return self.content_range.complete_length
        return self.content_length

    def __aiter__(self) -> UpstreamResponse:
        return self

    async def __anext__(self) -> bytes:
        pieces = await self.next_pieces(1)
        if not pieces:
            raise StopAsyncIteration
        data = bytes(pieces[0])  # a copy of its own: the slot is reused after this call
        self._give_back()
        return data

    async def next_pieces(self, limit: int = 64) -> list[bytes | memoryview]:
        """Up to `limit` body pieces that have arrived (waiting for at least one), or an empty
        list at the body's end. The pieces are lent: they stay valid only until the next call
        of `next_pieces` or `close`, so write them out before asking again."""
        self._give_back()
        connection = self._connection
        x = self._exchange
        while True:
            pieces: list[bytes | memoryview] = []
            while len(pieces) < limit:
                item = connection.take()
                if item is None:
                    break
                slot, data = item
                self._lent.append(slot)
                self._received += len(data)
                pieces.append(data)
            if pieces:
                return pieces
            if x.outcome is not None:
                if x.outcome == "end" and self._expected in (None, self._received):
                    self.close()
                    return []
                self.close()
                raise UpstreamError("the provider broke off the body")
            # Only time spent waiting on the provider counts here, never time spent
            # waiting for our own client to drain what it was given.
            x.waiter = connection.loop.create_future()
            timer = connection.loop.call_later(self._idle_timeout, _expire, x.waiter)
            try:
                arrived = await x.waiter
            finally:
                timer.cancel()
                x.waiter = None
            if not arrived:
                self.close()
                raise UpstreamError("the provider stalled in the middle of the body")

    @property
    def can_splice(self) -> bool:
        """Whether the rest of the body can move with `splice_to`: Linux, plain TCP, a
        Content-Length body with at least SPLICE_MIN bytes still to come and nothing queued."""
        connection = self._connection
        x = self._exchange
        return (
            SPLICE
            and not self._closed
            and x.outcome is None
            and not x.queue
            and connection._mode == "length"
            and not connection._buffer
            and connection._remaining >= SPLICE_MIN
            and connection.transport is not None
            and connection.transport.get_extra_info("sslcontext") is None
        )

    async def splice_to(
        self,
        sock: socket.socket,
        client_closed: Callable[[], bool],
        client_timeout: float | None = None,
    ) -> int:
        """Move the rest of the body from the provider's socket to `sock` (non-blocking) inside
        the kernel, through a pipe, with splice(2): no byte enters this process. Waits on the
        provider no longer than the idle timeout between bytes; waits on `sock` no longer
        than `client_timeout` between bytes (None: as long as it takes). Raises
        `UpstreamError` when the provider breaks off or stalls, and `DownstreamClosed` when
        `sock` fails or stalls or `client_closed()` says it was closed.
        Returns the number of bytes moved. Call only when `can_splice`."""
        self._give_back()
        connection = self._connection
        assert connection.transport is not None
        connection._pause()  # the transport must not read while the kernel moves the bytes
        splicer = _Splicer(connection, sock, client_closed, self._idle_timeout, client_timeout)
        self._splicer = splicer
        try:
            moved = await splicer.done
        finally:
            self._splicer = None
            splicer.stop()
        self._received += moved
        connection._remaining -= moved
        connection._end(True)
        return moved

    def _give_back(self) -> None:
        if self._lent:
            lent, self._lent = self._lent, []
            self._connection.give_back(lent)

    def close(self) -> None:
        """Done with the response (idempotent): the connection goes back to the pool when the
        response was read to its end, and is dropped at once otherwise."""
        if self._closed:
            return
        self._closed = True
        self._lent = []
        if self._splicer is not None:
            self._splicer.fail(DownstreamClosed("the transfer was closed"))
        x = self._exchange
        connection = self._connection
        if x.outcome == "end" and x.reusable and not x.queue and not connection.closed:
            self._release(connection)
        else:
            connection.abort()

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> UpstreamResponse:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()


SPLICE = hasattr(os, "splice")


class _Splicer:
    """Moves `connection`'s remaining Content-Length body to `sock` through a pipe, driven by
    readiness callbacks: fill the pipe from the provider, drain it to the client, repeat.
    The pipe holds at most PIPE_BYTES, so a slow client still slows the provider down."""

    def __init__(
        self,
        connection: _Connection,
        sock: socket.socket,
        client_closed: Callable[[], bool],
        idle_timeout: float,
        client_timeout: float | None = None,
    ):
        self.loop = connection.loop
        self.connection = connection
        self.sock = sock
        self.client_closed = client_closed
        self.idle_timeout = idle_timeout
        self.client_timeout = client_timeout
        self.left = connection._remaining  # bytes still to take from the provider
        self.moved = 0
        self.in_pipe = 0
        self.done: asyncio.Future[int] = self.loop.create_future()
        upstream = connection.transport.get_extra_info("socket")  # type: ignore[union-attr]
        # A duplicate descriptor of the provider's socket: asyncio refuses readers on a
        # descriptor its transport owns; this one is ours to watch and close.
        self.up = os.dup(upstream.fileno())
        self.down = sock.fileno()
        self.r, self.w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        with contextlib.suppress(OSError):  # a smaller pipe only means more turns
            fcntl.fcntl(self.w, F_SETPIPE_SZ, PIPE_BYTES)
        self.capacity = fcntl.fcntl(self.w, F_GETPIPE_SZ)
        self.reading = self.writing = False
        self.complete = False
        self.progress = self.sent = time.monotonic()
        self.timer = self.loop.call_later(self._interval(), self._check_stall)
        self.step()

    def step(self) -> None:
        """Move what can move now, then wait for the side that blocked."""
        if self.done.done():
            return
        if self.client_closed():
            self.fail(DownstreamClosed("the client went away"))
            return
        while True:
            if self.in_pipe == 0:
                try:
                    n = os.splice(
                        self.up, self.w, min(self.left, self.capacity), flags=SPLICE_FLAGS
                    )
                except BlockingIOError:
                    self._wait(read=True)
                    return
                except OSError:
                    self.fail(UpstreamError("the provider broke off the body"))
                    return
                if n == 0:
                    self.fail(UpstreamError("the provider broke off the body"))
                    return
                self.left -= n
                self.in_pipe = n
                self.progress = time.monotonic()
            try:
                n = os.splice(self.r, self.down, self.in_pipe, flags=SPLICE_FLAGS)
            except BlockingIOError:
                self._wait(read=False)
                return
            except OSError:  # EPIPE, ECONNRESET...: the client is gone
                self.fail(DownstreamClosed("the client went away"))
                return
            self.in_pipe -= n
            self.moved += n
            self.sent = time.monotonic()
            if self.left == 0 and self.in_pipe == 0:
                self.complete = True
                self.done.set_result(self.moved)
                return

    def _wait(self, read: bool) -> None:
        # Exactly one side is watched: the provider while the pipe is empty, the client while
        # it holds bytes (so a pipe that is full in slots, not bytes, never spins).
        if read and not self.reading:
            self.loop.add_reader(self.up, self.step)
            self.reading = True
        elif not read and self.reading:
            self.loop.remove_reader(self.up)
            self.reading = False
        if not read and not self.writing:
            self.loop.add_writer(self.down, self.step)
            self.writing = True
        elif read and self.writing:
            self.loop.remove_writer(self.down)
            self.writing = False

    def _interval(self) -> float:
        return max(0.01, min(self.idle_timeout, self.client_timeout or self.idle_timeout) / 2)

    def _check_stall(self) -> None:
        if self.done.done():
            return
        now = time.monotonic()
        if self.reading and now - self.progress >= self.idle_timeout:
            self.fail(UpstreamError("the provider stalled in the middle of the body"))
            return
        if self.writing and self.client_timeout and now - self.sent >= self.client_timeout:
            self.fail(DownstreamClosed("the client stalled"))
            return
        if not self.reading:
            self.progress = now  # waiting on our own client does not count against the provider
        self.timer = self.loop.call_later(self._interval(), self._check_stall)

    def fail(self, exc: Exception) -> None:
        if not self.done.done():
            self.done.set_exception(exc)
        self.stop()

    def stop(self) -> None:
        """Unwatch and close the pipe and the duplicate descriptor (idempotent)."""
        if self.up < 0:
            return
        self.timer.cancel()
        if self.reading:
            self.loop.remove_reader(self.up)
        if self.writing:
            self.loop.remove_writer(self.down)
        self.reading = self.writing = False
        for fd in (self.up, self.r, self.w):
            os.close(fd)
        self.up = -1
        if not self.complete:
            self.connection.abort()  # the body is cut: the connection can carry nothing else


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


class ProviderConfig(Protocol):
    """The configuration keys of the provider (server.config.Config has them)."""

    @property
    def provider_url(self) -> str: ...
    @property
    def provider_account_id(self) -> str: ...
    @property
    def provider_auth_token(self) -> str: ...
    @property
    def provider_connect_timeout(self) -> float: ...
    @property
    def provider_header_timeout(self) -> float: ...


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
        self._idle: list[_Connection] = []

    @classmethod
    def from_config(cls, config: ProviderConfig) -> UpstreamClient | None:
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
            "User-Agent: workspace-data-api",
        ]
        for name, value in (("Range", range_header), ("If-Range", if_range)):
            if value is not None:
                if not FIELD_VALUE.match(value):
                    raise ValueError(f"unsafe {name} value")
                lines.append(f"{name}: {value}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

        for attempt in ("reused", "fresh"):
            connection = self._idle_connection() if attempt == "reused" else None
            if connection is None:
                attempt = "fresh"
                connection = await self._connect()
            x = connection.begin(method)
            assert connection.transport is not None
            try:
                connection.transport.write(request)
                code, headers = await asyncio.wait_for(x.head, self._header_timeout)
                return self._judge(method, code, headers, range_header, if_range, connection)
            except BaseException as exc:
                connection.abort()
                if isinstance(exc, TimeoutError):
                    raise UpstreamError("the provider sent no response in time") from None
                if attempt == "reused" and isinstance(exc, UpstreamError) and x.received == 0:
                    # The provider closed the idle connection as the request went out: ask
                    # again once on a new connection (GET and HEAD are safe to repeat).
                    continue
                raise
        raise AssertionError("unreachable")

    async def content_length(self, ref: str) -> int | None:
        """The recording's size from a HEAD request (None when the provider doesn't say)."""
        async with await self.open(ref, method="HEAD") as response:
            return response.complete_length

    def _idle_connection(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()  # the most recently used: least likely to be closed
            if not connection.closed and now - connection.idle_since < IDLE_SECONDS:
                return connection
            connection.abort()
        return None

    def _release(self, connection: _Connection) -> None:
        """Keep a connection whose last response was read to its end for the next request."""
        if len(self._idle) >= MAX_IDLE or connection.closed:
            connection.abort()
            return
        connection.idle()
        connection.idle_since = time.monotonic()
        self._idle.append(connection)

    def _lost(self, connection: _Connection) -> None:
        if connection in self._idle:
            self._idle.remove(connection)

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _Connection(self._buffer_bytes, self._slot_bytes, self._lost),
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
        return connection

    def _judge(
        self,
        method: str,
        code: int,
        headers: httputil.HTTPHeaders,
        range_header: str | None,
        if_range: str | None,
        connection: _Connection,
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
        return UpstreamResponse(
            code, headers, content_range, expected, connection, self._idle_timeout, self._release
        )
