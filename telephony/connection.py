"""One kept-alive HTTP/1.1 connection to the provider, as an asyncio buffered protocol.

The socket is read into memory this module owns and lends: a Content-Length body, the common
case, is received straight into a few fixed buffers of up to 256 KiB ("slots", as nginx does
with ``proxy_buffer_size 256k``) that the consumer (telephony/response.py) borrows without a
copy and hands back. Reading stops while every slot is lent out (or, for other framings, while
`high_water` bytes wait), so TCP flow control slows the provider down to the consumer's pace:
memory per transfer stays under `high_water` plus the kernel's socket buffers, whatever the
recording's size or the client's speed, and an idle connection holds no buffers. Heads,
chunked and close-delimited bodies go through the parser of telephony/http1.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable

from tornado import httputil

from telephony.errors import UpstreamError
from telephony.http1 import ParseError, ResponseHead, ResponseParser

SLOT_BYTES = 256 * 1024  # one receive moves up to this much (as nginx's proxy buffer)
PARSE_READ = 64 * 1024  # reads of heads and of chunked or close-delimited bodies


class Exchange:
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


class Connection(asyncio.BufferedProtocol):
    """One HTTP/1.1 connection to the provider, reading one response at a time into lent
    buffers (see the module's docstring). Once a response is complete the connection can
    carry the next request."""

    def __init__(
        self, high_water: int, slot_bytes: int, on_lost: Callable[[Connection], None]
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
        self.x: Exchange | None = None
        self.parser = ResponseParser(self)

    def begin(self, method: str) -> Exchange:
        """Start a new exchange on this (fresh or idle) connection."""
        self.x = Exchange(method, self.loop)
        self.parser.start(method)
        self._free = list(range(len(self._slots)))
        self.resume()
        return self.x

    # asyncio.BufferedProtocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        parser = self.parser
        if parser.mode == "length" and not parser.buffer and self._free:
            # Straight into a slot, and never past the body's end.
            self._lent = slot = self._free[-1]
            view = self._slots[slot]
            if view is None:
                view = self._slots[slot] = memoryview(bytearray(self._slot_bytes))
            return view[: parser.remaining]
        self._lent = -1
        return self._scratch

    def buffer_updated(self, nbytes: int) -> None:
        x = self.x
        if x is None or self.parser.mode == "done":
            self._fail(x)  # bytes nobody asked for: this connection cannot be trusted
            return
        x.received += nbytes
        if self._lent >= 0:
            slot = self._free.pop()
            self._emit(slot, self._slots[slot][:nbytes])  # type: ignore[index]
            self.parser.body_received(nbytes)  # ends the response after its last byte
            return
        try:
            self.parser.feed(self._scratch[:nbytes])
        except ParseError:
            self._finish("broken")

    def eof_received(self) -> bool:
        return False  # let the transport close; connection_lost decides what EOF meant

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._on_lost(self)
        x = self.x
        if x is not None and x.outcome is None:
            # Only a body delimited by the connection closing may end with the connection,
            # and only cleanly: a reset there is a truncation like any other.
            if exc is None:
                with contextlib.suppress(ParseError):
                    self.parser.eof()
            if x.outcome is None:
                self._finish("broken")

    # what the parser tells (http1.Sink)

    def on_head(self, head: ResponseHead) -> bool:
        x = self.x
        assert x is not None
        if not x.head.done():
            x.head.set_result((head.code, head.headers))
        # Error answers are never read past their head, so the connection is not reused.
        return head.code in (200, 206)

    def on_body(self, piece: bytes) -> None:
        self._emit(-1, piece)

    def on_end(self, reusable: bool) -> None:
        """The response is over (its body fully read, or deliberately not read)."""
        assert self.x is not None
        self.x.reusable = reusable
        self._finish("end")

    # flow control

    def _emit(self, slot: int, data: bytes | memoryview) -> None:
        if not data:
            return
        x = self.x
        assert x is not None
        x.queue.append((slot, data))
        if slot < 0:
            x.queued += len(data)
        if (not self._free or x.queued >= self.high_water) and not self.paused:
            self.pause()
        self._wake(True)

    def _finish(self, outcome: str) -> None:
        x = self.x
        assert x is not None
        if x.outcome is None:
            x.outcome = outcome
        self.parser.mode = "done"
        if not x.head.done():
            x.head.set_exception(UpstreamError("the provider closed the connection early"))
        if outcome == "broken":
            x.reusable = False
            self.abort()
        self._wake(True)

    def _fail(self, x: Exchange | None) -> None:
        if x is not None:
            x.reusable = False
        self.abort()

    def _wake(self, value: bool) -> None:
        x = self.x
        if x is not None and x.waiter is not None and not x.waiter.done():
            x.waiter.set_result(value)

    def pause(self) -> None:
        """Stop reading the socket (the provider is slowed down by TCP flow control)."""
        if self.transport is not None and not self.paused:
            self.transport.pause_reading()
            self.paused = True

    def resume(self) -> None:
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
        self.resume()  # an idle connection reads, to notice when the provider closes it

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
            self.resume()
