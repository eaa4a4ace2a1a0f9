"""Helpers that tests import: the HTTP client that checks every response's invariants, seeded
workspaces and calls, a fake clock, page walking, waiting for a value to settle, and a running
demo process. Fixtures live in
tests/conftest.py; this is a plain module."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable

from tornado.httpclient import AsyncHTTPClient, HTTPRequest

from store.records import admin_user_record, user_document

EPOCH = dt.datetime(1970, 1, 1)
MILLISECOND = dt.timedelta(milliseconds=1)
TEST_SECRET = "test-secret-" + "x" * 40


class FakeClock:
    """The clock of tests (store.clock.Clock), handed to the store, the services and the sweeps
    (conftest's `clock` fixture). It follows the real clock until the test moves it:
    `advance(seconds)` jumps ahead (instead of waiting), `freeze()` stops it where it is, and
    `set(seconds since the epoch)` freezes it at an instant. Frozen, it moves only when moved."""

    def __init__(self, at: float | None = None):
        self._offset_ns = 0  # ahead of the real clock by this much
        self._frozen_ns: int | None = None  # the instant it stands at, once frozen
        self._frozen_monotonic = 0.0
        if at is not None:
            self.set(at)

    def time_ns(self) -> int:
        if self._frozen_ns is not None:
            return self._frozen_ns
        return time.time_ns() + self._offset_ns

    def time(self) -> float:
        return self.time_ns() / 1e9

    def now(self) -> dt.datetime:
        return EPOCH + dt.timedelta(milliseconds=self.time_ns() // 1_000_000)

    def monotonic(self) -> float:
        if self._frozen_ns is not None:
            return self._frozen_monotonic
        return time.monotonic() + self._offset_ns / 1e9

    @property
    def frozen(self) -> bool:
        return self._frozen_ns is not None

    def freeze(self) -> FakeClock:
        if self._frozen_ns is None:
            self._frozen_monotonic = self.monotonic()
            self._frozen_ns = self.time_ns()
        return self

    def set(self, at: float | dt.datetime) -> None:
        """Freeze it at `at`: seconds since the epoch (to the microsecond), or an instant as the
        store keeps them; its monotonic time moves as much."""
        self.freeze()
        assert self._frozen_ns is not None
        if isinstance(at, dt.datetime):
            target = (at - EPOCH) // dt.timedelta(microseconds=1) * 1000
        else:
            target = round(at * 1_000_000) * 1000
        self._frozen_monotonic += (target - self._frozen_ns) / 1e9
        self._frozen_ns = target

    def advance(self, seconds: float) -> None:
        step = round(seconds * 1e9)
        if self._frozen_ns is not None:
            self._frozen_ns += step
            self._frozen_monotonic += seconds
        else:
            self._offset_ns += step


# The database of the run (of each test worker) on a database server: the tests that use the
# store fixtures share it (its collections emptied after every test, its indexes kept): building
# the indexes anew was most of a test's set-up there.
SHARED_DATABASE = "wsapi_test_" + os.environ.get("PYTEST_XDIST_WORKER", "main")


def test_environ(*, shared: bool = False, **overrides) -> dict:
    """Configuration for an app under test: this tier's database (MONGODB_URI, set by the suite
    on the wire tier; on the embedded tier a throwaway SQLite file per store) and a fresh
    database name, so each test has its own data; or, with `shared`, SHARED_DATABASE, for a
    configuration that reaches the database through the store fixtures alone (which empty it
    after the test)."""
    environ = {
        "WSAPI_SECRET": TEST_SECRET,
        "WSAPI_DATABASE": SHARED_DATABASE if shared else "wsapi_test_" + uuid.uuid4().hex[:12],
        "MONGODB_URI": os.environ.get("MONGODB_URI", "memory"),
    }
    environ.update(overrides)
    return environ


test_environ.__test__ = False  # a helper, not a test, in the modules that import it


@dataclasses.dataclass
class Workspace:
    id: str
    name: str
    key: str
    key_id: str
    users: list[dict]
    deleted_user: dict


async def make_workspace(store, auth, name: str, users: int = 3) -> Workspace:
    workspace = await store.workspaces.create(name)
    wid = workspace["id"]
    domain = name.lower().replace(" ", "-")  # a workspace's name may hold spaces; a domain not
    now = store.clock.now()
    documents = [  # a millisecond apart (what the stores keep): listed in this order
        user_document(
            wid, f"user{i}@{domain}.example", f"First{i}", f"Last{i}", now + i * MILLISECOND
        )
        for i in range(users + 1)
    ]
    async with store.bulk_load(defer_indexes=False):  # the users are history: no events
        await store.users.insert_documents(wid, documents)
        await store.users.delete(wid, documents[-1]["_id"])
    people = [admin_user_record(doc) for doc in documents]  # as each was created
    record, key = await auth.create(wid, "test key")
    return Workspace(wid, name, key, record["id"], people[:-1], people[-1])


async def add_call(store, workspace, ref: str | None) -> str:
    """A finished, connected call of the workspace with recording `ref` (or none); its id."""
    started = dt.datetime(2026, 11, 2, 9, 30, tzinfo=dt.UTC)
    record = await store.calls.create(
        workspace.id,
        user_id=workspace.users[0]["id"],
        prospect_id=str(uuid.uuid4()),
        direction="outbound",
        disposition="connected",
        from_number="+15550100",
        to_number="+15550199",
        started_at=started,
        answered_at=started,
        ended_at=started + dt.timedelta(minutes=3),
        recording_ref=ref,
        recording_duration_seconds=180 if ref else None,
    )
    return record["id"]


class Response:
    def __init__(self, raw):
        self.raw = raw
        self.code = raw.code
        self.headers = raw.headers
        self.body = raw.body

    def json(self):
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"<Response {self.code} {self.body[:300]!r}>"


DEFAULT = object()


class Client:
    """Talks HTTP to the app on its real port and checks every response's invariants."""

    def __init__(self, origin: str, key: str | None, connections: int | None = None):
        self.origin = origin
        self.key = key
        # Tornado's shared client keeps at most 10 requests in flight; `connections` gives this
        # client its own pool of that many, for tests that need more requests at once.
        self.http = (
            AsyncHTTPClient(force_instance=True, max_clients=connections)
            if connections
            else AsyncHTTPClient()
        )

    async def fetch(
        self,
        path: str,
        method: str = "GET",
        *,
        json_body=DEFAULT,
        body=None,
        headers: dict | None = None,
        key=DEFAULT,
        check: bool = True,
    ) -> Response:
        headers = dict(headers or {})
        key = self.key if key is DEFAULT else key
        if key is not None:
            headers.setdefault("Authorization", f"Bearer {key}")
        if json_body is not DEFAULT:
            body = json.dumps(json_body)
            headers.setdefault("Content-Type", "application/json")
        if body is None and method in ("POST", "PUT", "PATCH"):
            body = b""
        request = HTTPRequest(
            self.origin + path,
            method=method,
            headers=headers,
            body=body,
            allow_nonstandard_methods=True,
            follow_redirects=False,
            request_timeout=60,
        )
        response = Response(await self.http.fetch(request, raise_error=False))
        if check:
            check_invariants(response, method)
        return response

    async def get(self, path: str, **kwargs) -> Response:
        return await self.fetch(path, "GET", **kwargs)

    async def post(self, path: str, json_body=DEFAULT, **kwargs) -> Response:
        return await self.fetch(path, "POST", json_body=json_body, **kwargs)

    async def patch(self, path: str, json_body=DEFAULT, **kwargs) -> Response:
        return await self.fetch(path, "PATCH", json_body=json_body, **kwargs)


