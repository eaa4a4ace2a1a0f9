"""SIMULATED telephony provider: the stand-in that the demo, the tests and the benchmarks start.

Not the real provider and never used in production: `telephony.upstream` is what the API uses
to talk to a provider. This one is a Twilio-like recordings endpoint with switchable faults.

Serves ``GET|HEAD /2010-04-01/Accounts/{AccountSid}/Recordings/{ref}.mp3`` behind HTTP Basic
auth, with single byte ranges, strong ETags and ``If-Range``; ``DELETE .../Recordings/{ref}.json``
(204, and the recording is 404 from then on); and places calls (simulated_calls). A recording
is a virtual file that repeats one short clip encoded once with lameenc, so a recording of any
size is served from constant memory. Tests switch faults on `ProviderFaults` and read
`ProviderStats` (simulated_faults); `workspace-api provider` runs it alone (simulated_standalone).
"""

from __future__ import annotations

import array
import base64
import binascii
import functools
import hashlib
import hmac
import logging
import math
import re
import socket
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, cast

import tornado.httpserver
import tornado.netutil
import tornado.web
from tornado.http1connection import HTTP1Connection
from tornado.httputil import HTTPServerRequest
from tornado.iostream import IOStream, StreamClosedError

from telephony.simulated_calls import CallPlacer, calls_route
from telephony.simulated_faults import (
    DELETE_FAULT_KINDS,
    FAULT_KINDS,
    Fault,
    ProviderFaults,
    ProviderRequest,
    ProviderStats,
)

__all__ = [
    "DELETE_FAULT_KINDS",
    "FAULT_KINDS",
    "Fault",
    "ProviderFaults",
    "ProviderLibrary",
    "ProviderRequest",
    "ProviderServer",
    "ProviderStats",
    "Recording",
    "base_clip",
    "make_provider_app",
    "make_ref",
    "parse_range",
    "start_provider",
]

# The simulated third party logs apart from the API, and its access lines (debug level) name
# neither the account nor the host, so a demo process mixing both logs leaks neither.
log = logging.getLogger("simulated_provider")

API_VERSION = "2010-04-01"
REF_PATTERN = re.compile(r"^RE[0-9a-f]{32}$")
CHUNK_SIZE = 256 * 1024  # largest body piece written before awaiting flush()

SAMPLE_RATE = 44_100
BITRATE_KBPS = 128
CLIP_SECONDS = 4
MIN_CLIPS, MAX_CLIPS = 2, 75  # derived recordings last 8..300 s


# --- audio -------------------------------------------------------------------------------


@functools.cache
def base_clip() -> bytes:
    """A few seconds of a soft C-major chord as 128 kbps CBR mono MP3, encoded once."""
    import lameenc  # imported here so that importing the module stays cheap

    total = SAMPLE_RATE * CLIP_SECONDS
    fade = SAMPLE_RATE // 20  # 50 ms fades keep the seams between repetitions click-free
    freqs = (261.63, 329.63, 392.00)
    step = [2 * math.pi * f / SAMPLE_RATE for f in freqs]
    pcm = array.array("h")
    for i in range(total):
        envelope = min(1.0, i / fade, (total - i) / fade)
        value = (math.sin(step[0] * i) + math.sin(step[1] * i) + math.sin(step[2] * i)) / 3
        pcm.append(int(value * envelope * 0.3 * 32767))
    encoder = lameenc.Encoder()
    encoder.set_bit_rate(BITRATE_KBPS)
    encoder.set_in_sample_rate(SAMPLE_RATE)
    encoder.set_channels(1)
    encoder.set_quality(2)
    # Each repetition starts a fresh MP3 stream (no bit reservoir reaches back across a
    # seam), so any concatenation of clips is a playable file.
    return bytes(encoder.encode(pcm.tobytes()) + encoder.flush())


