"""A webhook receiver for the tests: a Tornado server on a free loopback port that records
every request it gets and answers as the test tells it (status, headers, a delay), always with
a body holding MARKER, which must never come back in any API response or log line."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import socket
from collections.abc import Awaitable, Callable

import tornado.web
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from tests.helpers import until, wait_for  # noqa: F401 (imported from here by tests)

MARKER = "receiver-body-marker-7f3e9c"


@dataclasses.dataclass
class Received:
    webhook_id: str
    timestamp: str
    signature: str
    content_type: str
    body: bytes
    headers: dict[str, str]
    at: dt.datetime  # when it arrived (UTC, naive)
    path: str


@dataclasses.dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    delay: float = 0.0


# (the request, how many requests with its webhook-id arrived so far, this one included)
Plan = Callable[[Received, int], Answer | Awaitable[Answer]]


class _Hook(tornado.web.RequestHandler):
    def initialize(self, receiver: Receiver) -> None:
        self.receiver = receiver

    async def post(self, *args: str) -> None:
        await self.receiver.handle(self)

    def check_xsrf_cookie(self) -> None:
        return None


class Receiver:
    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.plan: Plan = lambda request, number: Answer()
        self.max_in_flight: dict[str, int] = {}  # path -> the most requests at once
        self._current: dict[str, int] = {}
        self.server: HTTPServer | None = None
        self.port = 0

    def start(self, port: int = 0) -> Receiver:
        """Listen on `port` (0: a free one; the same port again after `stop`)."""
        sockets = bind_sockets(port, "127.0.0.1", family=socket.AF_INET)
        self.port = sockets[0].getsockname()[1]
        app = tornado.web.Application([(r"/(.*)", _Hook, {"receiver": self})])
        self.server = HTTPServer(app)
        self.server.add_sockets(sockets)
        return self

    async def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            await self.server.close_all_connections()

    @property
    def in_flight(self) -> int:
        """Requests being answered now, every path together."""
        return sum(self._current.values())

    def url(self, path: str = "hook") -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def ids(self, path: str | None = None) -> list[str]:
        return [r.webhook_id for r in self.requests if path is None or r.path == path]

    async def handle(self, handler: tornado.web.RequestHandler) -> None:
        request = handler.request
        headers = {name.lower(): value for name, value in request.headers.get_all()}
        received = Received(
            headers.get("webhook-id", ""),
            headers.get("webhook-timestamp", ""),
            headers.get("webhook-signature", ""),
            headers.get("content-type", ""),
            request.body,
            headers,
            dt.datetime.now(dt.UTC).replace(tzinfo=None),
            request.path.lstrip("/"),
        )
        self.requests.append(received)
        number = sum(1 for r in self.requests if r.webhook_id == received.webhook_id)
        path = received.path
        self._current[path] = self._current.get(path, 0) + 1
        self.max_in_flight[path] = max(self.max_in_flight.get(path, 0), self._current[path])
        try:
            answer = self.plan(received, number)
            if asyncio.iscoroutine(answer) or isinstance(answer, Awaitable):
                answer = await answer
            if answer.delay:
                await asyncio.sleep(answer.delay)
        finally:
            self._current[path] -= 1
        handler.set_status(answer.status)
        for name, value in answer.headers.items():
            handler.set_header(name, value)
        if answer.status in (204, 304):
            handler.finish()
            return
        handler.set_header("Content-Type", "text/plain")
        handler.finish(f"{MARKER} {answer.status}")