def check_invariants(response: Response, method: str) -> None:
    assert response.code != 599, f"connection failed: {response.raw.error}"
    request_id = response.headers.get("X-Request-Id")
    assert request_id, "every response carries X-Request-Id"
    assert response.code < 500 or response.code in (502, 503), response
    content_type = response.headers.get("Content-Type", "")
    if response.code >= 400:
        assert content_type == "application/problem+json", response
        if method != "HEAD":
            problem = response.json()
            assert problem["status"] == response.code
            assert problem["type"] == f"/reference/problems#{problem['code']}"
            assert problem["requestId"] == request_id
            assert problem["title"] and problem["detail"]
            assert "Traceback" not in response.body.decode()
    elif response.code not in (204, 304) and method != "HEAD":
        assert content_type.startswith(
            ("application/json", "application/x-ndjson", "audio/mpeg", "text/html")
        ), response


async def walk_pages(client: Client, path: str, key: str) -> tuple[list[dict], int]:
    """Every record of a paginated path (query allowed), following hasMore; and the total."""
    path = path.rstrip("?&")
    separator = "&" if "?" in path else "?"
    seen, page = [], 1
    while True:
        body = (await client.get(f"{path}{separator}page={page}")).json()
        seen += body[key]
        if not body["hasMore"]:
            return seen, body["total"]
        page += 1


async def follow_events(
    client: Client, path: str = "/v1/events", limit: int = 100_000
) -> tuple[list[dict], dict]:
    """Every event from `path` on, following nextCursor while hasMore; the last body. Fails
    on a non-200 answer and past `limit` events (a loop that never ends)."""
    events: list[dict] = []
    while True:
        response = await client.get(path)
        assert response.code == 200, response
        body = response.json()
        events += body["events"]
        assert len(events) <= limit, "the feed did not end"
        if not body["hasMore"]:
            return events, body
        path = f"/v1/events?cursor={body['nextCursor']}"


