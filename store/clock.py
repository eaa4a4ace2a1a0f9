"""The service's notion of now, injected: the Clock protocol, the system clock every process
uses, and the store's instants (naive UTC datetimes with millisecond precision, BSON's); and its
ids: random ones, and ids derived from a name.

One Clock object is handed to the store, the services and the background sweeps (server.app
open_services and make_app), so a test can pass one fake clock and move it instead of waiting.
What it times: instants that are stored or compared with stored ones (createdAt, updatedAt,
settle horizons, leases, retry schedules, expiry) and the key cache. The pacing of a loop
between its rounds stays on the event loop's own time."""

from __future__ import annotations

import datetime as dt
import hashlib
import time as _time
import uuid
from typing import Protocol

_EPOCH = dt.datetime(1970, 1, 1)
_MILLISECOND = dt.timedelta(milliseconds=1)


def utcnow() -> dt.datetime:
    """The system clock's instant in the store's precision (SystemClock.now)."""
    # The epoch plus whole milliseconds: a third of the time of now(UTC) and two replace()s,
    # and it is called several times per request and per webhook attempt.
    return _EPOCH + _time.time_ns() // 1_000_000 * _MILLISECOND


class Clock(Protocol):
    """Where time comes from."""

    def now(self) -> dt.datetime:
        """The current instant: naive UTC, whole milliseconds."""
        ...

    def time(self) -> float:
        """Seconds since the epoch (the instant of now(), with its fraction)."""
        ...

    def time_ns(self) -> int:
        """Nanoseconds since the epoch (event ids: store/events.py EventClock)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never steps back (durations, caches)."""
        ...


class SystemClock:
    """The real clock (the default everywhere): plain functions, no state."""

    now = staticmethod(utcnow)
    time = staticmethod(_time.time)
    time_ns = staticmethod(_time.time_ns)
    monotonic = staticmethod(_time.monotonic)


SYSTEM_CLOCK: Clock = SystemClock()


def new_id() -> str:
    """A new resource id: a random UUID string."""
    return str(uuid.uuid4())


def name_id(namespace: uuid.UUID, name: str) -> str:
    """str(uuid.uuid5(namespace, name)), made without uuid.UUID objects (an import of history
    makes two per call, webhook fan-out one per delivery)."""
    digest = bytearray(hashlib.sha1(namespace.bytes + name.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 9562 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
