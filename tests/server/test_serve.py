"""`workspace-api serve`: N worker processes on one port, start-up without a database, graceful
shutdown, and the refusals. Real processes, real sockets; each test kills what it started."""

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import jwt
import psutil
import pytest

from server.cli import main
from server.serve import ensure_indexes_when_reachable
from store.errors import StoreError, StoreUnavailable

SECRET = "s" * 40


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str, key: str | None = None, timeout: float = 10) -> tuple[int, dict, dict]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


class Server:
    """`workspace-api serve` in its own session (process group), stopped and reaped at the end."""

    def __init__(self, tmp_path, *args, port: int | None = None, **env):
        self.port = port or free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.log = tmp_path / "serve.log"
        environ = {**os.environ, "WSAPI_SECRET": SECRET, **env}
        with open(self.log, "w") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "server.cli", "serve", "--port", str(self.port), *args],
                stdout=output,
                stderr=subprocess.STDOUT,
                env=environ,
                start_new_session=True,
            )

    def wait_until_up(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, self.log.read_text()
            try:
                if get(f"{self.origin}/healthz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.1)

    def workers(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children()

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)  # the group this test started
        self.process.wait(10)


@pytest.fixture
def servers():
    started = []
    yield started
    for server in started:
        server.stop()


def unreachable_database() -> dict:
    return {"MONGODB_URI": f"mongodb://127.0.0.1:{free_port()}", "WSAPI_DB_TIMEOUT_SECONDS": "0.5"}


def listening_on(process: psutil.Process, port: int) -> bool:
    return any(
        c.status == psutil.CONN_LISTEN and c.laddr.port == port
        for c in process.net_connections(kind="tcp")
    )


def test_processes_are_refused_on_a_throwaway_store(monkeypatch, capsys):
    monkeypatch.setenv("MONGODB_URI", "memory")
    assert main(["serve", "--processes", "2", "--port", str(free_port())]) == 2
    err = capsys.readouterr().err
    assert "--processes > 1 needs a shared store" in err and "throwaway" in err


def test_a_port_in_use_is_a_clear_error():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        done = subprocess.run(
            [sys.executable, "-m", "server.cli", "serve", "--port", str(busy.getsockname()[1])],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "MONGODB_URI": "memory"},
        )
    assert done.returncode == 2
    assert "cannot listen on 127.0.0.1" in done.stderr and "Traceback" not in done.stderr


def test_n_workers_share_one_port_and_answer_503_while_the_database_is_down(tmp_path, servers):
    """Two forked workers on one port, started while MongoDB is unreachable: alive, not ready,
    and the API answers 503 with Retry-After at once instead of hanging. A worker that dies is
    replaced; SIGTERM stops them all."""
    server = Server(tmp_path, "--processes", "2", **unreachable_database())
    servers.append(server)
    server.wait_until_up()
    workers = server.workers()
    assert len(workers) == 2
    assert all(listening_on(worker, server.port) for worker in workers)
    key = jwt.encode({"kid": "k", "wid": "w", "iat": 1}, SECRET, algorithm="HS256")
    for _ in range(6):  # several connections, whichever worker accepts them
        status, headers, body = get(f"{server.origin}/readyz")
        assert status == 503 and headers["Retry-After"] == "5", body
        status, headers, body = get(f"{server.origin}/v1/users", key)
        assert status == 503 and body["code"] == "service_unavailable"
        assert headers["Retry-After"] == "5"
        # Answered from the readiness flag, before any database call could wait on a timeout.
        assert body["detail"] == "the database is not ready yet", body

    workers[0].kill()
    deadline = time.monotonic() + 15
    while {w.pid for w in server.workers()} & {workers[0].pid} or len(server.workers()) < 2:
        assert time.monotonic() < deadline, server.log.read_text()
        time.sleep(0.1)
    assert get(f"{server.origin}/healthz")[0] == 200

    everyone = [psutil.Process(server.process.pid), *server.workers()]
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(15) == 0
    _gone, alive = psutil.wait_procs(everyone, timeout=10)
    assert not alive
    log = server.log.read_text()
    assert log.count('"stopped (pid') == 2 and "restarting it" in log


def test_a_worker_finishes_requests_in_flight_on_sigterm(tmp_path, servers):
    """SIGTERM: new connections are refused at once, a request already being received still gets
    its full answer, then the process exits 0 (what a rolling restart relies on)."""
    server = Server(tmp_path, MONGODB_URI="memory", WSAPI_SHUTDOWN_TIMEOUT_SECONDS="10")
    servers.append(server)
    server.wait_until_up()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        body = b'{"name": "x", "ownerUserId": "00000000-0000-4000-8000-000000000000"}'
        conn.sendall(
            b"POST /v1/lists HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body) + body[:10]
        )
        # The request is in flight (headers read, body incomplete) once a request on a later
        # connection has been answered: one process, one event loop, connections in turn.
        assert get(f"{server.origin}/healthz")[0] == 200
        server.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while True:  # the listening socket goes away; the open connection does not
            try:
                socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
            except ConnectionRefusedError:
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert server.process.poll() is None
        conn.sendall(body[10:])
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 401 "), reply  # a complete answer (no key was sent)
    assert b'"code":"unauthorized"' in reply
    assert server.process.wait(15) == 0


def test_workers_die_with_their_supervisor_and_a_restart_binds_the_port(tmp_path, servers):
    """SIGKILL of the `serve --processes 2` supervisor: its workers get SIGTERM from the kernel
    (their parent-death signal) and stop, and a new `serve` on the same port starts at once."""
    env = {"MONGODB_URI": "", "WSAPI_SQLITE_PATH": str(tmp_path / "db.sqlite3")}
    first = Server(tmp_path, "--processes", "2", **env)
    servers.append(first)
    first.wait_until_up()
    deadline = time.monotonic() + 15
    while len(first.workers()) < 2:
        assert time.monotonic() < deadline, first.log.read_text()
        time.sleep(0.05)
    workers = first.workers()
    first.process.kill()  # the supervisor alone, as the OOM killer or `kill -9` would
    first.process.wait(10)
    _gone, alive = psutil.wait_procs(workers, timeout=15)
    assert not alive, first.log.read_text()
    log = first.log.read_text()
    assert log.count('"stopped (pid') == 2  # each worker shut down gracefully

    (tmp_path / "again").mkdir()
    again = Server(tmp_path / "again", "--processes", "2", port=first.port, **env)
    servers.append(again)
    again.wait_until_up()
    assert get(f"{again.origin}/readyz")[0] == 200
    assert "cannot listen" not in again.log.read_text()


async def test_indexes_are_retried_until_the_database_answers():
    class Flaky:
        indexes_ready = False
        attempts = 0

        async def ensure_indexes(self):
            self.attempts += 1
            if self.attempts <= 2:
                raise StoreUnavailable("down")
            if self.attempts == 3:
                raise StoreError("index conflict")
            self.indexes_ready = True

    store = Flaky()
    await asyncio.wait_for(ensure_indexes_when_reachable(store, delay=0.01), 5)
    assert store.indexes_ready and store.attempts == 4
