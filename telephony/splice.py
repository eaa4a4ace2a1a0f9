"""The kernel relay: a known number of bytes moved from one socket to another with splice(2).

Copying through user space costs two copies per byte whatever the buffers (reused 256 KiB
buffers measured no cheaper than a fresh 1 MiB ``bytes`` per read, 0.56-0.61 CPU seconds per
GiB). On Linux, `Splicer` moves the bytes socket to pipe to socket inside the kernel instead:
no byte enters this process (docs/performance.md, P1). The pipe holds at most PIPE_BYTES, so a
slow receiver still slows the sender down. It knows nothing of HTTP: telephony/response.py
hands it the rest of a Content-Length body.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Callable

from telephony.errors import DownstreamClosed, UpstreamError

SPLICE = hasattr(os, "splice")
PIPE_BYTES = 1024 * 1024  # the pipe's capacity (Linux's default pipe-max-size)
F_SETPIPE_SZ = 1031
F_GETPIPE_SZ = 1032
SPLICE_FLAGS = getattr(os, "SPLICE_F_MOVE", 1) | getattr(os, "SPLICE_F_NONBLOCK", 2)


class Splicer:
    """Moves `length` bytes from the provider's socket (descriptor `source`) to `sock` through
    a pipe, driven by readiness callbacks: fill the pipe from the provider, drain it to the
    client, repeat. `done` gets the number of bytes moved, or `UpstreamError` when the provider
    breaks off or stalls longer than `idle_timeout` between bytes, or `DownstreamClosed` when
    `sock` fails, stalls longer than `client_timeout`, or `client_closed()` says it closed.
    Both sockets are non-blocking; `on_cut` is called when the relay stops short."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        source: int,
        sock: socket.socket,
        length: int,
        client_closed: Callable[[], bool],
        idle_timeout: float,
        client_timeout: float | None = None,
        on_cut: Callable[[], None] | None = None,
    ):
        self.loop = loop
        self.sock = sock
        self.client_closed = client_closed
        self.idle_timeout = idle_timeout
        self.client_timeout = client_timeout
        self.on_cut = on_cut
        self.left = length  # bytes still to take from the provider
        self.moved = 0
        self.in_pipe = 0
        self.done: asyncio.Future[int] = loop.create_future()
        # A duplicate descriptor of the provider's socket: asyncio refuses readers on a
        # descriptor its transport owns; this one is ours to watch and close.
        self.up = os.dup(source)
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
        if not self.complete and self.on_cut is not None:
            self.on_cut()  # e.g. the provider's connection, which can carry nothing else now
