"""Idempotency-Key (draft-ietf-httpapi-idempotency-key-header) for the POSTs that write.

A POST with `Idempotency-Key: <1 to 255 printable ASCII characters>` is safe to retry for 24
hours, after a crash at any point. The key is claimed in the store before the handler runs (so
two requests with one key never both run: the second gets 409 `idempotency_key_in_use` with
Retry-After). The handler hands its one store write `self.once`, and the store makes the
write idempotent on it (store/idempotency.py): on SQLite the response is stored in the write's
own transaction; on MongoDB the records the write creates take ids derived from the key, so
an attempt after a crash finds them, and the response is stored right after. A later request
with the same key, method, path and body gets the stored response replayed (status, body and
Location; a problem body names the replaying request's requestId) with
`Idempotent-Replayed: true`, writing nothing. Client errors (4xx, which write nothing) are
stored too. The same key with another method, path or body is 422 `idempotency_key_reused`.
A 5xx frees the key, so the retry runs again (and writes once). A claim whose process died is
taken over at once on its host, else after LOCK. Keys belong to the workspace. Records live in
the database, so this holds across processes and hosts.

A POST joins by subclassing IdempotentHandler: decorate the method with `@idempotent`, pass
`once=self.once` to its one store write, send the write's result with `self.answer(result)`,
and define `reply(result)`: the response (status, JSON value, Location) that result gets.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import functools
import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from handlers import jsonio
from handlers.base import APIError, APIHandler
from store.contract import Idempotency
from store.idempotency import IdempotentWrite, Replayed, StoredResponse

KEY = re.compile(r"[\x20-\x7e]{1,255}")
TTL = dt.timedelta(hours=24)
LOCK = dt.timedelta(seconds=60)  # a claim whose request died elsewhere is taken over after this
Handler = Callable[..., Awaitable[None]]  # a handler's method: (self, *path arguments)
JSON_TYPE, PROBLEM_TYPE = "application/json; charset=utf-8", "application/problem+json"


def fingerprint(method: str, path: str, body: object) -> str:
    """What makes two requests the same: method, path and the parsed body (key order and
    whitespace do not matter)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{method}\0{path}\0{canonical}".encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class Reply:
    """A handler's answer to its write's result."""

    status: int
    value: object
    location: str | None = None

    def stored(self) -> StoredResponse:
        return StoredResponse(self.status, jsonio.dumps(self.value), JSON_TYPE, self.location)


class IdempotentHandler(APIHandler):
    """A handler whose `@idempotent` method hands `self.once` to its store write."""

    once: IdempotentWrite | None = None

    def reply(self, result: Any) -> Reply:
        """The response to the write's `result`."""
        raise NotImplementedError

    def answer(self, result: Any) -> None:
        """Send the response to the write's `result`: the one the store stored, when it did."""
        once = self.once
        self.send_stored(once.answer(result) if once else self.reply(result).stored())

    def send_stored(self, response: StoredResponse, replayed: bool = False) -> None:
        self.set_status(response.status)
        self.set_header("Content-Type", response.content_type)
        if response.location:
            self.set_header("Location", response.location)
        if replayed:
            self.set_header("Idempotent-Replayed", "true")
        self.finish(response.body)

    def replay(self, response: StoredResponse) -> None:
        """Send a stored response again. A problem body gets this request's requestId (as
        every problem names the request it answers, for the logs); all else is as stored."""
        if response.content_type == PROBLEM_TYPE:
            body = jsonio.dumps({**json.loads(response.body), "requestId": self.request_id})
            response = dataclasses.replace(response, body=body)
        self.send_stored(response, replayed=True)


def idempotent(method: Handler) -> Handler:
    """Make an IdempotentHandler's POST method honour Idempotency-Key."""

    @functools.wraps(method)
    async def run(self: IdempotentHandler, *args: str) -> None:
        raw = self.request.headers.get("Idempotency-Key")
        if raw is None:
            return await method(self, *args)
        if not KEY.fullmatch(raw):
            raise APIError(
                "invalid_request",
                "Idempotency-Key must be 1 to 255 printable ASCII characters",
                [
                    {
                        "pointer": "#/headers/Idempotency-Key",
                        "detail": "must be 1 to 255 printable ASCII characters",
                    }
                ],
            )
        records, workspace = self.store.idempotency, self.workspace_id
        mark = fingerprint(self.request.method or "", self.request.path, self.body)
        now = self.now()
        state = await records.begin(workspace, raw, mark, now, LOCK, TTL)
        if not state.claimed:
            if state.fingerprint != mark:
                raise APIError(
                    "idempotency_key_reused",
                    "this Idempotency-Key was used for a request with another method, path or body",
                )
            if state.response is None:
                raise APIError(
                    "idempotency_key_in_use",
                    "a request with this Idempotency-Key is still being processed",
                    headers={"Retry-After": "1"},
                )
            return self.replay(state.response)
        once = self.once = IdempotentWrite(
            workspace, raw, mark, state.seed, now + TTL, lambda result: self.reply(result).stored()
        )
        try:
            await method(self, *args)
        except Replayed as exc:  # another attempt stored the response first: nothing written
            return self.replay(exc.response)
        except APIError as exc:
            if exc.status >= 500:
                await _release(records, workspace, raw)
            elif not once.stored:  # a client error, before any write: stored as it is
                body = jsonio.dumps(self.problem_of(exc.code, exc.detail, exc.errors, exc.extra))
                await _complete(records, workspace, raw, exc.status, body, PROBLEM_TYPE, None)
            raise
        except BaseException:
            if not once.stored:
                await _release(records, workspace, raw)
            raise
        if not once.stored:
            raise RuntimeError(
                f"{method.__qualname__} is @idempotent but its store write did not store the "
                "response (pass once=self.once to it)"
            )

    return run


async def _complete(records: Idempotency, workspace: str, key: str, *response: Any) -> None:
    """Store a client error's response; if that fails, free the key (the client sees a 5xx and
    retries)."""
    try:
        await records.complete(workspace, key, *response)
    except BaseException:
        await _release(records, workspace, key)
        raise


async def _release(records: Idempotency, workspace: str, key: str) -> None:
    """Free the key after a failure. If the database fails that too, keep trying in the
    background for as long as the claim's lock lasts (after which it lapses anyway), so that
    the retry of a request that failed because the database dropped finds the key free as soon
    as the database is back; until then it gets 409 with Retry-After."""
    try:
        await records.release(workspace, key)
    except Exception:
        task = asyncio.ensure_future(_release_later(records, workspace, key))
        _pending.add(task)
        task.add_done_callback(_pending.discard)


_pending: set[asyncio.Task] = set()  # background releases (a reference keeps each task alive)


async def _release_later(records: Idempotency, workspace: str, key: str) -> None:
    deadline = asyncio.get_running_loop().time() + LOCK.total_seconds()
    while asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.2)
        with contextlib.suppress(Exception):
            await records.release(workspace, key)
            return
