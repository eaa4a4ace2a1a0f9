"""Idempotency-Key, the store's side, backend-neutral: what a write that answers a key is
handed (`IdempotentWrite`), the state of a key (`KeyState`), and who holds a claim (`HOLDER`).

A POST that takes an Idempotency-Key (handlers/idempotency.py) claims the key first (the
store's `idempotency.begin`), then hands its write an `IdempotentWrite`. The write makes itself
idempotent on it:
- on SQLite it stores the response (`IdempotentWrite.answer` renders it from the write's
  result) in the write's own transaction, after checking that no other attempt stored one first
  (then it raises `Replayed`): the write and its stored response commit together or not at all;
- on MongoDB, without multi-document transactions, every record the write creates takes its
  id from the key (`IdempotentWrite.record_id`), so that an attempt after a crash finds what an
  earlier attempt wrote instead of writing it again, and answers as that attempt would have; the
  response is stored right after the write.
Either way a retry, after any crash at any point, replays the stored response or performs the
write once.

A claim whose request died is taken over after its lock lapses, or at once when the process
that holds it is known to be gone (`holder_gone`: a process of this host that no longer
runs). Taking a claim over keeps its `seed`, so ids derived from the key stay the same; a
claim made anew (first use, or after expiry) draws a new one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any


@dataclasses.dataclass(frozen=True)
class StoredResponse:
    """A response as it is stored and replayed."""

    status: int
    body: str
    content_type: str
    location: str | None = None


@dataclasses.dataclass(frozen=True)
class KeyState:
    """What `idempotency.begin` found: `claimed` when the key is now this request's (its
    `seed` for derived ids); else the record that holds it (`response` None while in
    progress)."""

    claimed: bool
    fingerprint: str
    seed: str
    response: StoredResponse | None = None


class Replayed(Exception):
    """Raised by a write that found its key's response stored by another attempt: nothing was
    written; the response is to be replayed."""

    def __init__(self, response: StoredResponse):
        super().__init__("the key's response is stored already")
        self.response = response


@dataclasses.dataclass
class IdempotentWrite:
    """A write's Idempotency-Key: handed by the handler to the one store write that answers
    it. `render` turns the write's result into the response to store."""

    workspace_id: str
    key: str
    fingerprint: str
    seed: str
    expires_at: dt.datetime
    render: Callable[[Any], StoredResponse]
    response: StoredResponse | None = None  # rendered by the write
    stored: bool = False  # the write has stored it

    def record_id(self, *parts: str) -> str:
        """The id of a record the write creates, the same in every attempt of this request
        (`parts` tell apart several records of one write): a UUID derived from the claim's
        seed."""
        return str(uuid.uuid5(uuid.UUID(self.seed), "\x1f".join(parts)))

    def answer(self, result: Any) -> StoredResponse:
        """The response to the write's `result` (rendered once)."""
        if self.response is None:
            self.response = self.render(result)
        return self.response


def new_seed() -> str:
    return str(uuid.uuid4())


def stale(state: dict, now: dt.datetime, fingerprint: str) -> bool:
    """Whether a claim still in progress may be taken over by the same request's retry: its
    lock has lapsed or its holder is gone, and it was made for the same request (a claim of
    another request stays: its write may have happened, so the key is reused: 422)."""
    if state.get("status") is not None or state["fingerprint"] != fingerprint:
        return False
    return state["lockedUntil"] <= now or not holder_alive(state.get("holder") or "")


def _start_ticks(pid: int) -> str | None:
    """The process's start time (clock ticks since boot), or None when there is no such
    process: with the pid, it names a process once (pids are reused)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


_holder: tuple[int, str] = (0, "")


def this_process() -> str:
    """This process as a claim's holder: host, boot, pid and start time."""
    global _holder
    pid = os.getpid()
    if _holder[0] != pid:  # first use, or a forked child
        _holder = (pid, f"{socket.gethostname()}|{_boot_id()}|{pid}|{_start_ticks(pid) or ''}")
    return _holder[1]


def holder_alive(holder: str) -> bool:
    """False only when `holder` is a process of this host and boot that no longer runs; a
    holder on another host (or one this cannot tell) counts as alive until its lock lapses.
    Mistaking a live holder for a dead one costs nothing but the 409 of a concurrent retry:
    writes are idempotent on the key whoever holds the claim."""
    host, boot, pid, start = ([*holder.split("|"), "", "", "", ""])[:4]
    if not (pid.isdigit() and start) or host != socket.gethostname() or boot != _boot_id():
        return True
    return _start_ticks(int(pid)) == start
