"""The provider's answer as the caller sees it: a judged head and a body that is lent, not copied.

`UpstreamResponse` hands out the body pieces its connection (telephony/connection.py) received,
in the connection's own buffers, valid until the caller asks for more; giving them back is what
lets the connection read on, so the provider goes no faster than the caller writes. Once the
first piece has gone out, the rest of a large plain-TCP body can instead move socket to socket
inside the kernel (`splice_to`, telephony/splice.py).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from dataclasses import dataclass

from tornado import httputil

from telephony.connection import Connection
from telephony.errors import DownstreamClosed, UpstreamError
from telephony.splice import SPLICE, Splicer

SPLICE_MIN = 256 * 1024  # bodies with less than this left are not worth a pipe


@dataclass(frozen=True)
class ContentRange:
    """A 206 response's ``Content-Range``; complete_length is None for ``/*``."""

    start: int
    end: int
    complete_length: int | None


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


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
        content_length: int | None,
        expected_bytes: int | None,
        connection: Connection,
        idle_timeout: float,
        release: Callable[[Connection], None],
    ):
        self.status = status
        self.headers = headers
        self.content_range = content_range
        self.etag: str | None = headers.get("ETag")
        self.content_length = content_length
        self._expected = expected_bytes
        self._received = 0
        self._connection = connection
        assert connection.x is not None
        self._exchange = connection.x
        self._idle_timeout = idle_timeout
        self._release = release
        self._lent: list[int] = []
        self._closed = False
        self._splicer: Splicer | None = None

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
        parser = connection.parser
        x = self._exchange
        return (
            SPLICE
            and not self._closed
            and x.outcome is None
            and not x.queue
            and parser.mode == "length"
            and not parser.buffer
            and parser.remaining >= SPLICE_MIN
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
        connection.pause()  # the transport must not read while the kernel moves the bytes
        splicer = Splicer(
            connection.loop,
            connection.transport.get_extra_info("socket").fileno(),
            sock,
            connection.parser.remaining,
            client_closed,
            self._idle_timeout,
            client_timeout,
            on_cut=connection.abort,  # the body is cut: the connection can carry nothing else
        )
        self._splicer = splicer
        try:
            moved = await splicer.done
        finally:
            self._splicer = None
            splicer.stop()
        self._received += moved
        connection.parser.body_received(moved)  # the body's end: the response is over
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
