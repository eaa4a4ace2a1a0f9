"""Idempotency-Key (draft-ietf-httpapi-idempotency-key-header) for the POSTs that create.

A POST with `Idempotency-Key: <1 to 255 printable ASCII characters>` is safe to retry for 24
hours. The key is claimed in the store before the handler runs (so two requests with one key
never both run: the second gets 409 `idempotency_key_in_use` with Retry-After); the response is
stored before it is sent (a completed status below 500: successes and client errors alike), and
a later request with the same key, method, path and body gets it replayed (status, body and
Location; a problem body names the replaying request's requestId) with
`Idempotent-Replayed: true`, writing nothing. The same key with another method, path or body is
422 `idempotency_key_reused`. A 5xx frees the key, so the retry runs again. Keys belong to the
workspace: another workspace's identical key is unrelated. Records live in the database, so
this holds across processes and hosts.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import hashlib
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from handlers import jsonio
from handlers.base import APIError, APIHandler
from store.clock import utcnow
from store.contract import Idempotency

KEY = re.compile(r"[\x20-\x7e]{1,255}")
TTL = dt.timedelta(hours=24)
LOCK = dt.timedelta(seconds=60)  # a claim whose request died is taken over after this
Handler = Callable[..., Awaitable[None]]  # a handler's method: (self, *path arguments)
JSON_TYPE, PROBLEM_TYPE = "application/json; charset=utf-8", "application/problem+json"


def fingerprint(method: str, path: str, body: object) -> str:
    """What makes two requests the same: method, path and the parsed body (key order and
    whitespace do not matter)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{method}\0{path}\0{canonical}".encode()).hexdigest()


class IdempotentHandler(APIHandler):
    """A handler whose `@idempotent` methods hold their response until it is stored."""

    _holding = False
    _held: tuple[object, int] | None = None

    def send_json(self, value: object, status: int = 200) -> None:
        if self._holding:
            self._held = (value, status)
            return
        super().send_json(value, status)

    def replay(self, record: dict) -> None:
        """Send a stored response again. A problem body gets this request's requestId (as
        every problem names the request it answers, for the logs); all else is as stored."""
        body = record["body"]
        if record["contentType"] == PROBLEM_TYPE:
            body = jsonio.dumps({**json.loads(body), "requestId": self.request_id})
        self.set_status(record["status"])
        self.set_header("Content-Type", record["contentType"])
        self.set_header("Idempotent-Replayed", "true")
        if record.get("location"):
            self.set_header("Location", record["location"])
        self.finish(body)


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
        found = await records.begin(workspace, raw, mark, utcnow(), LOCK, TTL)
        if found is not None:
            if found["fingerprint"] != mark:
                raise APIError(
                    "idempotency_key_reused",
                    "this Idempotency-Key was used for a request with another method, path or body",
                )
            if found["status"] is None:
                raise APIError(
                    "idempotency_key_in_use",
                    "a request with this Idempotency-Key is still being processed",
                    headers={"Retry-After": "1"},
                )
            return self.replay(found)
        self._holding = True
        try:
            await method(self, *args)
        except APIError as exc:
            if exc.status >= 500:
                await _release(records, workspace, raw)
                raise
            body = jsonio.dumps(self.problem_of(exc.code, exc.detail, exc.errors))
            await _complete(records, workspace, raw, exc.status, body, PROBLEM_TYPE, None)
            raise
        except BaseException:
            await _release(records, workspace, raw)
            raise
        finally:
            self._holding = False
        if self._held is None:
            raise RuntimeError(f"{method.__qualname__} is @idempotent but sent no JSON")
        value, status = self._held
        await _complete(
            records,
            workspace,
            raw,
            status,
            jsonio.dumps(value),
            JSON_TYPE,
            self._headers.get("Location"),
        )
        self.send_json(value, status)

    return run


async def _complete(records: Idempotency, workspace: str, key: str, *response: Any) -> None:
    """Store the response; if that fails, free the key (the client sees a 5xx and retries)."""
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
