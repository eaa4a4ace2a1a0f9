"""A small asyncio HTTP/1.1 client for the benchmarks: closed-loop keep-alive load, and single
streamed downloads (fast, or paced like a slow client). Loopback only, bounded in count and time.

Built on `asyncio.Protocol` rather than streams so that the client costs little CPU per request:
on two cores the server under test, not the load generator, must be the bottleneck.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import socket
import time
from collections import Counter
from collections.abc import Callable

READ_BUFFER = 1024 * 1024
HEAD, LENGTH, CHUNK_SIZE, CHUNK_DATA, CHUNK_END, TRAILER, UNTIL_CLOSE, DONE = range(8)


def check_loopback(host: str) -> None:
    """Refuse any target that is not on this machine: the benchmarks never leave loopback."""
    if host == "localhost":
        return
    if not ipaddress.ip_address(host).is_loopback:
        raise ValueError(f"benchmark traffic is loopback only, not {host}")


def request_bytes(
    method: str, path: str, host: str, port: int, headers: dict | None = None, body: bytes = b""
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}"]
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class ResponseReader:
    """Incremental HTTP/1.1 response parser (Content-Length, chunked, or until close).

    Calls `on_head(status, headers)`, `on_data(memoryview)` for body bytes, `on_done()` at the
    end of each response; body bytes are never accumulated here.
    """

    def __init__(
        self, on_head: Callable, on_data: Callable, on_done: Callable, head_request: bool = False
    ):
        self.on_head, self.on_data, self.on_done = on_head, on_data, on_done
        self.head_request = head_request
        self.buf = bytearray()
        self.state = HEAD
        self.remaining = 0

    def feed(self, data: bytes | memoryview) -> None:
        view = data if isinstance(data, memoryview) else memoryview(data)
        pos, end = 0, len(data)
        while pos < end:
            state = self.state
            if state in (LENGTH, CHUNK_DATA, UNTIL_CLOSE):
                take = end - pos if state == UNTIL_CLOSE else min(self.remaining, end - pos)
                self.on_data(view[pos : pos + take])
                pos += take
                if state == UNTIL_CLOSE:
                    continue
                self.remaining -= take
                if self.remaining == 0:
                    if state == LENGTH:
                        self._finish()
                    else:
                        self.state = CHUNK_END
                continue
            if state == DONE:
                return  # bytes after a response we did not ask for: ignore
            # Line-oriented states: accumulate until the terminator.
            self.buf += view[pos:]
            pos = end
            terminator = b"\r\n\r\n" if state == HEAD else b"\r\n"
            index = self.buf.find(terminator)
            if index < 0:
                return
            line = bytes(self.buf[:index])
            rest = bytes(self.buf[index + len(terminator) :])
            self.buf.clear()
            self._line(state, line)
            view, pos, end = memoryview(rest), 0, len(rest)

    def connection_closed(self) -> bool:
        """True when the close ended a body delimited by the connection closing."""
        if self.state == UNTIL_CLOSE:
            self._finish()
            return True
        return False

    def _line(self, state: int, line: bytes) -> None:
        if state == HEAD:
            status_line, _, rest = line.partition(b"\r\n")
            status = int(status_line.split(b" ", 2)[1])
            headers = {}
            for raw in rest.split(b"\r\n"):
                name, _, value = raw.partition(b":")
                headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
            self.on_head(status, headers)
            if self.head_request or status in (204, 304) or 100 <= status < 200:
                self._finish()
            elif headers.get("transfer-encoding", "").lower() == "chunked":
                self.state = CHUNK_SIZE
            elif "content-length" in headers:
                self.remaining = int(headers["content-length"])
                self.state = LENGTH
                if self.remaining == 0:
                    self._finish()
            else:
                self.state = UNTIL_CLOSE
        elif state == CHUNK_SIZE:
            size = int(line.split(b";")[0].strip(), 16)
            if size == 0:
                self.state = TRAILER
            else:
                self.remaining, self.state = size, CHUNK_DATA
        elif state == CHUNK_END:
            self.state = CHUNK_SIZE
        elif state == TRAILER and not line:
            self._finish()

    def _finish(self) -> None:
        self.state = HEAD
        self.on_done()


# --- closed-loop keep-alive load -------------------------------------------------------------


@dataclasses.dataclass
class LoadResult:
    requests: int = 0
    errors: int = 0  # non-2xx answers and broken connections
    elapsed: float = 0.0
    statuses: Counter = dataclasses.field(default_factory=Counter)
    latencies: list[float] = dataclasses.field(default_factory=list)  # seconds

    @property
    def rps(self) -> float:
        return self.requests / self.elapsed if self.elapsed > 0 else 0.0


class _LoadRun:
    def __init__(self, make_request: Callable[[int], bytes], deadline: float, max_requests: int):
        self.make_request = make_request
        self.deadline = deadline
        self.max_requests = max_requests
        self.issued = 0
        self.result = LoadResult()
        self.last_done = 0.0

    def next_request(self) -> bytes | None:
        if self.issued >= self.max_requests or time.perf_counter() >= self.deadline:
            return None
        self.issued += 1
        return self.make_request(self.issued - 1)


class _LoadConnection(asyncio.Protocol):
    def __init__(self, run: _LoadRun, finished: asyncio.Future):
        self.run = run
        self.finished = finished
        self.reader = ResponseReader(self._head, _ignore, self._done)
        self.status = 0
        self.sent_at = 0.0
        self.transport: asyncio.Transport | None = None
        self.busy = False

    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._send()

    def _send(self) -> None:
        request = self.run.next_request()
        if request is None:
            self.busy = False
            self.transport.close()
            if not self.finished.done():
                self.finished.set_result(None)
            return
        self.busy = True
        self.sent_at = time.perf_counter()
        self.transport.write(request)

    def _head(self, status: int, headers: dict) -> None:
        self.status = status

    def _done(self) -> None:
        now = time.perf_counter()
        result = self.run.result
        result.requests += 1
        result.statuses[self.status] += 1
        if not 200 <= self.status < 300:
            result.errors += 1
        result.latencies.append(now - self.sent_at)
        self.run.last_done = now
        self._send()

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)

    def connection_lost(self, exc) -> None:
        if self.busy:
            self.run.result.errors += 1
            self.run.result.statuses["broken"] += 1
        if not self.finished.done():
            self.finished.set_result(None)


def _ignore(_data) -> None:
    pass


async def run_load(
    host: str,
    port: int,
    make_request: Callable[[int], bytes],
    *,
    connections: int,
    duration: float,
    max_requests: int = 10**9,
) -> LoadResult:
    """Keep `connections` keep-alive connections busy, one request in flight on each, until
    `duration` seconds or `max_requests` requests have passed; returns every latency."""
    check_loopback(host)
    loop = asyncio.get_running_loop()
    start = time.perf_counter()
    run = _LoadRun(make_request, start + duration, max_requests)
    run.last_done = start
    finished = [loop.create_future() for _ in range(connections)]
    for future in finished:
        await loop.create_connection(lambda f=future: _LoadConnection(run, f), host, port)
    await asyncio.wait_for(asyncio.gather(*finished), duration + 60)
    run.result.elapsed = run.last_done - start
    return run.result


# --- one streamed download -------------------------------------------------------------------


@dataclasses.dataclass
class Download:
    status: int = 0
    headers: dict = dataclasses.field(default_factory=dict)
    body_bytes: int = 0
    ttfb: float = 0.0  # seconds from sending the request to the first response byte
    total: float = 0.0  # seconds from sending the request to the last byte (or the stop)
    complete: bool = False  # the whole response arrived
    body: bytes | None = None  # kept only when asked for


class _DownloadProtocol(asyncio.BufferedProtocol):
    """Reads into one reusable buffer (no allocation per read), so that the client costs as
    little CPU per byte as it can: on two cores it shares the CPU with the servers."""

    def __init__(
        self,
        request: bytes,
        done: asyncio.Future,
        rate: float | None,
        keep: bool,
        head_request: bool,
    ):
        self.buffer = bytearray(READ_BUFFER)
        self.view = memoryview(self.buffer)
        self.request = request
        self.done = done
        self.rate = rate
        self.result = Download()
        self.keep = bytearray() if keep else None
        self.reader = ResponseReader(self._head, self._data, self._finished, head_request)
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.sent_at = 0.0
        self.first = False
        self.paused = False

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.sent_at = time.perf_counter()
        transport.write(self.request)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.view

    def buffer_updated(self, nbytes: int) -> None:
        if not self.first:
            self.first = True
            self.result.ttfb = time.perf_counter() - self.sent_at
        self.reader.feed(self.view[:nbytes])
        if self.rate and not self.done.done():
            # Pace like a slow client: stop reading until the average rate is back to `rate`.
            ahead = self.result.body_bytes / self.rate - (time.perf_counter() - self.sent_at)
            if ahead > 0.005:
                self.transport.pause_reading()
                self.paused = True
                self.loop.call_later(ahead, self._resume)

    def _resume(self) -> None:
        if self.paused and not self.transport.is_closing():
            self.paused = False
            self.transport.resume_reading()

    def _head(self, status: int, headers: dict) -> None:
        self.result.status, self.result.headers = status, headers

    def _data(self, view: memoryview) -> None:
        self.result.body_bytes += len(view)
        if self.keep is not None:
            self.keep += view

    def _finished(self) -> None:
        self.result.complete = True
        self._settle()
        self.transport.close()

    def connection_lost(self, exc) -> None:
        self.reader.connection_closed()
        self._settle()

    def _settle(self) -> None:
        if not self.done.done():
            self.result.total = time.perf_counter() - self.sent_at
            if self.keep is not None:
                self.result.body = bytes(self.keep)
            self.done.set_result(self.result)


async def download(
    host: str,
    port: int,
    request: bytes,
    *,
    rate: float | None = None,
    max_seconds: float = 120.0,
    rcvbuf: int | None = None,
    keep: bool = False,
    head_request: bool = False,
) -> Download:
    """Send one request on a fresh connection and read the whole response, at most
    `max_seconds` long; `rate` (bytes/s) paces the reading, `rcvbuf` shrinks the socket's
    receive buffer so that a slow reader really pushes back on the server."""
    check_loopback(host)
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await loop.sock_connect(sock, (host, port))
    transport, protocol = await loop.create_connection(
        lambda: _DownloadProtocol(request, done, rate, keep, head_request), sock=sock
    )
    try:
        return await asyncio.wait_for(asyncio.shield(done), max_seconds)
    except TimeoutError:
        protocol.result.total = time.perf_counter() - protocol.sent_at
        return protocol.result
    finally:
        transport.abort() if not protocol.result.complete else transport.close()
