"""Streamed responses (a recording, a timeline, an export): bounded in number and cut when
nobody reads.

A workspace has at most `max_streams_per_workspace` streamed responses open at once in this
process; one more is 429 `too_many_streams` with Retry-After. A stream whose client takes no
byte for `stream_stall_seconds` while bytes wait for it is cut: the connection is closed, so
the handler's pending flush fails and it closes its upstream download or database cursor at
once (`on_connection_close`). A watchdog checks the socket's progress a few times per stall
period, so the relay loop itself pays nothing per chunk.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import struct
import termios
import time
from typing import Any, cast

from tornado.http1connection import HTTP1Connection
from tornado.ioloop import IOLoop
from tornado.iostream import IOStream

from handlers.base import APIError, APIHandler

log = logging.getLogger("workspace_api")

RETRY_AFTER = "5"
TIOCOUTQ = getattr(termios, "TIOCOUTQ", None)
CHECKS_PER_STALL = 4
DATABASE_TURNS = 1


class StreamSlots:
    """Streams open per workspace, counted in this process (built once per application), and
    the turns streams take at the database: at most `DATABASE_TURNS` of their batch reads are
    in flight at once, so that an ordinary request's query never queues behind a batch read
    of every open stream (the store's reads share a few threads or connections)."""

    def __init__(self, per_workspace: int, gauge: Any = None):
        self.per_workspace = per_workspace
        self.open: dict[str, int] = {}
        self.database_turns = asyncio.Semaphore(DATABASE_TURNS)
        self.gauge = gauge  # wsapi_streams_open (server.metrics) when metrics are on

    def take(self, workspace_id: str) -> bool:
        count = self.open.get(workspace_id, 0)
        if count >= self.per_workspace:
            return False
        self.open[workspace_id] = count + 1
        if self.gauge is not None:
            self.gauge.inc()
        return True

    def give_back(self, workspace_id: str) -> None:
        if self.gauge is not None and workspace_id in self.open:
            self.gauge.dec()
        count = self.open.get(workspace_id, 0) - 1
        if count > 0:
            self.open[workspace_id] = count
        else:
            self.open.pop(workspace_id, None)


def stream_slots(settings: dict) -> StreamSlots:
    if "stream_slots" not in settings:
        metrics = settings.get("metrics")
        settings["stream_slots"] = StreamSlots(
            settings["config"].max_streams_per_workspace,
            metrics.streams_open if metrics is not None else None,
        )
    return settings["stream_slots"]


def _delivered(stream: IOStream) -> tuple[int | None, bool]:
    """(bytes the client has taken so far, whether bytes are waiting for it).

    Taken means handed to the socket (Tornado's count for its flush futures) and, where the
    system tells (Linux: TIOCOUTQ), acknowledged by the client: a kernel send buffer of some
    MB otherwise hides for seconds that a slow client is still reading."""
    written = getattr(stream, "_total_write_done_index", None)
    unacked = 0
    if TIOCOUTQ is not None and written is not None:
        try:
            unacked = struct.unpack("i", fcntl.ioctl(stream.socket, TIOCOUTQ, b"\0" * 4))[0]
        except (OSError, ValueError, TypeError):
            unacked = 0
    return (None if written is None else written - unacked), stream.writing() or unacked > 0


class StreamingHandler(APIHandler):
    """Call `open_stream()` once the response is known to be a stream, before opening what
    feeds it; the slot is given back and the watchdog stopped however the request ends."""

    _slot_held = False
    _watchdog = None
    cut_for_stalling = False

    @property
    def connection(self) -> HTTP1Connection:
        """The client's connection: Tornado types `request.connection` as the abstract
        HTTPConnection (without `stream`) or None, where a served request always has an
        HTTP1Connection (wrapped by server.gate, which hands on every attribute)."""
        return cast(HTTP1Connection, self.request.connection)

    def open_stream(self) -> None:
        if not stream_slots(self.settings).take(self.workspace_id):
            limit = self.settings["config"].max_streams_per_workspace
            raise APIError(
                "too_many_streams",
                f"the workspace already has {limit} streamed "
                "responses open (recordings, timelines and exports); retry when one ends",
                headers={"Retry-After": RETRY_AFTER},
            )
        self._slot_held = True
        self._stall_seconds = self.settings["config"].stream_stall_seconds
        self._progress = (_delivered(self.connection.stream)[0], time.monotonic())
        self._arm()

    def _arm(self) -> None:
        self._watchdog = IOLoop.current().call_later(
            self._stall_seconds / CHECKS_PER_STALL, self._check
        )

    def _check(self) -> None:
        """Cut the connection when bytes have waited for the client, untaken, long enough."""
        stream = self.connection.stream
        if stream.closed():
            return
        (delivered, waiting), now = _delivered(stream), time.monotonic()
        if not waiting or delivered is None or delivered != self._progress[0]:
            self._progress = (delivered, now)
        elif now - self._progress[1] >= self._stall_seconds:
            self.cut_for_stalling = True
            log.info(
                "stream cut: the client took nothing for %s s (request %s)",
                self._stall_seconds,
                self.request_id,
            )
            stream.close()  # -> on_connection_close: the feeding side closes at once
            return
        self._arm()

    def close_stream(self) -> None:
        if self._watchdog is not None:
            IOLoop.current().remove_timeout(self._watchdog)
            self._watchdog = None
        if self._slot_held:
            self._slot_held = False
            stream_slots(self.settings).give_back(self.workspace_id)

    def on_finish(self) -> None:
        self.close_stream()

    def on_connection_close(self) -> None:
        self.close_stream()