@contextlib.contextmanager
def running_demo(tmp_path, *args: str, stdin=subprocess.DEVNULL):
    """A real `workspace-api demo` process on a free port: (process, keys file JSON, log path).
    The keys file is written atomically once the demo serves."""
    keys_file, log = tmp_path / "keys.json", tmp_path / "demo.log"
    with open(log, "w") as output:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cli",
                "demo",
                "--port",
                "0",
                "--keys-file",
                str(keys_file),
                *args,
            ],
            stdin=stdin,
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "MONGODB_URI": "memory"},
        )
    try:
        deadline = time.monotonic() + 60
        while not keys_file.exists():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "demo did not start: " + log.read_text()
            time.sleep(0.1)
        yield process, json.loads(keys_file.read_text()), log
    finally:
        if process.stdin:
            process.stdin.close()
        process.terminate()
        process.wait(10)


@contextlib.contextmanager
def serving(tmp_path, *args: str, env: dict, ready_timeout: float = 60, stop=None):
    """A real `workspace-api serve` process (own process group) on a free port with `env` added
    to the environment: yields (origin, log path) once /readyz answers 200; the group it
    started is stopped afterwards with `stop` (SIGTERM unless given: SIGKILL where how it stops
    is not the point, as after its database was killed, when its graceful stop waits out the
    database timeouts of its background work), then SIGKILL if it has not exited in 15 s."""
    import signal
    import socket
    import urllib.error
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    origin, log = f"http://127.0.0.1:{port}", tmp_path / "serve.log"
    with open(log, "w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve", "--port", str(port), *args],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env},
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            assert process.poll() is None, log.read_text()
            try:
                with urllib.request.urlopen(f"{origin}/readyz", timeout=2) as response:
                    if response.status == 200:
                        break
            except (OSError, urllib.error.URLError):
                pass
            assert time.monotonic() < deadline, "serve did not get ready: " + log.read_text()
            time.sleep(0.1)
        yield origin, log
    finally:
        if process.poll() is None:
            os.killpg(process.pid, stop or signal.SIGTERM)  # the group this helper started
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


async def settled(measure: Callable[[], int], *, quiet: float = 0.5, timeout: float = 10) -> int:
    """The value of `measure()` once it has stopped changing: the same over `quiet` seconds
    and at least ten looks (so one slow turn of the event loop cannot pass for a standstill).
    Fails when it still changes after `timeout` seconds. A bound on what a stalled reader lets
    through is asserted on this value, never after a fixed sleep: on a slow machine broken
    back-pressure could still be on its way up when the sleep ends."""
    deadline = time.monotonic() + timeout
    value, since, looks = measure(), time.monotonic(), 0
    while True:
        await asyncio.sleep(quiet / 10)
        now, current = time.monotonic(), measure()
        if current != value:
            value, since, looks = current, now, 0
        else:
            looks += 1
            if looks >= 10 and now - since >= quiet:
                return value
        assert now < deadline, f"still changing after {timeout} s (at {current})"


def ready_pids(log) -> set[int]:
    """The pids of the `serve` processes whose access log (WSAPI_LOG_LEVEL=info) shows a
    /readyz answered 200 (a last line still being written is left for the next look)."""
    pids = set()
    for text in log.read_text().splitlines():
        try:
            line = json.loads(text) if text.startswith("{") else {}
        except json.JSONDecodeError:
            continue
        if line.get("path") == "/readyz" and line.get("status") == 200:
            pids.add(line["pid"])
    return pids


async def wait_for(
    condition: Callable[[], bool], timeout: float = 20, what: str = "the condition"
) -> None:
    """Poll `condition` until it holds; fail after `timeout` seconds (a poll with a deadline:
    what tests do instead of sleeping before an assertion)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen in {timeout} s"
        await asyncio.sleep(0.05)


async def until(
    condition: Callable[[], Awaitable[object]], timeout: float = 20, what: str = "the condition"
) -> object:
    """Await `condition()` until it is truthy (its value); fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := await condition()):
        assert time.monotonic() < deadline, f"{what} did not happen in {timeout} s"
        await asyncio.sleep(0.1)
    return value


async def insert_in_parts(
    insert: Callable[[str, list[dict]], Awaitable[None]],
    workspace_id: str,
    documents: list[dict],
    part: int = 200,
) -> None:
    """Seed many large documents through `insert` (a store's `insert_documents`) a part at a
    time. One insert of 16 MB is a single database command: on a loaded machine, FerretDB (the
    wire tier) can take longer than the store's 5 s operation limit to answer it."""
    for start in range(0, len(documents), part):
        await insert(workspace_id, documents[start : start + part])