@functools.cache
def _tile() -> bytes:
    """The clip repeated so that any CHUNK_SIZE window is one slice."""
    clip = base_clip()
    return clip * (CHUNK_SIZE // len(clip) + 2)


@dataclass(frozen=True)
class Recording:
    """A virtual MP3 file of `size` bytes: the base clip repeated and cut at `size`."""

    ref: str
    size: int

    @property
    def etag(self) -> str:
        digest = hashlib.sha256(f"{self.ref}:{self.size}:{len(base_clip())}".encode()).hexdigest()
        return f'"{digest[:32]}"'

    def read(self, offset: int, length: int) -> bytes:
        """Bytes [offset, offset + length) of the file; length is at most CHUNK_SIZE."""
        length = max(0, min(length, CHUNK_SIZE, self.size - offset))
        start = offset % len(base_clip())
        return _tile()[start : start + length]


def make_ref(seed: str) -> str:
    """A deterministic, well-formed recording reference for `seed` (demo data, tests)."""
    return "RE" + hashlib.md5(seed.encode()).hexdigest()


class ProviderLibrary:
    """Which recordings exist: every well-formed ref, with a size derived from the ref,
    unless it was registered with an explicit size or marked missing."""

    def __init__(self, sizes: Mapping[str, int] | None = None, missing: Iterable[str] = ()):
        self._sizes: dict[str, int] = {}
        self._missing: set[str] = set()
        for ref, size in (sizes or {}).items():
            self.add(ref, size)
        for ref in missing:
            self.mark_missing(ref)

    def add(self, ref: str, size_bytes: int) -> Recording:
        if not REF_PATTERN.match(ref) or size_bytes < 0:
            raise ValueError("a recording needs a ref like RE + 32 hex digits and a size >= 0")
        self._sizes[ref] = size_bytes
        self._missing.discard(ref)
        return Recording(ref, size_bytes)

    def mark_missing(self, ref: str) -> None:
        self._missing.add(ref)
        self._sizes.pop(ref, None)

    def get(self, ref: str) -> Recording | None:
        if ref in self._missing or not REF_PATTERN.match(ref):
            return None
        size = self._sizes.get(ref)
        if size is None:
            clips = MIN_CLIPS + int(ref[2:10], 16) % (MAX_CLIPS - MIN_CLIPS + 1)
            size = clips * len(base_clip())
        return Recording(ref, size)


# --- HTTP ----------------------------------------------------------------------------------


def parse_range(
    value: str, size: int, etag: str, if_range: str | None
) -> tuple[int, int] | Literal["unsatisfiable"] | None:
    """Evaluate Range like a plain web server: (start, end) for a 206, "unsatisfiable" for
    a 416, or None to send the whole file (no/invalid/multiple ranges, stale If-Range)."""
    if if_range is not None and (if_range.startswith("W/") or if_range != etag):
        return None
    unit, _, spec = value.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    match = re.fullmatch(r"\s*([0-9]*)-([0-9]*)\s*", spec)
    if not match or match.group(1) == match.group(2) == "":
        return None
    first, last = match.groups()
    if first == "":
        suffix = int(last)
        if suffix == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - suffix), size - 1
    start = int(first)
    if last != "" and int(last) < start:
        return None
    if start >= size:
        return "unsatisfiable"
    return start, size - 1 if last == "" else min(int(last), size - 1)


def _stream(request: HTTPServerRequest) -> IOStream:
    """The request's connection stream: Tornado types `request.connection` as the abstract
    HTTPConnection (or None), where a served request has an HTTP1Connection."""
    return cast(HTTP1Connection, request.connection).stream


