"""HTTP/1.1 response parsing for the provider client, without any I/O.

`ResponseParser` is fed the bytes of one connection as they arrive, in any splits, and tells
its `Sink` about one response at a time: the final head (interim 1xx answers are skipped), the
body's pieces, and the end. It knows the three framings of a response body (Content-Length,
chunked with extensions and trailers, delimited by the connection closing) and the size limits
below. Whatever it cannot make sense of raises `ParseError`, the only exception it raises; the
same bytes give the same events and the same verdict however they are split.

A Content-Length body need not pass through the parser at all: while `mode` is "length" and
`buffer` is empty, the caller may receive up to `remaining` bytes into memory of its own and
report them with `body_received` (this is how telephony/connection.py lends its buffers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from tornado import httputil

MAX_HEAD_BYTES = 64 * 1024  # a head (status line, fields, blank line); also a body's trailers
MAX_LINE_BYTES = 4096  # a chunk-size line with its extensions and its line end
HEAD_END = re.compile(rb"\r?\n\r?\n")
STATUS_LINE = re.compile(r"(HTTP/1\.[0-9]) ([0-9]{3})(?: ([\t\x20-\x7e\x80-\xff]*))?")
# Up to 15 hex digits (below 2**60) and 18 decimal ones: sizes an int64 holds, and never a
# number too long for int() to convert (Python refuses strings over 4300 digits).
CHUNK_SIZE_LINE = re.compile(rb"([0-9a-fA-F]{1,15})[ \t]*(?:;[^\r\n]*)?")
CONTENT_LENGTH = re.compile(r"[0-9]{1,18}")
WHITESPACE = " \t"


class ParseError(Exception):
    """The bytes are not an HTTP/1.1 response this parser accepts (malformed, or too large)."""


@dataclass(frozen=True)
class ResponseHead:
    """A final (non-1xx) response head."""

    version: str  # "HTTP/1.0" or "HTTP/1.1"
    code: int
    reason: str
    headers: httputil.HTTPHeaders

    @property
    def keep_alive(self) -> bool:
        """Whether the connection may carry another request after this response."""
        return self.version == "HTTP/1.1" and "close" not in (
            self.headers.get("Connection", "").lower()
        )


class Sink(Protocol):
    """What a parser tells about the response it reads."""

    def on_head(self, head: ResponseHead) -> bool:
        """The final head arrived; return whether to read its body. When not, the response
        ends here (not reusable) and any byte after the head is a `ParseError`."""
        ...

    def on_body(self, piece: bytes) -> None:
        """The next piece of the body (never empty)."""
        ...

    def on_end(self, reusable: bool) -> None:
        """The response is over; `reusable`: the connection may carry another request (a
        kept-alive response read to its framed end). A byte after the end is a `ParseError`,
        raised by the same `feed` call when it came with the response."""
        ...


def content_length(value: str | None) -> int | None:
    """A Content-Length field's value as a number; None when absent. Raises `ParseError` when
    present but not a plain decimal number (a list like ``10, 10`` included)."""
    if value is None:
        return None
    if not CONTENT_LENGTH.fullmatch(value):
        raise ParseError("invalid Content-Length")
    return int(value)


def parse_head(block: bytes) -> tuple[str, int, str, httputil.HTTPHeaders]:
    """The status line and fields of a head (`block` ends before its blank line). Lines may end
    with CRLF or a bare LF; folded (obsolete) field lines are refused."""
    lines = block.decode("latin-1").split("\n")
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    status = STATUS_LINE.fullmatch(lines[0])
    if status is None:
        raise ParseError("invalid status line")
    headers = httputil.HTTPHeaders()
    for line in lines[1:]:
        parse_field(headers, line)
    return status.group(1), int(status.group(2)), status.group(3) or "", headers


def parse_field(headers: httputil.HTTPHeaders, line: str) -> None:
    """Add one field line (without its line end) to `headers`."""
    if not line or line[0] in WHITESPACE:
        # Folding is obsolete (RFC 9112, 5.2) and refused, as by current Tornado.
        raise ParseError("folded or empty field line")
    try:
        headers.parse_line(line)
    except httputil.HTTPInputError as exc:
        raise ParseError(f"invalid field line ({exc})") from None


class ResponseParser:
    """Reads the responses of one connection, one at a time, for a `Sink`.

    `start` announces each request (its method matters: a HEAD answer has no body), `feed`
    takes bytes, `eof` says the connection closed cleanly. `mode` is where the parser stands:
    "done" (no response expected: any byte is an error), "head", "length", "chunk-size",
    "chunk-data", "chunk-end" (the line end after a chunk's data), "trailer" or "close" (a body
    that ends with the connection).
    """

    def __init__(
        self,
        sink: Sink,
        *,
        max_head_bytes: int = MAX_HEAD_BYTES,
        max_line_bytes: int = MAX_LINE_BYTES,
    ):
        self.sink = sink
        self.max_head_bytes = max_head_bytes
        self.max_line_bytes = max_line_bytes
        self.mode = "done"
        self.method = "GET"
        self.remaining = 0  # bytes left of the Content-Length body or of the current chunk
        self.buffer = bytearray()  # bytes received and not parsed yet
        self._keep_alive = False
        self._scanned = 0  # how much of `buffer` is known to hold no line or head end
        self._trailer_bytes = 0

    def start(self, method: str) -> None:
        """Expect the response to a `method` request (bytes left over are discarded)."""
        self.method = method
        self.mode = "head"
        self.remaining = 0
        self.buffer.clear()
        self._keep_alive = False
        self._scanned = 0
        self._trailer_bytes = 0

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Parse `data`, the next bytes of the connection, telling the sink what they hold."""
        if self.mode == "done":
            if data:
                raise ParseError("bytes after the response")
            return
        self.buffer += data
        self._parse()

    def body_received(self, nbytes: int) -> None:
        """`nbytes` of the Content-Length body went straight to the caller (only while `mode`
        is "length" and `buffer` is empty, and never more than `remaining`)."""
        self.remaining -= nbytes
        if self.remaining == 0:
            self._finish(True)

    def eof(self) -> None:
        """The connection closed cleanly: this ends a body delimited by the close, and is a
        `ParseError` in the middle of any other response."""
        if self.mode == "close":
            self._finish(True)
        elif self.mode != "done":
            raise ParseError("the connection closed before the response ended")

    def _parse(self) -> None:
        buffer = self.buffer
        while True:
            mode = self.mode
            if mode in ("length", "chunk-data"):
                if not buffer:
                    return
                piece = bytes(buffer[: self.remaining])
                del buffer[: len(piece)]
                self.remaining -= len(piece)
                self.sink.on_body(piece)
                if self.remaining == 0:
                    if mode == "length":
                        self._finish(True)
                    else:
                        self.mode = "chunk-end"
            elif mode == "head":
                match = HEAD_END.search(buffer, max(0, self._scanned - 3))
                if match is None or match.end() > self.max_head_bytes:
                    # Without an end in the buffer, the head ends past the buffer's end.
                    if match is not None or len(buffer) >= self.max_head_bytes:
                        raise ParseError("response head too large")
                    self._scanned = len(buffer)
                    return
                block = bytes(buffer[: match.start()])
                del buffer[: match.end()]
                self._scanned = 0
                self._head(block)
            elif mode == "chunk-size":
                line = self._line(self.max_line_bytes, "chunk-size line too long")
                if line is None:
                    return
                size = CHUNK_SIZE_LINE.fullmatch(line)
                if size is None:
                    raise ParseError("invalid chunk-size line")
                self.remaining = int(size.group(1), 16)
                self.mode = "chunk-data" if self.remaining else "trailer"
            elif mode == "chunk-end":
                if buffer[:1] == b"\n":
                    del buffer[:1]
                elif buffer[:2] == b"\r\n":
                    del buffer[:2]
                elif not buffer or buffer == b"\r":
                    return
                else:
                    raise ParseError("chunk data not followed by a line end")
                self.mode = "chunk-size"
            elif mode == "trailer":
                room = self.max_head_bytes - self._trailer_bytes
                before = len(buffer)
                line = self._line(room, "trailer section too large")
                if line is None:
                    return
                self._trailer_bytes += before - len(buffer)
                if not line:
                    self._finish(True)
                else:  # checked like any field line, and dropped
                    parse_field(httputil.HTTPHeaders(), line.decode("latin-1"))
            elif mode == "close":
                if buffer:
                    piece = bytes(buffer)
                    buffer.clear()
                    self.sink.on_body(piece)
                return
            else:  # "done"
                if buffer:
                    raise ParseError("bytes after the response")
                return

    def _line(self, limit: int, too_long: str) -> bytes | None:
        """The next line without its line end (consumed), or None until it is complete. A
        line longer than `limit` (its line end included) is a `ParseError`, wherever the
        bytes were split."""
        buffer = self.buffer
        end = buffer.find(b"\n", self._scanned)
        if end < 0 or end >= limit:
            if end >= 0 or len(buffer) >= limit:
                raise ParseError(too_long)
            self._scanned = len(buffer)
            return None
        line = bytes(buffer[:end])
        del buffer[: end + 1]
        self._scanned = 0
        return line[:-1] if line.endswith(b"\r") else line

    def _head(self, block: bytes) -> None:
        version, code, reason, headers = parse_head(block)
        if 100 <= code < 200:
            return  # an interim answer; the final one follows
        head = ResponseHead(version, code, reason, headers)
        self._keep_alive = head.keep_alive
        if not self.sink.on_head(head):
            self._finish(False)
            return
        if self.method == "HEAD" or code in (204, 304):
            self._finish(True)
            return
        codings = headers.get("Transfer-Encoding")
        if codings is not None:
            # Chunked when it is the last coding (RFC 9112, 6.3); otherwise the body ends
            # with the connection. Content-Length is ignored either way.
            if codings.rpartition(",")[2].strip(WHITESPACE).lower() == "chunked":
                self.mode = "chunk-size"
            else:
                self.mode = "close"
            return
        length = content_length(headers.get("Content-Length"))
        if length is None:
            self.mode = "close"
        elif length == 0:
            self._finish(True)
        else:
            self.mode, self.remaining = "length", length

    def _finish(self, complete: bool) -> None:
        # Bytes already received after the end make `feed` raise right after this call.
        reusable = complete and self._keep_alive and self.mode != "close"
        self.mode = "done"
        self.sink.on_end(reusable)
