"""What every request passes before the application sees it: the body size cap, the number of
query fields, and the count of requests in flight that a graceful shutdown waits for.

Tornado's own `max_body_size` answers an oversized body with a bare `400` and a closed
connection. The gate instead stops buffering at `max_body_bytes` (declared Content-Length or
chunked) and hands the request to the application marked `body_too_large`, so the client gets
the API's JSON 413; the rest of the body is read and dropped for a few seconds (so the client
gets to read the reply) and the connection is then closed.

Tornado also answers a query of more than 1,000 fields with a bare `400` of its own. The gate
hands such a request (over 100 fields) to the application without its query, marked with
`query_fields_over`, and the application answers with the API's 400 (handlers.base).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any, cast

from tornado import httputil
from tornado.http1connection import HTTP1Connection
from tornado.ioloop import IOLoop

# More query fields than any operation takes, and fewer than Tornado's own limit (1,000).
MAX_QUERY_FIELDS = 100


class Gate(httputil.HTTPServerConnectionDelegate):
    def __init__(
        self,
        app: httputil.HTTPServerConnectionDelegate,
        max_body_bytes: int,
        linger_seconds: float = 5.0,
        in_flight: Any = None,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.linger_seconds = linger_seconds
        self.inflight = 0
        # The wsapi_http_requests_in_flight gauge (server.metrics) when metrics are on.
        self.in_flight_gauge = in_flight

    def start_request(
        self, server_conn: object, request_conn: httputil.HTTPConnection
    ) -> httputil.HTTPMessageDelegate:
        return _Request(self, server_conn, request_conn)

    def on_close(self, server_conn: object) -> None:
        self.app.on_close(server_conn)


class _Connection:
    """The request's connection as the application sees it: its finish() goes through the gate."""

    def __init__(self, raw: HTTP1Connection, request: _Request) -> None:
        self._raw, self._request = raw, request
        self.body_too_large = False
        self.query_fields_over = 0  # or the limit that the request's query went over

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)

    def finish(self) -> None:
        self._request.reply_written()

    def set_close_callback(self, callback: Callable[[], None] | None) -> None:
        """A request whose connection closes (the client left, or a handler cut a stream short)
        is no longer in flight, whether or not its handler finishes it."""

        def closed() -> None:
            self._request.done()
            if callback:
                callback()

        self._raw.set_close_callback(closed if callback else None)


class _Request(httputil.HTTPMessageDelegate):
    def __init__(
        self, gate: Gate, server_conn: object, request_conn: httputil.HTTPConnection
    ) -> None:
        self.gate = gate
        self.raw = cast(HTTP1Connection, request_conn)  # what HTTPServer's connections give
        self.conn = _Connection(self.raw, self)
        # The application gets the stand-in, which hands on what it does not do itself.
        self.inner = gate.app.start_request(server_conn, cast(httputil.HTTPConnection, self.conn))
        self.received = 0
        self.started = self.cut = self.body_done = self.finished = False
        self.linger: object | None = None  # IOLoop.call_later's handle

    async def headers_received(
        self,
        start_line: httputil.RequestStartLine | httputil.ResponseStartLine,
        headers: httputil.HTTPHeaders,
    ) -> None:
        assert isinstance(start_line, httputil.RequestStartLine)  # a server reads requests
        self.started = True
        self.gate.inflight += 1
        if self.gate.in_flight_gauge is not None:
            self.gate.in_flight_gauge.inc()
        path, _, query = start_line.path.partition("?")
        if query.count("&") >= MAX_QUERY_FIELDS:  # as counted by urllib.parse.parse_qsl
            self.conn.query_fields_over = MAX_QUERY_FIELDS
            start_line = start_line._replace(path=path)
        pending = self.inner.headers_received(start_line, headers)
        if pending is not None:
            await pending
        length = headers.get("Content-Length", "")
        if length.isdigit() and int(length) > self.gate.max_body_bytes:
            headers.pop("Expect", None)  # no "100 Continue": the client need not send it at all
            self.cut_off()

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        if self.cut:
            return None
        self.received += len(chunk)
        if self.received > self.gate.max_body_bytes:
            self.cut_off()
            return None
        return self.inner.data_received(chunk)

    def cut_off(self) -> None:
        """Let the application answer now (413) and discard the rest of the body."""
        self.cut = True
        self.conn.body_too_large = True
        self.raw.set_max_body_size(sys.maxsize)  # or Tornado adds a bare 400 after our reply
        self.inner.finish()

    def reply_written(self) -> None:
        """The application finished its reply. If it did so while the body is still coming in
        (a cut-off request), keep reading and dropping the body for a while before Tornado
        closes the connection: closing on unread data sends a TCP reset, which can destroy the
        reply before the client reads it (the "lingering close" of Apache and nginx)."""
        if self.cut and not self.body_done:
            self.linger = IOLoop.current().call_later(self.gate.linger_seconds, self.finish_reply)
        else:
            self.finish_reply()

    def finish_reply(self) -> None:
        if self.finished:
            return
        self.finished = True
        if self.linger is not None:
            IOLoop.current().remove_timeout(self.linger)
        try:
            self.raw.finish()  # closes the connection unless the whole body has been read
        finally:
            self.done()

    def done(self) -> None:
        if self.started:
            self.started = False
            self.gate.inflight -= 1
            if self.gate.in_flight_gauge is not None:
                self.gate.in_flight_gauge.dec()

    def finish(self) -> None:
        self.body_done = True
        if not self.cut:
            self.inner.finish()
        elif self.linger is not None:
            self.finish_reply()

    def on_connection_close(self) -> None:
        self.body_done = True
        if self.linger is not None:
            self.finish_reply()
        self.done()
        if not self.cut:
            self.inner.on_connection_close()