class ProviderHandler(tornado.web.RequestHandler):
    """What both recording resources share: HTTP Basic auth, the account check, Twilio-like
    JSON errors, and a `ProviderRequest` in the stats for every request."""

    def initialize(self, server: ProviderState) -> None:
        self.state = server

    async def _track(self, account: str, ref: str) -> None:
        state = self.state
        record = ProviderRequest(
            self.request.method or "GET",
            ref,
            self.request.headers.get("Range"),
            self.request.headers.get("If-Range"),
        )
        state.stats.requests.append(record)
        state.stats.active += 1
        try:
            if not self._authorized():
                self.set_header("WWW-Authenticate", 'Basic realm="Provider API"')
                return self._json_error(401, 20003, "Authenticate")
            if not hmac.compare_digest(account.encode(), state.account_id.encode()):
                return self._not_found()
            await self._serve(ref, record)
        finally:
            record.status = self.get_status()
            state.stats.active -= 1

    async def _serve(self, ref: str, record: ProviderRequest) -> None:
        raise NotImplementedError

    def _authorized(self) -> bool:
        header = self.request.headers.get("Authorization", "")
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() != "basic":
            return False
        try:
            user, sep, password = base64.b64decode(encoded, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        expected = f"{self.state.account_id}:{self.state.auth_token}".encode()
        return bool(sep) and hmac.compare_digest(f"{user}:{password}".encode(), expected)

    def _json_error(self, status: int, code: int, message: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        more_info = f"https://www.twilio.com/docs/errors/{code}"
        self.finish({"code": code, "message": message, "more_info": more_info, "status": status})

    def _not_found(self) -> None:
        # Twilio-like: the body names the resource path, which the API must never pass on.
        self._json_error(404, 20404, f"The requested resource {self.request.path} was not found")

    def _reset_connection(self) -> None:
        """Abort with a TCP RST, so the client sees a reset rather than a clean close."""
        stream = _stream(self.request)
        if stream.socket is not None:
            stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        stream.close()


class RecordingHandler(ProviderHandler):
    """A recording resource: DELETE removes it, as Twilio's ``DELETE .../Recordings/{Sid}.json``
    does (204; then its media and a second DELETE are 404)."""

    async def delete(self, account: str, ref: str) -> None:
        await self._track(account, ref)

    async def _serve(self, ref: str, record: ProviderRequest) -> None:
        state = self.state
        fault = state.faults.lookup_delete(ref)
        if fault and fault.kind == "stall":
            await state.faults.stall(fault.stall_seconds)
            if _stream(self.request).closed():
                return
        if fault and fault.kind == "reset":
            return self._reset_connection()
        if fault and fault.kind == "500":
            return self._json_error(500, 20500, "Internal Server Error")
        if fault and fault.kind == "503":
            self.set_header("Retry-After", "1")
            return self._json_error(503, 20503, "Service Unavailable")
        if state.library.get(ref) is None:
            return self._not_found()
        state.library.mark_missing(ref)
        self.set_status(204)
        self.finish()
        record.completed = True


class MediaHandler(ProviderHandler):
    """One recording's media, as the telephony provider serves it."""

    def compute_etag(self) -> None:
        return None  # ETags are the recording's, never a hash of a (partial) body

    async def head(self, account: str, ref: str) -> None:
        await self._track(account, ref)

    async def get(self, account: str, ref: str) -> None:
        await self._track(account, ref)

    async def _serve(self, ref: str, record: ProviderRequest) -> None:
        state = self.state
        fault = state.faults.lookup(ref)
        if fault and fault.kind == "stall":
            await state.faults.stall(fault.stall_seconds)
            if _stream(self.request).closed():
                return
        if fault and fault.kind == "500":
            return self._json_error(500, 20500, "Internal Server Error")
        if fault and fault.kind == "404":
            return self._not_found()
        if fault and fault.kind == "html200":
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.finish("<html><body><h1>Service temporarily unavailable</h1></body></html>")
            return
        if fault and fault.kind == "redirect":
            return self.redirect(fault.redirect_to.rstrip("/") + self.request.path)
        recording = state.library.get(ref)
        if recording is None:
            return self._not_found()

        start, end = 0, recording.size - 1
        self.set_header("Content-Type", "audio/mpeg")
        self.set_header("Accept-Ranges", "bytes")
        self.set_header("ETag", recording.etag)
        wanted = self.request.headers.get("Range")
        if wanted is not None and not (fault and fault.kind == "ignore_range"):
            parsed = parse_range(wanted, recording.size, recording.etag, record.if_range)
            if parsed == "unsatisfiable":
                self.set_status(416)
                self.set_header("Content-Range", f"bytes */{recording.size}")
                self.set_header("Content-Type", "application/json")
                self.finish(b'{"code": 20416, "message": "Range Not Satisfiable"}')
                return
            if parsed is not None:
                start, end = parsed
                self.set_status(206)
                self.set_header("Content-Range", f"bytes {start}-{end}/{recording.size}")
        self.set_header("Content-Length", str(end - start + 1))
        if self.request.method == "HEAD":
            return
        stop = end + 1
        if fault and fault.kind == "reset":
            stop = min(stop, start + fault.reset_after)
        try:
            await self.flush()  # headers first, as a real server would
            position = start
            while position < stop:
                piece = recording.read(position, stop - position)
                self.write(piece)
                await self.flush()
                position += len(piece)
                record.bytes_sent += len(piece)
        except StreamClosedError:
            record.aborted = True
            return
        if fault and fault.kind == "reset" and stop <= end:
            self._reset_connection()
            return
        record.completed = True


@dataclass
class ProviderState:
    """What every handler of one provider app shares."""

    account_id: str
    auth_token: str
    library: ProviderLibrary
    faults: ProviderFaults
    stats: ProviderStats
    calls: CallPlacer


def _log_request(handler: tornado.web.RequestHandler) -> None:
    what = f"recording {handler.path_args[1]}" if len(handler.path_args) > 1 else "calls"
    ms = 1000.0 * handler.request.request_time()
    log.debug("%d %s %s %.1fms", handler.get_status(), handler.request.method, what, ms)


def make_provider_app(
    account_id: str,
    auth_token: str,
    library: ProviderLibrary | None = None,
    faults: ProviderFaults | None = None,
    stats: ProviderStats | None = None,
    calls: CallPlacer | None = None,
) -> tornado.web.Application:
    """The provider as a Tornado application; `app.settings["provider"]` holds its state."""
    state = ProviderState(
        account_id,
        auth_token,
        library or ProviderLibrary(),
        faults or ProviderFaults(),
        stats or ProviderStats(),
        calls or CallPlacer(account_id, auth_token),
    )
    recordings = rf"/{API_VERSION}/Accounts/([^/]+)/Recordings/([^/]+)"
    return tornado.web.Application(
        [
            (rf"{recordings}\.mp3", MediaHandler, {"server": state}),
            (rf"{recordings}\.json", RecordingHandler, {"server": state}),
            calls_route(state.calls),
        ],
        log_function=_log_request,
        provider=state,
    )


@dataclass
class ProviderServer:
    """A provider listening on a socket in the current event loop."""

    server: tornado.httpserver.HTTPServer
    host: str
    port: int
    state: ProviderState

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def library(self) -> ProviderLibrary:
        return self.state.library

    @property
    def faults(self) -> ProviderFaults:
        return self.state.faults

    @property
    def stats(self) -> ProviderStats:
        return self.state.stats

    @property
    def calls(self) -> CallPlacer:
        return self.state.calls

    def url_for(self, ref: str) -> str:
        return (
            f"{self.base_url}/{API_VERSION}/Accounts/{self.state.account_id}/Recordings/{ref}.mp3"
        )

    async def stop(self) -> None:
        """Stop listening, release stalled requests and close every open connection."""
        self.server.stop()
        self.state.faults.clear()
        await self.state.calls.stop()
        await self.server.close_all_connections()


async def start_provider(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    account_id: str,
    auth_token: str,
    library: ProviderLibrary | None = None,
    faults: ProviderFaults | None = None,
    stats: ProviderStats | None = None,
    calls: CallPlacer | None = None,
) -> ProviderServer:
    """Start a provider on host:port (0 picks a free port) in the running event loop; `calls`
    places its calls (by default in real time)."""
    app = make_provider_app(account_id, auth_token, library, faults, stats, calls)
    sockets = tornado.netutil.bind_sockets(port, host)
    server = tornado.httpserver.HTTPServer(app)
    server.add_sockets(sockets)
    bound_port = sockets[0].getsockname()[1]
    return ProviderServer(server, host, bound_port, app.settings["provider"])
