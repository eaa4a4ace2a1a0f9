"""GET|HEAD /v1/calls/{id}/recording: a call's recording, streamed from the telephony provider.

The provider is asked for exactly what the client asked for (one byte range or the whole
file, with If-Range passed on), with the service's own credentials, through the
`UpstreamClient` in ``settings["upstream"]``. The status is decided from the provider's
response head, before the first byte goes out; once bytes flow, a provider failure aborts
the client's connection so that the transfer is visibly truncated, never cleanly ended.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from tornado.http1connection import HTTP1Connection
from tornado.iostream import StreamClosedError
from tornado.web import Finish

from handlers import ranges
from handlers.base import UUID, APIError
from handlers.streams import StreamingHandler
from telephony.errors import (
    DownstreamClosed,
    UpstreamError,
    UpstreamNotFound,
    UpstreamRangeNotSatisfiable,
)
from telephony.response import UpstreamResponse
from telephony.upstream import UpstreamClient

log = logging.getLogger("workspace_api")
T = TypeVar("T")


def no_recording() -> APIError:
    # One answer for an unknown call, another workspace's call, a call without a recording
    # and a recording the provider does not have.
    return APIError("not_found", "there is no recording of a call with this id in your workspace")


def upstream_failed() -> APIError:
    return APIError("upstream_error", "the telephony provider failed to deliver the recording")


def unsatisfiable(length: int | None) -> APIError:
    return ranges.unsatisfiable(length, "recording")


def count_written(connection: HTTP1Connection, sent: int) -> None:
    """Tell Tornado's HTTP1Connection about body bytes that went out past it (spliced), so that
    its Content-Length check at finish() holds. server/gate.py wraps the connection."""
    raw = getattr(connection, "_raw", connection)
    remaining = getattr(raw, "_expected_content_remaining", None)
    if remaining is not None:
        raw._expected_content_remaining = remaining - sent


class RecordingHandler(StreamingHandler):
    pending: asyncio.Future | None = None
    upstream_response: UpstreamResponse | None = None

    async def get(self, call_id: str) -> None:  # and HEAD (APIHandler.head)
        await self.relay(call_id)

    async def relay(self, call_id: str) -> None:
        if not UUID.match(call_id):
            raise no_recording()
        call_id = call_id.lower()
        ref = await self.store.calls.recording_ref(self.workspace_id, call_id)
        if ref is None:
            raise no_recording()
        try:
            wanted, valid = ranges.parse_range(self.request.headers.get("Range")), True
        except ranges.InvalidRange:
            wanted, valid = None, False
        if not valid:
            # 416 carries the length, which only the provider knows.
            raise unsatisfiable(await self.ask(lambda upstream: upstream.content_length(ref)))
        if_range = self.request.headers.get("If-Range")
        if wanted is not None and if_range is not None and not ranges.STRONG_ETAG.match(if_range):
            wanted = None  # a date or a weak validator never matches: the whole recording
        if self.request.method == "GET":
            self.open_stream()  # a slot of the workspace's, and cut if the client stalls
        response = await self.ask(
            lambda upstream: upstream.open(
                ref,
                method=self.request.method or "GET",
                range_header=wanted.header() if wanted else None,
                if_range=if_range if wanted else None,
            ),
            wanted,
        )
        self.upstream_response = response
        try:
            self.set_headers_from(response, wanted, call_id)
            if self.request.method == "GET":
                await self.stream_body(response)
        finally:
            response.close()

    async def ask(
        self, call: Callable[[UpstreamClient], Awaitable[T]], wanted: ranges.ByteRange | None = None
    ) -> T:
        """Run one upstream call and map its failures to the API's problems."""
        upstream = self.settings.get("upstream")
        if upstream is None:
            log.warning("no telephony provider configured (request %s)", self.request_id)
            raise upstream_failed()
        if self.connection.stream.closed():
            raise Finish()  # the client left before the provider was asked: ask nothing
        # A task of its own, so that a client that goes away can cancel it (on_connection_close)
        # even while the provider has not answered yet.
        self.pending = asyncio.ensure_future(call(upstream))
        try:
            return await self.pending
        except asyncio.CancelledError:
            if not self.pending.cancelled() or not self.connection.stream.closed():
                raise
            raise Finish() from None  # the client is gone: nothing left to answer
        except UpstreamNotFound:
            raise no_recording() from None
        except UpstreamRangeNotSatisfiable as exc:
            length = exc.complete_length
            if wanted is not None and length is not None and wanted.resolve(length) is not None:
                self.note_failure("the provider refused a satisfiable range")
                raise upstream_failed() from None
            raise unsatisfiable(length) from None
        except UpstreamError as exc:
            self.note_failure(str(exc))
            raise upstream_failed() from None
        finally:
            self.pending = None

    def set_headers_from(
        self, response: UpstreamResponse, wanted: ranges.ByteRange | None, call_id: str
    ) -> None:
        if response.status == 206:
            assert wanted is not None and response.content_range is not None
            start, end, length = (
                response.content_range.start,
                response.content_range.end,
                response.content_range.complete_length,
            )
            if not wanted.delivered(start, end, length):
                self.note_failure("the provider sent another range than the one asked for")
                raise upstream_failed()
            self.set_status(206)
            total = "*" if length is None else length
            self.set_header("Content-Range", f"bytes {start}-{end}/{total}")
            self.set_header("Content-Length", end - start + 1)
        elif response.content_length is not None:
            self.set_header("Content-Length", response.content_length)
        self.set_header("Content-Type", "audio/mpeg")
        self.set_header("Accept-Ranges", "bytes")
        self.set_header("Content-Disposition", f'attachment; filename="call-{call_id}.mp3"')
        if response.etag and ranges.ETAG.match(response.etag):
            self.set_header("ETag", response.etag)

    async def stream_body(self, response: UpstreamResponse) -> None:
        """Relay the body as it arrives. Every piece the provider sent since the last write goes
        to the client's connection as it is (a borrowed buffer, never copied), then the relay
        waits until the client has taken all of them before it hands the buffers back for the
        provider's next bytes: the upstream is read only as fast as the client reads (see
        telephony/connection.py). Only the last write's future is awaited: HTTP1Connection
        resolves only its latest one. The head goes out first, as soon as the provider's head
        decided it, without waiting for the provider's first body bytes (a seek's time to
        first byte); from then on a provider failure can only cut the connection."""
        write = self.connection.write
        self.flush()
        sent = True
        relayed = 0  # body bytes handed to the client's connection
        try:
            while pieces := await response.next_pieces():
                for piece in pieces:
                    # IOStream.write takes any buffer; HTTP1Connection.write's hint says bytes.
                    pending = write(piece)  # type: ignore[arg-type]
                    relayed += len(piece)
                await pending
                stream = self.connection.stream
                if stream.closed():
                    return  # (a write to a closed stream still resolves its future)
                if response.can_splice:
                    # The rest moves inside the kernel, socket to socket (Linux, plain TCP).
                    moved = await response.splice_to(stream.socket, stream.closed)
                    count_written(self.connection, moved)
                    relayed += moved
        except (StreamClosedError, DownstreamClosed):
            return  # the client went away; closing the response stops the provider
        except UpstreamError as exc:
            if self.connection.stream.closed():
                return  # on_connection_close dropped the upstream: nothing failed there
            self.note_failure(str(exc))
            if not sent:
                raise upstream_failed() from None  # nothing went out yet: a clean 502
            # Bytes went out under a 200/206: only a cut connection tells the client.
            self.connection.close()
        finally:
            if relayed and (metrics := self.settings.get("metrics")) is not None:
                metrics.recording_bytes.inc(relayed)

    def on_connection_close(self) -> None:
        super().on_connection_close()
        if self.pending is not None:
            self.pending.cancel()
        if self.upstream_response is not None:
            self.upstream_response.close()

    def note_failure(self, reason: str) -> None:
        # `reason` comes from UpstreamError messages, which never name host, path or secrets.
        if (metrics := self.settings.get("metrics")) is not None:
            metrics.upstream_errors.inc()
        log.warning("recording upstream failure: %s (request %s)", reason, self.request_id)


default_handlers = [(r"/v1/calls/([^/]+)/recording", RecordingHandler)]
