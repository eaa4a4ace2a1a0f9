"""The container image: the Containerfile built with podman on a base made from Debian packages,
and the image's own command started from its exported root filesystem with chroot, as the
image's user and with the image's environment (how, and why not `podman run`: tests/container.py).

Marked `image`: it runs on the embedded tier only, since the image serves its own embedded store
and never the store under test. Without podman, debootstrap or root it is skipped locally and
fails when CI is set. The first run builds the base (debootstrap) and installs the dependencies
from PyPI; later runs reuse both (cached in tests/container.py's CACHE).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import container

pytestmark = [pytest.mark.image, pytest.mark.long]


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> Iterator[container.Image]:
    if reason := container.missing():
        if os.environ.get("CI"):
            pytest.fail(f"the container image test cannot run in CI: {reason}")
        pytest.skip(reason)
    log = tmp_path_factory.mktemp("image") / "build.log"
    with container.locked():
        podman = container.Podman()
        base = container.ensure_base(podman, log)
        container.build(podman, base, log)
        with container.mounted(podman, container.IMAGE) as built:
            yield built


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(url: str) -> tuple[int, dict, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


class Served:
    """The image's command running in its root: the process, its origin and its output."""

    def __init__(self, image: container.Image, work: Path):
        self.port = free_port()
        [self.data] = image.config.get("Volumes") or {}
        self.volume = image.volume(self.data, work / "volume")
        self.origin = f"http://127.0.0.1:{self.port}"
        self.log = log = work / "serve.log"
        # The image listens on every address (WSAPI_HOST=0.0.0.0); here, without a network
        # namespace of its own, only on loopback, on a free port.
        self.environ = image.environ(WSAPI_HOST="127.0.0.1", WSAPI_PORT=str(self.port))
        with open(log, "w") as output:
            self.process = subprocess.Popen(
                image.chroot(image.command(), {self.data: self.volume}),
                env=self.environ,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, (
                "the image's command ended:\n" + self.log.read_text()
            )
            try:
                if get(self.origin + "/readyz")[0] == 200:
                    return
            except OSError:
                pass
            assert time.monotonic() < deadline, (
                "/readyz never answered 200:\n" + self.log.read_text()
            )
            time.sleep(0.1)

    def stop(self, image: container.Image) -> int:
        """Stop it as a runtime does (the image's STOPSIGNAL); its exit status."""
        if self.process.poll() is None:
            name = image.config.get("StopSignal") or "SIGTERM"
            self.process.send_signal(signal.Signals[name])
            try:
                return self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)  # the group this test started
                self.process.wait(10)
                raise
        return self.process.returncode


@pytest.fixture
def served(image, tmp_path) -> Iterator[Served]:
    server = Served(image, tmp_path)
    try:
        server.wait_ready()
        yield server
    finally:
        if server.process.poll() is None:
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(10)


def status_ids(pid: int) -> tuple[set[int], set[int], set[int]]:
    """The real/effective/saved uids, gids and supplementary groups of a running process."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return (
        {int(v) for v in fields["Uid"].split()},
        {int(v) for v in fields["Gid"].split()},
        {int(v) for v in fields["Groups"].split()},
    )


def test_the_image_runs_serve_as_a_non_root_user(image, served):
    assert "serve" in image.command()
    uid, gid = image.user()
    assert uid != 0 and gid != 0
    uids, gids, groups = status_ids(served.process.pid)
    assert uids == {uid} and gids == {gid} and 0 not in groups
    status, _, body = get(served.origin + "/readyz")
    assert status == 200 and json.loads(body) == {"status": "ready"}
    assert served.stop(image) == 0, served.log.read_text()


def test_the_data_lives_in_the_volume_owned_by_the_user(image, served):
    # The image's root is mounted read-only: the service writes only to its volume (and /tmp).
    database = Path(image.env["WSAPI_SQLITE_PATH"])
    assert database.parent == Path(served.data)
    info = (served.volume / database.name).stat()
    assert (info.st_uid, info.st_gid) == image.user()
    assert info.st_mode & 0o777 == 0o600


def test_the_image_listens_on_every_address_by_default(image):
    assert image.env["WSAPI_HOST"] == "0.0.0.0"
    assert f"{image.env['WSAPI_PORT']}/tcp" in (image.config.get("ExposedPorts") or {})


def test_the_healthcheck_passes_when_ready_and_fails_without_the_service(image, served):
    def healthcheck(port: int) -> subprocess.CompletedProcess:
        environ = {**served.environ, "WSAPI_PORT": str(port)}
        command = image.chroot(image.healthcheck())
        return subprocess.run(command, env=environ, capture_output=True, text=True, timeout=30)

    ready = healthcheck(served.port)
    assert ready.returncode == 0, ready.stdout + ready.stderr
    assert "/readyz" in ready.stdout
    nobody = healthcheck(free_port())
    assert nobody.returncode == 1, nobody.stdout + nobody.stderr


def test_the_installed_package_serves_the_api_and_its_reference(served):
    # The schemas, templates and static files are package data: a wheel without them fails here.
    status, headers, body = get(served.origin + "/v1/openapi.json")
    assert status == 200 and json.loads(body)["paths"]
    status, headers, body = get(served.origin + "/reference")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    status, headers, body = get(served.origin + "/v1/users")
    assert status == 401 and headers["Content-Type"] == "application/problem+json"
    assert json.loads(body)["code"] == "unauthorized"
