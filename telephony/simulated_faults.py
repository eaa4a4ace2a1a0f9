"""SIMULATED provider's switchable faults and its request log (see simulated_provider).

Tests switch faults on `ProviderFaults`: media faults (`set`) for GET/HEAD of a recording's
.mp3, delete faults (`set_delete`) for DELETE of a recording; each for every ref or for some.
`ProviderStats` records every request the provider received, deletes included.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

FAULT_KINDS = frozenset({"500", "404", "html200", "stall", "reset", "redirect", "ignore_range"})
# DELETE: an error status, no answer until released or stalled out, or a connection reset
# before any answer.
DELETE_FAULT_KINDS = frozenset({"500", "503", "stall", "reset"})


@dataclass
class Fault:
    """One switchable misbehaviour. Options matter only for their own kind."""

    kind: str
    stall_seconds: float = 30.0  # stall: how long no headers are sent
    reset_after: int = 64 * 1024  # reset: body bytes sent before the connection is reset
    redirect_to: str = "http://127.0.0.2:9"  # redirect: another host; the path is kept
    times: int | None = None  # how many requests it still hits (None: until cleared)


class ProviderFaults:
    """The faults in force: one for every ref, and/or one per ref (which wins); media faults
    and delete faults apart."""

    def __init__(self) -> None:
        self._all: Fault | None = None
        self._by_ref: dict[str, Fault] = {}
        self._delete_all: Fault | None = None
        self._delete_by_ref: dict[str, Fault] = {}
        self._release = asyncio.Event()

    def set(self, kind: str, *, refs: Iterable[str] | None = None, **options: object) -> Fault:
        """A fault for GET/HEAD of a recording's media."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; known: {sorted(FAULT_KINDS)}")
        fault = Fault(kind, **options)  # type: ignore[arg-type]
        if refs is None:
            self._all = fault
        else:
            self._by_ref.update(dict.fromkeys(refs, fault))
        return fault

    def set_delete(
        self, kind: str, *, refs: Iterable[str] | None = None, **options: object
    ) -> Fault:
        """A fault for DELETE of a recording: "500" or "503" (a Twilio-like JSON error),
        "stall" (no answer for `stall_seconds` or until `clear`), "reset" (the connection is
        reset before any answer). With `times=N` it hits the next N deletes only."""
        if kind not in DELETE_FAULT_KINDS:
            raise ValueError(f"unknown delete fault {kind!r}; known: {sorted(DELETE_FAULT_KINDS)}")
        fault = Fault(kind, **options)  # type: ignore[arg-type]
        if refs is None:
            self._delete_all = fault
        else:
            self._delete_by_ref.update(dict.fromkeys(refs, fault))
        return fault

    def clear(self) -> None:
        """Switch every fault off and let stalled requests go on at once."""
        self._all = None
        self._by_ref.clear()
        self._delete_all = None
        self._delete_by_ref.clear()
        self._release.set()
        self._release = asyncio.Event()

    def lookup(self, ref: str) -> Fault | None:
        return _spend(self._by_ref.get(ref, self._all))

    def lookup_delete(self, ref: str) -> Fault | None:
        return _spend(self._delete_by_ref.get(ref, self._delete_all))

    async def stall(self, seconds: float) -> None:
        release = self._release
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await release.wait()


def _spend(fault: Fault | None) -> Fault | None:
    """The fault, if it still hits a request (one use of a counted fault is spent)."""
    if fault is None or fault.times is None:
        return fault
    if fault.times <= 0:
        return None
    fault.times -= 1
    return fault


@dataclass
class ProviderRequest:
    """What the provider saw and did for one request."""

    method: str
    ref: str
    range: str | None
    if_range: str | None
    status: int = 0
    bytes_sent: int = 0
    completed: bool = False  # the whole body went out
    aborted: bool = False  # the client went away mid-body


@dataclass
class ProviderStats:
    """Every request the provider received, in order, and how many are still in flight."""

    requests: list[ProviderRequest] = field(default_factory=list)
    active: int = 0

    def reset(self) -> None:
        self.requests.clear()

    def for_ref(self, ref: str) -> list[ProviderRequest]:
        return [r for r in self.requests if r.ref == ref]

    @property
    def deletes(self) -> int:
        """How many DELETE requests arrived (whatever their answer)."""
        return sum(1 for r in self.requests if r.method == "DELETE")

    def deletes_of(self, ref: str) -> list[ProviderRequest]:
        """The DELETE requests for `ref`, in order, each with the status it was answered."""
        return [r for r in self.requests if r.method == "DELETE" and r.ref == ref]

    @property
    def deleted(self) -> list[str]:
        """The refs a DELETE removed (answered 204), in order."""
        return [r.ref for r in self.requests if r.method == "DELETE" and r.status == 204]

    async def wait_idle(self, timeout: float = 5.0) -> None:
        """Wait until no request is in flight (e.g. after a client disconnect)."""
        deadline = time.monotonic() + timeout
        while self.active:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.active} provider request(s) still in flight")
            await asyncio.sleep(0.01)
